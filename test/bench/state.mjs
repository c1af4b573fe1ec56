#!/usr/bin/env node
// npm run bench:state: issue 20, item 5 (what a state file costs a run). Two measurements:
//
// 1. RunState alone, in a child process, making the changes a run makes (every window pending,
//    then submitted and done, 8 windows at a time as the pool runs them): bytes passed to write(2)
//    (`wchar` of /proc/self/io), wall time, size of the final file. A year of hourly windows is
//    8,760 windows.
// 2. `run buyer --breakdowns HOURLY --chunk 1h` against `reporting sandbox --delay 0`, with and
//    without `--state`, interleaved, median wall time; the bytes the run wrote with `--state`
//    minus without (the same outputs) are what the state cost.
//
// Replaces the "State writes" section of test/bench/RESULTS.md.
//
//   node test/bench/state.mjs [--windows 720,8760] [--runs 5] [--run-days 30] [--year-run] [--no-write]

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BIN, measure, root, startSandbox } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const WINDOWS = option('windows', '720,8760').split(',').map(Number);
const RUNS = Number(option('runs', '5'));
const RUN_DAYS = Number(option('run-days', '30'));
const work = mkdtempSync(join(tmpdir(), 'reporting-bench-state-'));
const lines = [];
const log = (line = '') => { console.log(line); lines.push(line); };
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ');
const mb = (bytes) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 1)} MB`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// the changes of a run, in a process of their own so that /proc/self/io counts nothing else
const CHILD = `
const [module, path, count] = process.argv.slice(1);
const { RunState } = await import(module);
const { readFileSync } = await import('node:fs');
const wchar = () => Number(/wchar: (\\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
const host = { pid: process.pid, platform: process.platform, isAlive: () => false, atExit: (f) => { process.on('exit', f); return () => process.off('exit', f); } };
const request = { side: 'buyer', metrics: ['displays', 'clicks'], breakdowns: ['HOURLY'], filters: {}, params: {}, format: 'csv', output: '/data/buyer/{since}.csv', chunk: '1h' };
const first = 1767222000; // 2026-01-01T00:00:00+01:00
const windows = Array.from({ length: Number(count) }, (_, i) => ({ since: first + i * 3600, until: first + i * 3600 + 3599 }));
const before = wchar();
const started = performance.now();
const state = await RunState.open(path, request, { now: Date.now, host });
await state.pending(windows);
let next = 0;
async function worker() {
  while (next < windows.length) {
    const window = windows[next++];
    await state.submitted(window, 'r' + window.since.toString(16));
    await state.done(window, { rows: 24, bytes: 2412, sha256: 'ab'.repeat(32), file: '/data/buyer/' + new Date(window.since * 1000).toISOString().slice(0, 13) + '.csv' });
  }
}
await Promise.all(Array.from({ length: 8 }, worker));
await state.close();
process.stdout.write(JSON.stringify({ bytes: wchar() - before, ms: performance.now() - started }) + '\\n');
`;

function child(bundle, path, count) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', CHILD, bundle, path, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk) => { out += chunk; });
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}`))));
  });
}

/** Runs the CLI; resolves with wall seconds and the bytes it passed to write(2). */
async function run(argv, env) {
  const ioFile = join(work, `io-${Math.random().toString(16).slice(2)}`);
  writeFileSync(ioFile, '');
  const result = await measure(process.execPath, ['--import', join(root, 'test', 'bench', 'io-at-exit.mjs'), BIN, ...argv], { env: { ...env, BENCH_IO_FILE: ioFile } });
  return { seconds: result.seconds, bytes: Number(readFileSync(ioFile, 'utf8').trim()) };
}

