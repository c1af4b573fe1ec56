#!/usr/bin/env node
// A large job file (issue 30, item 11): `jobs validate`, `jobs list --shard 1/8` and
// `jobs plan --shard 1/8` of N jobs (default 20,000; each a buyer job of 5 day windows with a state
// file and an output per window), median wall time, CPU and peak RSS. The target: validate <= 3 s
// and <= 200 MB. See "A job file of 20,000 jobs" in test/bench/RESULTS.md.
//
//   npm run bench:jobs [-- --jobs 20000 --runs 3 --shape same|mixed]

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, measure } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const JOBS = Number(option('jobs', '20000'));
const RUNS = Number(option('runs', '3'));
const work = mkdtempSync(join(tmpdir(), 'reporting-bench-jobs-'));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ');

// `same` (default): every job one period, a file per day in its own folder. `mixed`: each job its
// own period (30 starts), side and metrics; even jobs write a file per day, odd ones load into one
// of ten DuckDB files with the job as scope: fewer shared values for the caches to find
const SHAPE = option('shape', 'same');
let text;
if (SHAPE === 'mixed') {
  text = 'version: 1\ndefaults:\n  chunk: day\n  state: state/{job}.json\njobs:\n';
  const day = (n) => new Date(Date.UTC(2026, 9, 1 + n)).toISOString().slice(0, 10);
  for (let i = 0; i < JOBS; i++) {
    const side = i % 3 === 0 ? 'seller' : 'buyer';
    const target = i % 2 === 0 ? `    output: out/{job}/{since}.${i % 4 === 0 ? 'csv' : 'ndjson'}\n` : `    load: duckdb:db/w${i % 10}.duckdb\n    scope: '{job}'\n`;
    text += `  - name: job-${i}\n    side: ${side}\n    since: ${day(i % 30)}\n    until: ${day(i % 30 + 4)}\n    breakdowns: [DAILY]\n    metrics: ${side === 'buyer' ? (i % 5 ? 'clicks,displays' : 'clicks') : 'revenueEuro'}\n${target}`;
  }
} else {
  text = 'version: 1\ndefaults:\n  since: 2026-11-01\n  until: 2026-11-05\n  chunk: day\n  state: state/{job}.json\n  output: out/{job}/{since}.csv\njobs:\n';
  for (let i = 0; i < JOBS; i++) text += `  - name: job-${i}\n    side: buyer\n    breakdowns: [DAILY, CAMPAIGN]\n    metrics: clicks,displays\n`;
}
writeFileSync(join(work, 'reporting.yaml'), text);
const env = { ...process.env, REPORTING_CONFIG_DIR: join(work, '.config'), REPORTING_TOKEN: 'x'.repeat(40), REPORTING_BASE_URL: 'http://127.0.0.1:9' };

try {
  console.log(`${JOBS} jobs, shape ${SHAPE} (${(text.length / 1e6).toFixed(1)} MB of YAML), load average before: ${load()}`);
  for (const command of [['validate'], ['list', '--shard', '1/8'], ['plan', '--shard', '1/8', '--json']]) {
    const runs = [];
    for (let run = 0; run < RUNS; run++) {
      runs.push(await measure(process.execPath, [BIN, 'jobs', ...command, '-f', join(work, 'reporting.yaml')], { env: { ...env, PWD: work } }));
    }
    const wall = median(runs.map((r) => r.seconds));
    const cpu = median(runs.map((r) => r.cpu));
    const peak = Math.max(...runs.map((r) => r.peak));
    console.log(`jobs ${command.join(' ').padEnd(24)} ${wall.toFixed(2)} s wall, ${cpu.toFixed(2)} s CPU, peak RSS ${(peak / 1024 / 1024).toFixed(0)} MiB (median of ${RUNS})`);
  }
  console.log(`load average after: ${load()}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
