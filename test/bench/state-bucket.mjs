#!/usr/bin/env node
// npm run bench:state-bucket (issue 31): what a state in a bucket adds to a chunked run. A run of
// 30 day windows (--chunk day, --concurrency 4, -o s3://) against the sandbox (each report 300 ms
// in progress), with `--state FILE` against `--state s3://bench/...` on moto (127.0.0.1), runs
// interleaved, each with a fresh state (every window fetched), the load average read before each;
// medians of --runs. The target: the bucket's state adds at most 10%.
//
//   node test/bench/state-bucket.mjs [--runs 3] [--days 30]

import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, measure, startMotoServer, startSandbox } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const RUNS = Number(option('runs', '3'));
const DAYS = Number(option('days', '30'));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg()[0];

const { endpoint, child: moto, s3 } = await startMotoServer('bench');

const sandbox = await startSandbox(['--delay', '300ms']);
const work = mkdtempSync(join(tmpdir(), 'reporting-state-bucket-'));
const env = {
  ...process.env, REPORTING_CONFIG_DIR: join(work, 'config'), REPORTING_BASE_URL: sandbox.info.baseUrl, REPORTING_TOKEN: sandbox.info.token,
  AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_ENDPOINT_URL_S3: endpoint, AWS_EC2_METADATA_DISABLED: 'true',
};
const until = new Date(Date.UTC(2026, 9, DAYS)).toISOString().slice(0, 10);
const results = { file: [], bucket: [] };
console.log(`${cpus().length} cores, Node ${process.version}; ${DAYS} windows; load average at the start ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
try {
  for (let run = 0; run < RUNS; run++) {
    const kinds = run % 2 === 0 ? ['file', 'bucket'] : ['bucket', 'file'];
    for (const kind of kinds) {
      const state = kind === 'file' ? join(work, `state-${run}.json`) : `s3://bench/state/${run}.json`;
      const before = load();
      const result = await measure(process.execPath, [BIN, 'run', 'buyer', '--since', '2026-10-01', '--until', until, '--breakdowns', 'DAILY', '--chunk', 'day', '--concurrency', '4',
        '--poll-interval', '50ms', '--state', state, '-o', `s3://bench/${kind}-${run}/{since}.csv`, '-q'], { env });
      results[kind].push(result.seconds);
      console.log(`run ${run + 1}, --state ${kind === 'file' ? 'FILE' : 's3://'}: ${result.seconds.toFixed(2)} s, CPU ${result.cpu.toFixed(2)} s, peak RSS ${Math.round(result.peak / 2 ** 20)} MiB, load ${before.toFixed(2)}`);
    }
  }
  const file = median(results.file);
  const bucket = median(results.bucket);
  console.log(`median: --state FILE ${file.toFixed(2)} s, --state s3:// ${bucket.toFixed(2)} s: ${((bucket / file - 1) * 100).toFixed(1)}% more (target <= 10%); load average after ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  sandbox.child.kill();
  moto.kill();
  s3.destroy();
  rmSync(work, { recursive: true, force: true });
}
