#!/usr/bin/env node
// npm run bench:objects: `reporting download ID -o out.csv` against `-o s3://bench/out.csv` to a
// moto S3 server on 127.0.0.1, the same served report body (test/bench/served.mjs) for both, runs
// interleaved, the load average read before each; medians of --runs. The object is read back and
// compared with the local file (sha256) once.
//
//   node test/bench/objects.mjs [--rows 1000000] [--formats csv,parquet] [--runs 3]

import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, measure, startMotoServer } from './lib.mjs';
import { REPORT_ID, bodyFile, serveFile } from './served.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const ROWS = Number(option('rows', '1000000'));
const FORMATS = option('formats', 'csv').split(',');
const RUNS = Number(option('runs', '3'));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => Math.round(bytes / 2 ** 20);
const load = () => loadavg()[0];

const { endpoint, child: moto, s3 } = await startMotoServer('bench');
const { DeleteObjectCommand, GetObjectCommand } = await import('@aws-sdk/client-s3');

/** moto's CPU seconds so far (user + system, from /proc): the server's share of the 2 cores */
const motoCpu = () => {
  const fields = readFileSync(`/proc/${moto.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const work = mkdtempSync(join(tmpdir(), 'reporting-objects-'));
const results = [];
console.log(`${cpus().length} cores, Node ${process.version}; load average at the start ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const file = await bodyFile(ROWS);
const server = await serveFile(file);
const env = {
  ...process.env, REPORTING_CONFIG_DIR: join(work, 'config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 'bench-token',
  AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_ENDPOINT_URL_S3: endpoint, AWS_EC2_METADATA_DISABLED: 'true',
};
const hashOf = (stream) => new Promise((resolve, reject) => {
  const hash = createHash('sha256');
  stream.on('data', (chunk) => hash.update(chunk)).on('error', reject).on('end', () => resolve(hash.digest('hex')));
});
try {
  for (let run = 0; run < RUNS; run++) {
    for (const format of FORMATS) {
      const targets = [['file', join(work, `out.${format}`)], ['s3', `s3://bench/out.${format}`]];
      for (const [name, target] of run % 2 === 0 ? targets : [...targets].reverse()) {
        const before = load();
        const motoBefore = motoCpu();
        // GNU time gives the CLI's own CPU seconds: moto's share of the 2 cores is not the CLI's cost
        const result = await measure('/usr/bin/time', ['-f', 'TIME %U %S %M', process.execPath, BIN, 'download', REPORT_ID, '-o', target, '-q'], { env });
        const [user, system, kb] = (/TIME ([\d.]+) ([\d.]+) (\d+)/.exec(result.stderr) ?? []).slice(1).map(Number);
        // the peak RSS of the CLI itself (GNU time's %M), not of time
        const peak = kb * 1024;
        const server = motoCpu() - motoBefore;
        results.push({ format, name, seconds: result.seconds, cpu: user + system, server, peak, load: before });
        console.log(`${ROWS} ${format} ${name} run ${run + 1}: ${result.seconds.toFixed(2)} s, CPU ${(user + system).toFixed(2)} s, moto CPU ${server.toFixed(2)} s, ${mib(peak)} MiB, load ${before.toFixed(2)}`);
      }
      if (run === 0) {
        const local = await hashOf(createReadStream(join(work, `out.${format}`)));
        const object = await hashOf((await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: `out.${format}` }))).Body);
        console.log(`${format}: the object ${local === object ? 'equals' : 'DIFFERS FROM'} the local file (sha256 ${local})`);
      }
      rmSync(join(work, `out.${format}`), { force: true });
      await s3.send(new DeleteObjectCommand({ Bucket: 'bench', Key: `out.${format}` }));
    }
  }
} finally {
  await server.close();
  moto.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}

console.log(`\n| rows | format | target | wall (median of ${RUNS}) | min-max | CLI CPU user+sys (median) | moto CPU (median) | peak RSS (median) | max | 1-min load before each run |`);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const format of FORMATS) {
  for (const name of ['file', 's3']) {
    const of = results.filter((r) => r.format === format && r.name === name);
    const seconds = of.map((r) => r.seconds);
    const peaks = of.map((r) => r.peak);
    console.log(`| ${ROWS.toLocaleString('en-US')} | ${format} | ${name} | ${median(seconds).toFixed(2)} s | ${Math.min(...seconds).toFixed(2)}-${Math.max(...seconds).toFixed(2)} | ${median(of.map((r) => r.cpu)).toFixed(2)} s | ${median(of.map((r) => r.server)).toFixed(2)} s | ${mib(median(peaks))} MiB (${Math.round(median(peaks) / 1e6)} MB) | ${mib(Math.max(...peaks))} MiB | ${of.map((r) => r.load.toFixed(1)).join(', ')} |`);
  }
  const ratio = median(results.filter((r) => r.format === format && r.name === 's3').map((r) => r.seconds)) / median(results.filter((r) => r.format === format && r.name === 'file').map((r) => r.seconds));
  console.log(`\n${format}: s3 / file wall time (medians) = ${ratio.toFixed(2)}`);
}
