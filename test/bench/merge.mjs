// Summing windows' rows (src/destinations/merge.ts): 1,000,000 rows of the sandbox's full buyer row shape
// (the `--scale` generator, 509 distinct dimension keys, every metric) through the CLI's scanner,
// once into a row counter (the cost of reading alone) and once into the RowSummer a RANGE merge
// uses. Run after `npm run build`: node test/bench/merge.mjs [rows]
import { ReportScanner } from '../../dist/export/scanner.js';
import { RowSummer } from '../../dist/destinations/merge.js';
import { FactSource } from '../../dist/sandbox/facts.js';
import { scaledRowTexts } from '../../dist/sandbox/report.js';
import { DEFAULT_METRICS } from '../../dist/report/catalog.js';

const rows = Number(process.argv[2] ?? 1_000_000);
const query = { side: 'buyer', since: 1793487600, until: 1795215599, metrics: [...DEFAULT_METRICS.buyer], breakdowns: ['RANGE'], filters: {} };

/** the report body in 1 MiB chunks, as a download delivers it */
function* body() {
  let chunk = '{"data":[';
  let first = true;
  for (const text of scaledRowTexts(new FactSource(42), query, rows)) {
    chunk += first ? text : `,${text}`;
    first = false;
    if (chunk.length > 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  yield `${chunk}],"summary":{}}`;
}

function measure(name, handler, after = () => '') {
  const scanner = new ReportScanner(handler);
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (const chunk of body()) scanner.push(chunk);
  scanner.end();
  const extra = after();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  console.log(`| ${name} | ${scanner.rows.toLocaleString('en')} | ${((used.user + used.system) / 1e6).toFixed(1)} s | ${(ms / 1000).toFixed(1)} s | ${extra} |`);
}

// CPU time rather than wall time: the machine is shared, and wall time there says more about the
// neighbours than about this code
console.log('| into | rows | CPU (generating the body included) | wall | notes |');
console.log('|---|---|---|---|---|');
let counted = 0;
measure('a row counter (reading only)', { row() { counted++; } });
const summer = new RowSummer();
measure('RowSummer (RANGE merge)', summer, () => {
  let out = 0;
  const groups = summer.size;
  summer.flush({ row() { out++; } });
  return `${groups} distinct keys, ${out} rows out; peak RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`;
});
