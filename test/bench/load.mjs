#!/usr/bin/env node
// npm run bench:load: `reporting run --load` of 1,000,000 rows into DuckDB and into Postgres (a
// throwaway cluster, as the tests start one), against writing the same report to CSV, in one run,
// interleaved, medians of --runs; peak RSS from /proc (VmHWM), the CLI's CPU time (user + system)
// and the sandbox's during the run, the load average before each run.
//
//   node test/bench/load.mjs [--rows 200000,1000000] [--runs 3] [--only 'csv (-o,duckdb (--load']
//                            [--node PATH] [--write]   (npm run bench -- load: --write)
//
// The sandbox (`reporting sandbox --scale N`) streams N rows for any report: one day of DAILY is
// one window of N rows. Targets (issues 22 and 32): DuckDB <= 1.5x the CSV time and <= 200 MB at
// 200,000 rows and at 1M, Postgres <= 2x, peak RSS <= 200 MB each, with a 5% margin. --write
// replaces the "Loading near CSV" section of test/bench/RESULTS.md.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, cpuOf, measure, startSandbox } from './lib.mjs';
import { writeSection } from './formats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const SIZES = option('rows', '200000,1000000').split(',').map(Number);
const RUNS = Number(option('runs', '3'));
const NODE = option('node', process.execPath);
const MARGIN = 1.05;
const TARGETS = { duckdb: { ratio: 1.5, mb: 200 }, postgres: { ratio: 2, mb: 200 } };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => Math.round(bytes / 2 ** 20);
let work;

const freePort = () => new Promise((resolve) => {
  const server = createServer();
  server.listen(0, '127.0.0.1', () => { const { port } = server.address(); server.close(() => resolve(port)); });
});

