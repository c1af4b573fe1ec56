#!/usr/bin/env node
// npm run bench:load: `reporting run --load` of 1,000,000 rows into DuckDB and into Postgres (a
// throwaway cluster, as the tests start one), against writing the same report to CSV, in one run,
// interleaved, medians of --runs; peak RSS from /proc (VmHWM), the CLI's CPU time (user + system)
// and the sandbox's during the run, the load average before each run.
//
//   node test/bench/load.mjs [--rows 1000000] [--runs 3] [--only 'csv (-o,duckdb (--load']
//
// The sandbox (`reporting sandbox --scale N`) streams N rows for any report: one day of DAILY is
// one window of N rows. Targets (issue 22): DuckDB <= 1.5x the CSV time, Postgres <= 2x, peak RSS
// <= 200 MB each.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, cpuOf, measure, startSandbox } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const ROWS = Number(option('rows', '1000000'));
const RUNS = Number(option('runs', '3'));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => Math.round(bytes / 2 ** 20);
const work = mkdtempSync(join(tmpdir(), 'reporting-load-bench-'));
chmodSync(work, 0o777);

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

const { child: sandbox, info } = await startSandbox(['--scale', String(ROWS), '--delay', '0']);
// --only 'csv (-o,duckdb (--load': the cases whose name contains one of these (case-insensitive);
// the first case left is the reference the others are compared with
const only = option('only', '').toLowerCase().split(',').filter(Boolean);
const postgres = only.length && !only.some((word) => 'postgres (--load postgres://, copy)'.includes(word)) ? undefined : await startPostgres();
const env = { ...process.env, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token, REPORTING_CONFIG_DIR: join(work, 'config') };
const common = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--poll-interval', '50ms', '-q'];
const cases = [
  ['CSV (-o out.csv)', () => [...common, '-o', join(work, 'out.csv')]],
  ['CSV, spooled (--chunk day -o out.csv)', () => [...common, '--chunk', 'day', '-o', join(work, 'out2.csv')]],
  ['DuckDB (--load duckdb:)', (run) => [...common, '--load', `duckdb:${join(work, `w${run}.duckdb`)}`]],
  // the same window into the same file again: its 1M rows replace the first load's (a nightly lookback)
  ['DuckDB, replacing the window (--load duckdb: again)', (run) => [...common, '--load', `duckdb:${join(work, `w${run}.duckdb`)}`]],
  ['CSV, requested columns (--columns requested -o)', () => [...common, '--columns', 'requested', '-o', join(work, 'out3.csv')]],
  ['DuckDB, requested columns (--columns requested --load duckdb:)', (run) => [...common, '--columns', 'requested', '--load', `duckdb:${join(work, `r${run}.duckdb`)}`]],
  ...(postgres ? [['Postgres (--load postgres://, COPY)', () => [...common, '--load', postgres.url, '--table', 'bench']]] : []),
];
if (only.length) cases.splice(0, cases.length, ...cases.filter(([name]) => only.some((word) => name.toLowerCase().includes(word))));
const results = cases.map(() => ({ seconds: [], peak: [], load: [], cpu: [], sandboxCpu: [] }));
console.log(`${cpus().length} cores, Node ${process.version}, ${ROWS.toLocaleString('en-US')} rows, ${RUNS} runs; load average at the start ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [i, [name, argsOf]] of cases.entries()) {
      results[i].load.push(loadavg()[0]);
      const sandboxBefore = cpuOf(sandbox.pid) ?? 0;
      const measured = await measure(process.execPath, [BIN, ...argsOf(run)], { env });
      results[i].seconds.push(measured.seconds);
      results[i].peak.push(measured.peak);
      results[i].cpu.push(measured.cpu);
      results[i].sandboxCpu.push((cpuOf(sandbox.pid) ?? 0) - sandboxBefore);
      console.log(`  run ${run + 1} ${name}: ${measured.seconds.toFixed(2)} s, peak RSS ${mib(measured.peak)} MiB, CPU ${measured.cpu.toFixed(2)} s (sandbox ${results[i].sandboxCpu.at(-1).toFixed(2)} s), load ${results[i].load.at(-1).toFixed(2)}`);
    }
  }
  if (postgres) {
    const count = spawnSync('psql', ['-X', '-A', '-t', '-d', postgres.url, '-c', 'SELECT count(*) FROM bench'], { encoding: 'utf8' }).stdout.trim();
    console.log(`  Postgres table holds ${count} rows (one window replaced on each run)`);
  }
} finally {
  sandbox.kill();
  postgres?.stop();
  rmSync(work, { recursive: true, force: true });
}
const csv = median(results[0].seconds);
console.log('');
console.log(`| destination (${ROWS.toLocaleString('en-US')} rows) | median time | vs CSV | peak RSS (max) | CPU user+sys (median) | sandbox CPU (median) | load average (1 min, median) |`);
console.log('|---|---|---|---|---|---|---|');
cases.forEach(([name], i) => {
  const m = median(results[i].seconds);
  console.log(`| ${name} | ${m.toFixed(2)} s | ${(m / csv).toFixed(2)}x | ${mib(Math.max(...results[i].peak))} MiB | ${median(results[i].cpu).toFixed(2)} s | ${median(results[i].sandboxCpu).toFixed(2)} s | ${median(results[i].load).toFixed(2)} |`);
});
