#!/usr/bin/env node
// npm run bench:fleet (issue 32, item 1): `reporting jobs run -f FILE` of N jobs (N/3 sandbox
// accounts, a profile each with its own REPORTING_TOKEN_<PROFILE>, 3 reports a profile: buyer
// DAILY, seller DAILY, buyer DAILY,CAMPAIGN; one day each) under `concurrency: 30`, against the
// sandbox (in this process, so its ledger can be read) where every report takes exactly 3 s of
// server work (the work model's readyDelayMs, no work per day). The ideal is
// ceil(N / 30) x 3 s: every slot busy with server work, nothing else. Reports the wall time against
// the ideal, the CLI's peak RSS and CPU per job, with the load average beside each run, and where
// the time beyond the ideal went, from the sandbox's ledger (the time the requests arrived):
//
// - noticed: a report's first `ready` status answer after it became ready (the poll's lateness);
//   the first round's apart (the first `concurrency` reports: no report of their kinds seen yet)
// - ready -> download: from that answer to the download request
// - hand-off: from the i-th download request to the (30 + i)-th submit (a slot passed on)
// - polls: status requests a report, and the most in any 100 ms (a burst)
//
// Replaces the "A fleet under one budget" section of test/bench/RESULTS.md unless --no-write.
//
//   npm run bench:fleet [-- --sizes 300,3000 --runs 3 --shape windows|report --no-write]
//
// --shape windows (default): `chunk: day` and `state:` as a nightly fleet runs, one day window a
// job; report: one report a job (no chunk, no state), polled as `run` polls one report.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, measure, root } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const SIZES = option('sizes', '300,3000').split(',').map(Number);
const RUNS = Number(option('runs', '3'));
const SHAPE = option('shape', 'windows');
const CONCURRENCY = Number(option('concurrency', '30'));
const WORK_MS = Number(option('work-ms', '3000'));
// another build's CLI (alternated A/B runs): --bin /path/to/bin/reporting.js
const CLI = option('bin', BIN);
const TARGETS = { 300: { ratio: 1.08, mb: 200 }, 3000: { ratio: 1.10, mb: 250 } };

const { startSandbox } = await import(join(root, 'dist', 'sandbox', 'server.js'));

const lines = [];
const log = (line = '') => { console.log(line); lines.push(line); };
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const quantile = (values, q) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (value) => `${Math.round(value)} ms`;

const REPORTS = [
  { name: 'buyer', side: 'buyer', breakdowns: '[DAILY]' },
  { name: 'seller', side: 'seller', breakdowns: '[DAILY]' },
  { name: 'campaigns', side: 'buyer', breakdowns: '[DAILY, CAMPAIGN]' },
];

function jobFile(profiles) {
  const list = `[${profiles.join(', ')}]`;
  const defaults = SHAPE === 'report'
    ? ['  since: 2026-11-01', '  until: 2026-11-01', '  output: out/{job}.csv']
    : ['  since: 2026-11-01', '  until: 2026-11-01', '  chunk: day', '  state: state/{job}.json', '  output: out/{job}/{since}.csv'];
  return ['version: 1', `concurrency: ${CONCURRENCY}`, 'defaults:', ...defaults, 'jobs:',
    ...REPORTS.flatMap((r) => [`  - name: ${r.name}`, `    side: ${r.side}`, `    breakdowns: ${r.breakdowns}`, `    profiles: ${list}`]), ''].join('\n');
}

/** Where the time went, from the ledger (sandbox clock = real clock here). */
function analyse(reports, startedAt, endedAt) {
  const noticed = [];
  const toDownload = [];
  const polls = [];
  const held = [];
  const submits = [];
  const downloads = [];
  const statusTimes = [];
  for (const report of reports) {
    submits.push(report.submittedAt);
    const statuses = report.events.filter((e) => e.kind === 'status');
    polls.push(statuses.length);
    for (const s of statuses) statusTimes.push(s.at);
    const ready = statuses.find((e) => e.state === 'ready');
    const download = report.events.find((e) => e.kind === 'download');
    if (ready) noticed.push(ready.at - report.doneAt);
    if (ready && download) toDownload.push(download.at - ready.at);
    if (download) downloads.push(download.at);
    if (download) held.push(download.at - report.submittedAt);
  }
  submits.sort((a, b) => a - b);
  downloads.sort((a, b) => a - b);
  const handOff = [];
  for (let i = 0; i + CONCURRENCY < submits.length && i < downloads.length; i++) handOff.push(submits[i + CONCURRENCY] - downloads[i]);
  statusTimes.sort((a, b) => a - b);
  let burst = 0;
  for (let i = 0, j = 0; i < statusTimes.length; i++) {
    while (statusTimes[i] - statusTimes[j] >= 100) j++;
    burst = Math.max(burst, i - j + 1);
  }
  return {
    startMs: (submits[0] ?? startedAt) - startedAt,
    tailMs: endedAt - (downloads.at(-1) ?? endedAt),
    noticed, toDownload, handOff, held, polls, burst, statuses: statusTimes.length,
    firstRound: [...reports].sort((x, y) => x.submittedAt - y.submittedAt).slice(0, CONCURRENCY).flatMap((report) => {
      const ready = report.events.find((e) => e.kind === 'status' && e.state === 'ready');
      return ready ? [ready.at - report.doneAt] : [];
    }),
  };
}

