#!/usr/bin/env node
// npm run bench: start-up, conversion at 100k / 1M / 3M rows in five formats (with jq as the
// yardstick when it is installed; Parquet and XLSX side by side with CSV), and polling. Prints one table and writes test/bench/RESULTS.md.
// Sections it does not write are kept. Its parts `formats` (Parquet and XLSX against CSV, formats.mjs) and `load` (--load DuckDB and
// Postgres against CSV, load.mjs) each replace their own section of RESULTS.md, with every target
// of issue 32 beside the load average:
//
//   node test/bench/bench.mjs [--sizes 100000,1000000,3000000] [--runs 31 (start-up)] [--skip-polling] [--skip-formats] [--skip-load]
//   npm run bench -- formats [--sizes 1000000,3000000] [--runs 3] [--node PATH]
//   npm run bench -- load [--rows 200000,1000000] [--runs 3] [--node PATH]
//
// Conversions run the real CLI (`reporting download`) against `reporting sandbox --scale N` over
// loopback, each in its own process; peak RSS is read from /proc/<pid>/status (VmHWM).

import { spawn, spawnSync } from 'node:child_process';
import { closeSync, createReadStream, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import { measure, startSandbox } from './lib.mjs';
import { startup as startupTable } from './startup.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'bin', 'reporting.js');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const SIZES = option('sizes', '100000,1000000,3000000').split(',').map(Number);
const RUNS = Number(option('runs', '31'));
const work = mkdtempSync(join(tmpdir(), 'reporting-bench-'));
const QUERY = { side: 'buyer', since: 1793487600, until: 1795215599, breakdowns: ['DAILY'] };
const lines = [];
const log = (line = '') => { console.log(line); lines.push(line); };


const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => `${Math.round(bytes / 2 ** 20)} MiB`;

async function startup() {
  for (const line of startupTable(RUNS)) log(line);
}

async function submit(info) {
  const body = `since=${QUERY.since}&until=${QUERY.until}&breakdowns[0]=DAILY`;
  const response = await fetch(`${info.baseUrl}/buyer-reporting`, {
    method: 'POST', headers: { Authorization: info.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body,
  });
  return (await response.json()).response.report_id;
}

/** Checks the CSV against rows generated independently by the sandbox's own generator. */
async function checkCsv(file, rows) {
  const { FactSource } = await import(join(root, 'dist/sandbox/facts.js'));
  const { scaledRowTexts } = await import(join(root, 'dist/sandbox/report.js'));
  const { DEFAULT_METRICS } = await import(join(root, 'dist/report/catalog.js'));
  const query = { ...QUERY, metrics: [...DEFAULT_METRICS.buyer], filters: {} };
  const expected = scaledRowTexts(new FactSource(42), query, rows);
  const parser = createReadStream(file).pipe(parse());
  let header;
  let index = -1;
  let checked = 0;
  for await (const record of parser) {
    if (!header) {
      header = record;
      continue;
    }
    index++;
    const text = expected.next().value;
    if (index % 997 !== 0) continue;
    const row = JSON.parse(text);
    const keys = Object.keys(row);
    if (keys.join() !== header.join()) throw new Error(`row ${index}: columns differ`);
    keys.forEach((key, i) => {
      const want = row[key] === null ? '' : String(row[key]);
      if (record[i] !== want) throw new Error(`row ${index} ${key}: CSV has ${JSON.stringify(record[i])}, served ${JSON.stringify(want)}`);
    });
    checked++;
  }
  if (index + 1 !== rows) throw new Error(`the CSV has ${index + 1} rows, the report ${rows}`);
  return checked;
}

/** Rows in a Parquet file, as DuckDB (not our writer) counts them. */
async function parquetRows(file) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const connection = await (await DuckDBInstance.create(':memory:')).connect();
  const [[count]] = (await connection.runAndReadAll(`SELECT count(*) FROM '${file.replace(/'/g, "''")}'`)).getRows();
  return Number(count);
}

async function conversion() {
  const hasJq = spawnSync('jq', ['--version']).status === 0;
  log('## Conversion (`reporting download` from `reporting sandbox --scale N` over loopback)');
  log('');
  log('| rows | format | wall | MB/s of JSON | peak RSS | file | notes |');
  log('|---|---|---|---|---|---|---|');
  const env = { ...process.env, REPORTING_CONFIG_DIR: join(work, 'config') };
  const results = [];
  for (const rows of SIZES) {
    const { child, info } = await startSandbox(['--scale', String(rows), '--delay', '10ms']);
    try {
      const runEnv = { ...env, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token };
      let jsonBytes = 0;
      for (const format of ['json', 'ndjson', 'csv', 'parquet', 'xlsx']) {
        const id = await submit(info);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const out = join(work, `r${rows}.${format}`);
        const run = await measure(process.execPath, [BIN, 'download', id, '-o', out, '-q'], { env: runEnv });
        if (format === 'json') jsonBytes = statSync(out).size;
        const mbps = jsonBytes / 1e6 / run.seconds;
        let notes = '';
        if (format === 'csv' && rows === 1_000_000) {
          const sampled = await checkCsv(out, rows);
          notes = `checked: ${rows} rows, ${sampled} sampled rows equal the served JSON`;
          if (hasJq) {
            // jq itself (not a shell around it), so that its own peak RSS is read
            const fd = openSync(join(work, 'jq.csv'), 'w');
            const jq = await measure('jq', ['-r', '(.data[0] | keys_unsorted) as $k | $k, (.data[] | [.[$k[]]]) | @csv', join(work, `r${rows}.json`)], { stdout: fd }).finally(() => closeSync(fd));
            const ratio = run.seconds / jq.seconds;
            notes += `; jq on the same JSON: ${jq.seconds.toFixed(1)} s, ${mib(jq.peak)} (reporting takes ${ratio.toFixed(2)}x jq's time, target <= 0.5x ${ratio <= 0.5 ? 'met' : 'MISSED'})`;
          } else notes += '; jq not installed: no ratio';
        }
        if (format === 'parquet') notes = `DuckDB reads ${await parquetRows(out)} rows`;
        const size = statSync(out).size;
        if (format !== 'json') rmSync(out);
        results.push({ rows, format, seconds: run.seconds, peak: run.peak });
        log(`| ${rows.toLocaleString('en-US')} | ${format} | ${run.seconds.toFixed(1)} s | ${mbps.toFixed(1)} | ${mib(run.peak)} | ${mib(size)} | ${notes} |`);
      }
      rmSync(join(work, `r${rows}.json`), { force: true });
    } finally {
      child.kill('SIGTERM');
    }
  }
  log('');
  const peaks = results.filter((r) => r.rows >= 1_000_000 && ['json', 'ndjson', 'csv'].includes(r.format)).map((r) => r.peak);
  if (peaks.length) log(`Peak RSS at 1M rows and above (JSON, NDJSON, CSV): at most ${mib(Math.max(...peaks))} (target <= 150 MB: ${Math.max(...peaks) <= 150e6 ? 'met' : 'MISSED'}).`);
  const typed = results.filter((r) => r.rows >= 1_000_000 && ['parquet', 'xlsx'].includes(r.format)).map((r) => r.peak);
  if (typed.length) log(`Peak RSS at 1M rows and above (Parquet, XLSX): at most ${mib(Math.max(...typed))} (target <= 200 MB: ${Math.max(...typed) <= 200e6 ? 'met' : 'MISSED'}).`);
  for (const rows of SIZES) {
    const of = (format) => results.find((r) => r.rows === rows && r.format === format)?.seconds;
    if (of('csv') && of('ndjson') && of('json')) {
      log(`${rows.toLocaleString('en-US')} rows: NDJSON ${(of('ndjson') / of('csv')).toFixed(2)}x and JSON ${(of('json') / of('csv')).toFixed(2)}x the CSV time (target <= 1).`);
    }
    if (of('csv') && of('parquet') && of('xlsx')) {
      const pq = of('parquet') / of('csv');
      const xl = of('xlsx') / of('csv');
      log(`${rows.toLocaleString('en-US')} rows: Parquet ${pq.toFixed(2)}x (target <= 1.5x ${pq <= 1.5 ? 'met' : 'MISSED'}) and XLSX ${xl.toFixed(2)}x (target <= 3x ${xl <= 3 ? 'met' : 'MISSED'}) the CSV time.`);
    }
  }
  log('');
}

async function polling() {
  const { startSandbox: inProcess } = await import(join(root, 'dist/sandbox/server.js'));
  const sandbox = await inProcess({ port: 0, readyDelayMs: 60_000 });
  try {
    const env = { ...process.env, REPORTING_CONFIG_DIR: join(work, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
    await measure(process.execPath, [BIN, 'run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', join(work, 'poll.csv'), '-q'], { env });
    const submitted = sandbox.requests.find((r) => r.endpoint === 'buyer').at;
    const statuses = sandbox.requests.filter((r) => r.endpoint === 'status').length;
    const download = sandbox.requests.find((r) => r.endpoint === 'download').at;
    const late = (download - (submitted + 60_000)) / 1000;
    log('## Polling (a report that becomes ready 60 s after it is submitted)');
    log('');
    log('| status requests | download starts after ready | targets |');
    log('|---|---|---|');
    log(`| ${statuses} | ${late.toFixed(1)} s | <= 12 requests ${statuses <= 12 ? 'met' : 'MISSED'}, within 8 s ${late <= 8 ? 'met' : 'MISSED'} |`);
    log('');
  } finally {
    await sandbox.close();
  }
}

const part = ['formats', 'load'].find((name) => args[0] === name);
if (part === 'formats') {
  const { formats, writeSection } = await import('./formats.mjs');
  writeSection('## Formats near CSV (', await formats());
  process.exit(0);
}
if (part === 'load') {
  const { loadBench } = await import('./load.mjs');
  const { writeSection } = await import('./formats.mjs');
  writeSection('## Loading near CSV (', await loadBench());
  process.exit(0);
}

log('# Benchmark results');
log('');
log(`Machine: ${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; ${new Date().toISOString().slice(0, 10)}; load average at the start ${loadavg().map((l) => l.toFixed(1)).join(', ')}.`);
log('');
try {
  await startup();
  await conversion();
  if (!args.includes('--skip-polling')) await polling();
  log(`Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(', ')}.`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
// every section this run does not write (the choice of libraries, the parts' sections, the
// measurements kept by hand) stays as it is, in its place after this run's own
const OWN = ['## Start-up (median', '## Conversion (', '## Polling ('];
const resultsFile = join(root, 'test', 'bench', 'RESULTS.md');
let kept = '';
try {
  const previous = readFileSync(resultsFile, 'utf8');
  kept = previous.split(/\n(?=## )/).slice(1).filter((section) => !OWN.some((own) => section.startsWith(own))).map((section) => `\n${section}`).join('');
} catch {
  // first run
}
writeFileSync(resultsFile, `${lines.join('\n')}\n${kept}`);
console.log('Written to test/bench/RESULTS.md');
// the formats and load parts replace their own sections (kept above, after the library choice)
if (!args.includes('--skip-formats')) {
  const { formats, writeSection } = await import('./formats.mjs');
  writeSection('## Formats near CSV (', await formats());
}
if (!args.includes('--skip-load')) {
  const { loadBench } = await import('./load.mjs');
  const { writeSection } = await import('./formats.mjs');
  writeSection('## Loading near CSV (', await loadBench());
}
