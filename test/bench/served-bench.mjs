#!/usr/bin/env node
// npm run bench:served: `reporting download ID -o out.<format>` of a pre-generated report body
// served from disk over loopback (test/bench/served.mjs), so the figures are the CLI's own and not
// the sandbox's generation. Builds are compared run by run, interleaved, with the load average
// recorded before every run; medians of --runs.
//
//   node test/bench/served-bench.mjs [--sizes 1000000,3000000] [--formats csv,parquet] [--runs 5]
//     [--build before=/path/to/bin/reporting.js --build after=bin/reporting.js] [--jq] [--check]
//
// --jq times jq's CSV of the same JSON file at the first size (as test/bench/bench.mjs does);
// --check compares the CSV of every build byte for byte (sha256) at the first size, and reads it
// back with csv-parse, every row against the generated rows.

import { createHash } from 'node:crypto';
import { closeSync, createReadStream, mkdtempSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse';
import { BIN, measure, root } from './lib.mjs';
import { QUERY, REPORT_ID, bodyFile, serveFile } from './served.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const SIZES = option('sizes', '1000000,3000000').split(',').map(Number);
const FORMATS = option('formats', 'csv,parquet').split(',');
const RUNS = Number(option('runs', '5'));
const builds = [];
args.forEach((arg, i) => {
  if (arg !== '--build') return;
  const [name, path] = args[i + 1].split('=');
  builds.push({ name, bin: resolve(path) });
});
if (builds.length === 0) builds.push({ name: 'this', bin: BIN });

const work = mkdtempSync(join(tmpdir(), 'reporting-served-'));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => Math.round(bytes / 2 ** 20);
const load = () => loadavg()[0];

function sha256(file) {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash('sha256');
    createReadStream(file).on('data', (chunk) => hash.update(chunk)).on('error', reject).on('end', () => resolvePromise(hash.digest('hex')));
  });
}

/** Every record of the CSV against the rows the generator makes (its own JSON.parse, not our scanner). */
async function checkCsv(file, rows) {
  const { FactSource } = await import(join(root, 'dist/sandbox/facts.js'));
  const { scaledRowTexts } = await import(join(root, 'dist/sandbox/report.js'));
  const { DEFAULT_METRICS } = await import(join(root, 'dist/report/catalog.js'));
  const expected = scaledRowTexts(new FactSource(42), { ...QUERY, metrics: [...DEFAULT_METRICS.buyer], filters: {} }, rows);
  let header;
  let index = 0;
  for await (const record of createReadStream(file).pipe(parse({ bom: true }))) {
    if (!header) {
      header = record;
      continue;
    }
    const row = JSON.parse(expected.next().value);
    const keys = Object.keys(row);
    if (keys.join() !== header.join()) throw new Error(`row ${index}: columns differ`);
    keys.forEach((key, i) => {
      const want = row[key] === null ? '' : String(row[key]);
      if (record[i] !== want) throw new Error(`row ${index} ${key}: CSV has ${JSON.stringify(record[i])}, served ${JSON.stringify(want)}`);
    });
    index++;
  }
  if (index !== rows) throw new Error(`the CSV has ${index} rows, the report ${rows}`);
  return index;
}