const work = mkdtempSync(join(tmpdir(), 'reporting-bench-fleet-'));
const summary = [];
try {
  log('## A fleet under one budget (`npm run bench:fleet`; issue 32, item 1)');
  log('');
  log(`${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), shared; ${new Date().toISOString().slice(0, 16)} UTC; load average before: ${load()}.`);
  log(`\`jobs run\` of N jobs (N/3 sandbox accounts, a profile and token each; buyer DAILY, seller DAILY, buyer DAILY,CAMPAIGN of one day),`);
  log(`\`concurrency: ${CONCURRENCY}\`, shape \`${SHAPE}\`${SHAPE === 'windows' ? ' (`chunk: day`, `state:`, a CSV a window)' : ' (one report a job, a CSV each)'}; every report ${WORK_MS / 1000} s of server work`);
  log(`(sandbox \`readyDelayMs\`, in the bench's process). Ideal: ceil(N / ${CONCURRENCY}) x ${WORK_MS / 1000} s. Noticed: a report's first \`ready\` answer after it`);
  log('became ready; hand-off: the i-th download request to the (concurrency + i)-th submit; medians (p95; mean) over every report of the run.');
  log('');
  log('| jobs | run | load (1 min) | wall | vs ideal | peak RSS | CPU / job | start | noticed | noticed, first round (median; max) | ready -> download | submit -> download | hand-off | polls / report | status req. in 100 ms (max) | tail |');
  log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const size of SIZES) {
    const accounts = Math.ceil(size / REPORTS.length);
    const profiles = Array.from({ length: accounts }, (_, i) => `p${i + 1}`);
    const ideal = Math.ceil(size / CONCURRENCY) * WORK_MS / 1000;
    const runs = [];
    for (let run = 1; run <= RUNS; run++) {
      const sandbox = await startSandbox({ host: '127.0.0.1', port: 0, accounts, readyDelayMs: WORK_MS });
      const dir = mkdtempSync(join(work, `n${size}-`));
      try {
        writeFileSync(join(dir, 'reporting.yaml'), jobFile(profiles));
        const env = {
          ...process.env, REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, PWD: dir,
          ...Object.fromEntries(profiles.map((profile, i) => [`REPORTING_TOKEN_${profile.toUpperCase()}`, sandbox.accounts[i].token])),
        };
        const loadBefore = loadavg()[0];
        const startedAt = Date.now();
        const result = await measure(process.execPath, [CLI, 'jobs', 'run', '-q', '--json', '-f', join(dir, 'reporting.yaml')], { env, cwd: dir });
        const endedAt = Date.now();
        const outcome = JSON.parse(result.stdout);
        const ok = outcome.jobs.filter((job) => job.exitCode === 0).length;
        if (ok !== size) throw new Error(`${size - ok} of ${size} jobs failed: ${result.stderr.slice(0, 500)}`);
        const reports = sandbox.reports();
        if (reports.length !== size) throw new Error(`the sandbox saw ${reports.length} reports, not ${size}`);
        const a = analyse(reports, startedAt, endedAt);
        const ratio = result.seconds / ideal;
        runs.push({ ratio, seconds: result.seconds, peak: result.peak, cpu: result.cpu });
        const q = (values) => `${ms(median(values))} (${ms(quantile(values, 0.95))}; mean ${ms(values.reduce((x, y) => x + y, 0) / values.length)})`;
        log(`| ${size} | ${run} | ${loadBefore.toFixed(2)} | ${result.seconds.toFixed(1)} s | ${ratio.toFixed(3)}x | ${Math.round(result.peak / 2 ** 20)} MiB | ${(result.cpu / size * 1000).toFixed(1)} ms | ${ms(a.startMs)} | ${q(a.noticed)} | ${ms(median(a.firstRound))}; ${ms(Math.max(...a.firstRound))} | ${q(a.toDownload)} | ${q(a.held)} | ${q(a.handOff)} | ${median(a.polls)} (max ${Math.max(...a.polls)}) | ${a.burst} of ${a.statuses} | ${ms(a.tailMs)} |`);
      } finally {
        await sandbox.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    summary.push({ size, ideal, ratio: median(runs.map((r) => r.ratio)), worst: Math.max(...runs.map((r) => r.ratio)), peak: Math.max(...runs.map((r) => r.peak)), cpu: median(runs.map((r) => r.cpu)) });
  }
  log('');
  for (const s of summary) {
    const target = TARGETS[s.size];
    const met = target ? ` (target <= ${target.ratio}x and <= ${target.mb} MB: ${s.ratio <= target.ratio && s.peak <= target.mb * 1e6 ? 'met' : 'MISSED'})` : '';
    log(`${s.size} jobs: median ${s.ratio.toFixed(3)}x the ideal ${s.ideal} s (worst ${s.worst.toFixed(3)}x), peak RSS ${Math.round(s.peak / 2 ** 20)} MiB, ${(s.cpu / s.size * 1000).toFixed(1)} ms of CPU a job${met}.`);
  }
  log(`Load average after: ${load()}.`);
  log('');
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (!args.includes('--no-write')) {
  const path = join(root, 'test', 'bench', 'RESULTS.md');
  const previous = readFileSync(path, 'utf8');
  const start = previous.indexOf('## A fleet under one budget (');
  const next = start >= 0 ? previous.indexOf('\n## ', start + 1) : -1;
  const section = `${lines.join('\n')}\n`;
  const updated = start < 0 ? `${previous.trimEnd()}\n\n${section}` : `${previous.slice(0, start)}${section}${next >= 0 ? previous.slice(next + 1) : ''}`;
  writeFileSync(path, updated);
  console.log('Written to test/bench/RESULTS.md');
}
