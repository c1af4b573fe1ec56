// A report body generated once, saved to disk, and served as it is: what `reporting download`
// costs without the sandbox's generation competing for the CPU. The server answers the two
// endpoints `download` calls (status, download), on 127.0.0.1 only.

import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './lib.mjs';

/** The query of test/bench/bench.mjs: buyer, DAILY, the default metrics. */
export const QUERY = { side: 'buyer', since: 1793487600, until: 1795215599, breakdowns: ['DAILY'] };
export const REPORT_ID = 'bench-report-1';

/** `{"data":[...],"summary":{...}}` of `rows` rows of the sandbox's scale generator (seed 42),
 * written once into `dir` and reused by later runs. */
export async function bodyFile(rows, dir = process.env.REPORTING_BENCH_BODIES ?? join(tmpdir(), 'reporting-bench-bodies')) {
  const file = join(dir, `buyer-daily-${rows}.json`);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  const { FactSource } = await import(join(root, 'dist/sandbox/facts.js'));
  const { scaledRowTexts, summaryOf } = await import(join(root, 'dist/sandbox/report.js'));
  const { DEFAULT_METRICS } = await import(join(root, 'dist/report/catalog.js'));
  const query = { ...QUERY, metrics: [...DEFAULT_METRICS.buyer], filters: {} };
  const temp = `${file}.${process.pid}.tmp`;
  const out = createWriteStream(temp);
  let pending = '{"data":[';
  let first = true;
  for (const text of scaledRowTexts(new FactSource(42), query, rows)) {
    pending += first ? text : `,${text}`;
    first = false;
    if (pending.length >= 1 << 20) {
      if (!out.write(pending)) await once(out, 'drain');
      pending = '';
    }
  }
  out.end(`${pending}],"summary":${JSON.stringify(summaryOf(query))}}`);
  await once(out, 'close');
  renameSync(temp, file);
  return file;
}

/** Serves `file` as the body of report REPORT_ID, always ready. Resolves with its base URL and close(). */
export async function serveFile(file) {
  const size = statSync(file).size;
  const server = createServer((req, res) => {
    req.resume();
    if (req.method === 'POST' && req.url === '/status-reporting') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ response: { status: 'ready', message: 'ready', report_id: REPORT_ID } }));
    } else if (req.method === 'POST' && req.url === '/download-reporting') {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': size });
      createReadStream(file).pipe(res);
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ response: { error: `no ${req.method} ${req.url} here` } }));
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  return { baseUrl: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}