const results = [];
const notes = [];
const started = loadavg();
console.log(`${cpus().length} cores, Node ${process.version}; load average at the start ${started.map((l) => l.toFixed(2)).join(' ')}`);
try {
  for (const rows of SIZES) {
    const file = await bodyFile(rows);
    const jsonBytes = statSync(file).size;
    const server = await serveFile(file);
    const env = { ...process.env, REPORTING_CONFIG_DIR: join(work, 'config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 'bench-token' };
    const checking = args.includes('--check') && rows === SIZES[0] && FORMATS.includes('csv');
    try {
      for (let run = 0; run < RUNS; run++) {
        for (const format of FORMATS) {
          // alternate which build goes first, so that neither always runs after the other
          const order = run % 2 === 0 ? builds : [...builds].reverse();
          for (const build of order) {
            const out = join(work, `${build.name}-${rows}.${format}`);
            const before = load();
            const result = await measure(process.execPath, [build.bin, 'download', REPORT_ID, '-o', out, '-q'], { env });
            results.push({ rows, format, build: build.name, seconds: result.seconds, peak: result.peak, load: before });
            console.log(`${rows} ${format} ${build.name} run ${run + 1}: ${result.seconds.toFixed(2)} s, ${mib(result.peak)} MiB, load ${before.toFixed(2)}`);
            // the first run's CSV is kept for the checks, under a name later runs do not write
            if (checking && format === 'csv' && run === 0) {
              build.checked = join(work, `checked-${build.name}-${rows}.csv`);
              renameSync(out, build.checked);
              build.sha = await sha256(build.checked);
            } else rmSync(out, { force: true });
          }
          if (format === 'csv' && args.includes('--jq') && rows === SIZES[0]) {
            const fd = openSync(join(work, 'jq.csv'), 'w');
            const before = load();
            const jq = await measure('jq', ['-r', '(.data[0] | keys_unsorted) as $k | $k, (.data[] | [.[$k[]]]) | @csv', file], { stdout: fd }).finally(() => closeSync(fd));
            rmSync(join(work, 'jq.csv'), { force: true });
            results.push({ rows, format, build: 'jq', seconds: jq.seconds, peak: jq.peak, load: before });
            console.log(`${rows} jq run ${run + 1}: ${jq.seconds.toFixed(2)} s, ${mib(jq.peak)} MiB, load ${before.toFixed(2)}`);
          }
        }
      }
      if (checking) {
        const hashes = new Set(builds.map((b) => b.sha));
        for (const build of builds) notes.push(`${rows.toLocaleString('en-US')} rows, CSV of ${build.name}: sha256 ${build.sha}`);
        notes.push(hashes.size === 1 ? 'The CSV files are byte for byte identical.' : 'THE CSV FILES DIFFER.');
        for (const build of builds) {
          const checked = await checkCsv(build.checked, rows);
          notes.push(`csv-parse reads ${checked.toLocaleString('en-US')} records from ${build.name}'s CSV, every cell equal to the generated row's value.`);
          rmSync(build.checked, { force: true });
        }
      }
    } finally {
      await server.close();
    }
    notes.push(`${rows.toLocaleString('en-US')} rows: ${Math.round(jsonBytes / 1e6)} MB of JSON served from ${file}.`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const lines = [];
lines.push(`| rows | format | build | wall (median of ${RUNS}) | min-max | peak RSS (median) | max | 1-min load before each run |`);
lines.push('|---|---|---|---|---|---|---|---|');
for (const rows of SIZES) {
  for (const format of FORMATS) {
    for (const build of [...builds.map((b) => b.name), 'jq']) {
      const of = results.filter((r) => r.rows === rows && r.format === format && r.build === build);
      if (of.length === 0) continue;
      const s = of.map((r) => r.seconds);
      const p = of.map((r) => r.peak);
      const l = of.map((r) => r.load);
      lines.push(`| ${rows.toLocaleString('en-US')} | ${build === 'jq' ? 'csv (jq)' : format} | ${build} | ${median(s).toFixed(2)} s | ${Math.min(...s).toFixed(2)}-${Math.max(...s).toFixed(2)} | ${mib(median(p))} MiB (${(median(p) / 1e6).toFixed(0)} MB) | ${mib(Math.max(...p))} MiB | ${l.map((x) => x.toFixed(1)).join(', ')} |`);
    }
  }
  const jq = results.filter((r) => r.rows === rows && r.build === 'jq').map((r) => r.seconds);
  if (jq.length) {
    for (const build of builds) {
      const csv = results.filter((r) => r.rows === rows && r.format === 'csv' && r.build === build.name).map((r) => r.seconds);
      notes.push(`${rows.toLocaleString('en-US')} rows to CSV, ${build.name}: ${(median(csv) / median(jq)).toFixed(3)}x jq's median time.`);
    }
  }
}
console.log('');
console.log(lines.join('\n'));
console.log('');
for (const note of notes) console.log(note);
console.log(`Load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