try {
  log('## State writes (`node test/bench/state.mjs`; issue 20, item 5)');
  log('');
  log(`${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), shared; load average before: ${load()}.`);
  log('');
  const bundle = join(work, 'state.mjs');
  await build({
    entryPoints: [join(root, 'src', 'jobs', 'state.ts')], outfile: bundle, bundle: true, format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning',
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  });
  log('RunState alone: every window pending, then submitted and done, 8 windows at a time (hourly windows, a file each):');
  log('');
  log('| windows | bytes written | per window | final file | wall |');
  log('|---|---|---|---|---|');
  for (const count of WINDOWS) {
    const path = join(work, `direct-${count}.json`);
    const { bytes, ms } = await child(bundle, path, count);
    log(`| ${count.toLocaleString('en-US')} | ${mb(bytes)} | ${Math.round(bytes / count).toLocaleString('en-US')} B | ${mb(statSync(path).size)} | ${(ms / 1000).toFixed(1)} s |`);
  }
  log('');
  log(`Load average after: ${load()}.`);
  log('');

  const { child: sandbox, info } = await startSandbox(['--delay', '0']);
  const env = { ...process.env, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token, REPORTING_CONFIG_DIR: join(work, 'config') };
  const until = new Date(Date.UTC(2026, 0, RUN_DAYS)).toISOString().slice(0, 10);
  const request = ['run', 'buyer', '--since', '2026-01-01', '--until', until, '--breakdowns', 'HOURLY', '--chunk', '1h', '--concurrency', '16', '-q'];
  try {
    log(`\`run buyer --since 2026-01-01 --until ${until} --breakdowns HOURLY --chunk 1h --concurrency 16 -o FILE\` (${RUN_DAYS * 24} windows), sandbox \`--delay 0\`, ${RUNS} runs each, interleaved; load average before: ${load()}.`);
    log('');
    const plain = [];
    const stated = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await run([...request, '-o', join(work, `plain-${i}.csv`)], env));
      stated.push(await run([...request, '-o', join(work, `stated-${i}.csv`), '--state', join(work, `stated-${i}.json`)], env));
    }
    const without = median(plain.map((r) => r.seconds));
    const withState = median(stated.map((r) => r.seconds));
    const stateBytes = median(stated.map((r) => r.bytes)) - median(plain.map((r) => r.bytes));
    log('| run | median wall | runs (s) | bytes written (median) | bytes written per run |');
    const each = (runs) => runs.map((r) => mb(r.bytes)).join(', ');
    log('|---|---|---|---|---|');
    log(`| without --state | ${without.toFixed(2)} s | ${plain.map((r) => r.seconds.toFixed(2)).join(', ')} | ${mb(median(plain.map((r) => r.bytes)))} | ${each(plain)} |`);
    log(`| with --state | ${withState.toFixed(2)} s | ${stated.map((r) => r.seconds.toFixed(2)).join(', ')} | ${mb(median(stated.map((r) => r.bytes)))} | ${each(stated)} |`);
    log('');
    log(`With --state: ${(withState / without).toFixed(2)}x the run without (target <= 1.10x: ${withState <= without * 1.1 ? 'met' : 'MISSED'}); the state cost ${mb(stateBytes)} of writes (final file ${mb(statSync(join(work, 'stated-0.json')).size)}).`);
    if (args.includes('--year-run')) {
      const year = ['run', 'buyer', '--since', '2025-01-01', '--until', '2025-12-31', '--breakdowns', 'HOURLY', '--chunk', '1h', '--concurrency', '16', '-q'];
      const a = await run([...year, '-o', join(work, 'year-plain.csv')], env);
      const b = await run([...year, '-o', join(work, 'year-stated.csv'), '--state', join(work, 'year.json')], env);
      log('');
      log(`A year (\`--until 2025-12-31\`, 8,760 windows), once each: ${a.seconds.toFixed(1)} s without --state, ${b.seconds.toFixed(1)} s with it; ` +
        `the state cost ${mb(b.bytes - a.bytes)} of writes (final file ${mb(statSync(join(work, 'year.json')).size)}).`);
    }
    log(`Load average after: ${load()}.`);
    log('');
  } finally {
    sandbox.kill();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (!args.includes('--no-write')) {
  const path = join(root, 'test', 'bench', 'RESULTS.md');
  const previous = readFileSync(path, 'utf8');
  const start = previous.indexOf('## State writes');
  const next = start >= 0 ? previous.indexOf('\n## ', start + 1) : -1;
  const section = `${lines.join('\n')}\n`;
  const updated = start < 0 ? `${previous.trimEnd()}\n\n${section}` : `${previous.slice(0, start)}${section}${next >= 0 ? previous.slice(next + 1) : ''}`;
  writeFileSync(path, updated);
  console.log('Written to test/bench/RESULTS.md');
}