function binary(name) {
  for (const dir of ['/usr/local/bin', '/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/bin']) {
    if (existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

async function startPostgres() {
  if (!binary('initdb')) return undefined;
  const root = process.getuid?.() === 0;
  const run = (command, commandArgs) => (root ? execFileSync('runuser', ['-u', 'postgres', '--', command, ...commandArgs], { stdio: 'pipe', cwd: work }) : execFileSync(command, commandArgs, { stdio: 'pipe', cwd: work }));
  const data = join(work, 'pg');
  writeFileSync(join(work, 'pw'), 'bench-pw\n', { mode: 0o644 });
  run(binary('initdb'), ['-D', data, '-U', 'bench', '--pwfile', join(work, 'pw'), '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  run(binary('pg_ctl'), ['-D', data, '-l', join(work, 'pg.log'), '-w', '-o', `-p ${port} -k ${work} -c listen_addresses=127.0.0.1`, 'start']);
  return { url: `postgres://bench:bench-pw@127.0.0.1:${port}/postgres`, stop: () => run(binary('pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']) };
}


const verdict = (ok, withMargin) => (withMargin ? 'met, with 5% margin' : ok ? 'met, WITHOUT 5% margin' : 'MISSED');
const targetOf = (name) => (/^duckdb/i.test(name) ? TARGETS.duckdb : /^postgres/i.test(name) ? TARGETS.postgres : undefined);

/** One size: every case interleaved, RUNS times; answers the table's lines and the verdicts. */
async function measureSize(rows, only, postgres, log) {
  const { child: sandbox, info } = await startSandbox(['--scale', String(rows), '--delay', '0']);
  const env = { ...process.env, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token, REPORTING_CONFIG_DIR: join(work, 'config') };
  const common = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--poll-interval', '50ms', '-q'];
  const cases = [
    ['CSV (-o out.csv)', () => [...common, '-o', join(work, 'out.csv')]],
    ['CSV, spooled (--chunk day -o out.csv)', () => [...common, '--chunk', 'day', '-o', join(work, 'out2.csv')]],
    ['DuckDB (--load duckdb:)', (run) => [...common, '--load', `duckdb:${join(work, `w${rows}-${run}.duckdb`)}`]],
    // the same window into the same file again: its rows replace the first load's (a nightly lookback)
    ['DuckDB, replacing the window (--load duckdb: again)', (run) => [...common, '--load', `duckdb:${join(work, `w${rows}-${run}.duckdb`)}`]],
    ['CSV, requested columns (--columns requested -o)', () => [...common, '--columns', 'requested', '-o', join(work, 'out3.csv')]],
    ['DuckDB, requested columns (--columns requested --load duckdb:)', (run) => [...common, '--columns', 'requested', '--load', `duckdb:${join(work, `r${rows}-${run}.duckdb`)}`]],
    ...(postgres ? [['Postgres (--load postgres://, COPY)', () => [...common, '--load', postgres.url, '--table', `bench${rows}`]]] : []),
  ];
  if (only.length) cases.splice(0, cases.length, ...cases.filter(([name]) => only.some((word) => name.toLowerCase().includes(word))));
  const results = cases.map(() => ({ seconds: [], peak: [], load: [], cpu: [], sandboxCpu: [] }));
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const [i, [name, argsOf]] of cases.entries()) {
        results[i].load.push(loadavg()[0]);
        const sandboxBefore = cpuOf(sandbox.pid) ?? 0;
        const measured = await measure(NODE, [BIN, ...argsOf(run)], { env });
        results[i].seconds.push(measured.seconds);
        results[i].peak.push(measured.peak);
        results[i].cpu.push(measured.cpu);
        results[i].sandboxCpu.push((cpuOf(sandbox.pid) ?? 0) - sandboxBefore);
        console.error(`  ${rows} run ${run + 1} ${name}: ${measured.seconds.toFixed(2)} s, peak RSS ${mib(measured.peak)} MiB, CPU ${measured.cpu.toFixed(2)} s (sandbox ${results[i].sandboxCpu.at(-1).toFixed(2)} s), load ${results[i].load.at(-1).toFixed(2)}`);
      }
    }
    if (postgres) {
      const count = spawnSync('psql', ['-X', '-A', '-t', '-d', postgres.url, '-c', `SELECT count(*) FROM bench${rows}`], { encoding: 'utf8' }).stdout.trim();
      console.error(`  Postgres table holds ${count} rows (one window replaced on each run)`);
    }
  } finally {
    sandbox.kill();
  }
  // ratios run by run (each case against the CSV run of the same round, measured in the same minute)
  log(`| destination (${rows.toLocaleString('en-US')} rows) | median time | vs CSV (median of runs) | per run (vs CSV, load) | peak RSS (max) | CPU user+sys (median) | sandbox CPU (median) |`);
  log('|---|---|---|---|---|---|---|');
  const verdicts = [];
  cases.forEach(([name], i) => {
    const ratios = results[i].seconds.map((s, r) => s / results[0].seconds[r]);
    const ratio = median(ratios);
    const peak = Math.max(...results[i].peak);
    log(`| ${name} | ${median(results[i].seconds).toFixed(2)} s | ${ratio.toFixed(2)}x | ${ratios.map((x, r) => `${x.toFixed(2)}x, load ${results[i].load[r].toFixed(1)}`).join('; ')} | ${mib(peak)} MiB (${Math.round(peak / 1e6)} MB) | ${median(results[i].cpu).toFixed(2)} s | ${median(results[i].sandboxCpu).toFixed(2)} s |`);
    const target = targetOf(name);
    if (target) verdicts.push(`- ${rows.toLocaleString('en-US')} rows, ${name}: ${ratio.toFixed(2)}x the CSV time (target <= ${target.ratio}x: ${verdict(ratio <= target.ratio, ratio * MARGIN <= target.ratio)}), peak ${Math.round(peak / 1e6)} MB (target <= ${target.mb} MB: ${verdict(peak <= target.mb * 1e6, peak * MARGIN <= target.mb * 1e6)}).`);
  });
  log('');
  return verdicts;
}

/** Measures every size; answers the section of RESULTS.md (markdown lines). */
export async function loadBench(sizes = SIZES) {
  work = mkdtempSync(join(tmpdir(), 'reporting-load-bench-'));
  chmodSync(work, 0o777);
  const lines = [];
  const log = (line = '') => { console.log(line); lines.push(line); };
  // --only 'csv (-o,duckdb (--load': the cases whose name contains one of these (case-insensitive);
  // the first case left is the reference the others are compared with
  const only = option('only', '').toLowerCase().split(',').filter(Boolean);
  const postgres = only.length && !only.some((word) => 'postgres (--load postgres://, copy)'.includes(word)) ? undefined : await startPostgres();
  const nodeVersion = NODE === process.execPath ? process.version : (await measure(NODE, ['--version'])).stdout.trim();
  log('## Loading near CSV (`npm run bench -- load`; issues 22 and 32)');
  log('');
  log(`\`reporting run buyer\` of one DAILY window against \`reporting sandbox --scale N\` (every field), each destination in its own process, interleaved, ${RUNS} runs; ${cpus().length} cores, Node ${nodeVersion}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; load average before: ${loadavg().map((l) => l.toFixed(1)).join(', ')}.`);
  log('');
  const verdicts = [];
  try {
    for (const rows of sizes) verdicts.push(...await measureSize(rows, only, postgres, log));
  } finally {
    postgres?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  for (const line of verdicts) log(line);
  log(`- Load average after: ${loadavg().map((l) => l.toFixed(1)).join(', ')}.`);
  log('');
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const section = await loadBench();
  if (args.includes('--write')) writeSection('## Loading near CSV (', section);
}
