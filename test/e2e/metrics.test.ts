// --metrics-file (issue 32, item 5): what a run did, in Prometheus' text format for the textfile
// collector, read back by a parser this project did not write (parse-prometheus-text-format, a port
// of the Python client's parser). The figures are checked against the files (csv-parse, sizes).

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';

interface Family { name: string; help: string; type: string; metrics: { labels?: Record<string, string>; value: string }[] }
const familiesOf = (path: string) => parsePrometheusTextFormat(readFileSync(path, 'utf8')) as Family[];
/** The value of `name` for the series whose labels include `labels`. */
function valueOf(families: Family[], name: string, labels: Record<string, string>): number | undefined {
  const family = families.find((f) => f.name === name);
  const series = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return series ? Number(series.value) : undefined;
}

/** Prometheus' naming conventions: a `reporting_` prefix, `_total` for counters (and only them),
 * `_seconds` for times, help on every family, no `job` or `instance` label (the server's own). */
function checkConventions(families: Family[]): void {
  expect(families.length).toBeGreaterThan(5);
  for (const family of families) {
    expect(family.name).toMatch(/^reporting_[a-z_]+$/);
    expect(family.help.length).toBeGreaterThan(10);
    expect(['gauge', 'counter']).toContain(family.type.toLowerCase());
    expect(family.name.endsWith('_total'), family.name).toBe(family.type.toLowerCase() === 'counter');
    if (/timestamp|duration/.test(family.name)) expect(family.name).toMatch(/_seconds$/);
    for (const series of family.metrics) {
      expect(Object.keys(series.labels ?? {})).not.toContain('job');
      expect(Object.keys(series.labels ?? {})).not.toContain('instance');
    }
  }
}

const DAYS = ['2026-11-01', '2026-11-02', '2026-11-03'];

describe('--metrics-file', () => {
  it('run: windows, rows and bytes as the files hold them; 429s and retries counted across runs; a failed run keeps the last success', async () => {
    await withSandbox({ faults: { errors: [{ status: 429, endpoint: 'status', first: 2, retryAfter: 0 }] } }, async (sandbox, dir) => {
      const metrics = join(dir, 'reporting.prom');
      const args = ['run', 'buyer', '--since', DAYS[0] as string, '--until', DAYS[2] as string, '--breakdowns', 'DAILY,COUNTRY', '--chunk', 'day', '--concurrency', '1',
        '--state', join(dir, 'buyer.state.json'), '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '20ms', '-q', '--metrics-file', metrics];
      const first = await runCli(args, { env: sandboxEnv(sandbox, dir) });
      expect(first.code, first.stderr).toBe(0);
      const families = familiesOf(metrics);
      checkConventions(families);
      const labels = { reporting_job: 'buyer', profile: 'default' };
      const files = DAYS.map((day) => join(dir, 'out', `${day}.csv`));
      const rows = files.map((file) => (parse(readFileSync(file, 'utf8'), { columns: true }) as unknown[]).length).reduce((a, b) => a + b, 0);
      const bytes = files.map((file) => readFileSync(file).length).reduce((a, b) => a + b, 0);
      expect(valueOf(families, 'reporting_last_run_windows', { ...labels, outcome: 'written' })).toBe(3);
      expect(valueOf(families, 'reporting_last_run_windows', { ...labels, outcome: 'failed' })).toBe(0);
      expect(valueOf(families, 'reporting_last_run_rows', labels)).toBe(rows);
      expect(valueOf(families, 'reporting_last_run_bytes', labels)).toBe(bytes);
      expect(valueOf(families, 'reporting_last_run_exit_code', labels)).toBe(0);
      expect(valueOf(families, 'reporting_reports_in_progress', labels)).toBe(0);
      expect(valueOf(families, 'reporting_throttled_total', labels)).toBe(2);
      expect(valueOf(families, 'reporting_retries_total', labels)).toBe(2);
      const success = valueOf(families, 'reporting_last_success_timestamp_seconds', labels) as number;
      expect(Math.abs(success - Date.now() / 1000)).toBeLessThan(30);
      expect(valueOf(families, 'reporting_last_run_timestamp_seconds', labels)).toBe(success);

      // a second run: every window skipped; the counters go on (no new 429)
      const second = await runCli(args, { env: sandboxEnv(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      const again = familiesOf(metrics);
      expect(valueOf(again, 'reporting_last_run_windows', { ...labels, outcome: 'skipped' })).toBe(3);
      expect(valueOf(again, 'reporting_last_run_windows', { ...labels, outcome: 'written' })).toBe(0);
      expect(valueOf(again, 'reporting_throttled_total', labels)).toBe(2);

      // a run that fails (a malformed date: exit 2 before any request is not a run; a server that
      // refuses the token is): the last success is kept, the exit code said
      const failed = await runCli([...args, '--full-refresh'], { env: { ...sandboxEnv(sandbox, dir), REPORTING_TOKEN: 'not-a-token-of-this-sandbox' } });
      expect(failed.code).toBe(3);
      const after = familiesOf(metrics);
      expect(valueOf(after, 'reporting_last_run_exit_code', labels)).toBe(3);
      expect(valueOf(after, 'reporting_last_success_timestamp_seconds', labels)).toBe(valueOf(again, 'reporting_last_success_timestamp_seconds', labels));
      expect(readFileSync(metrics, 'utf8')).not.toContain(sandbox.token);
    });
  });

  it('a merged file, a load into DuckDB, a wait that gave up, a run refused by the lock: the figures the states say', async () => {
    await withSandbox({ readyDelayMs: 30 }, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      const labels = { reporting_job: 'buyer' };
      const period = ['--since', '2026-11-01', '--until', '2026-11-04', '--breakdowns', 'DAILY', '--chunk', 'day', '--poll-interval', '20ms', '-q'];
      // four windows into one file: four windows written, none left in progress
      const merged = await runCli(['run', 'buyer', ...period, '--state', join(dir, 'm.json'), '-o', join(dir, 'merged.csv'), '--metrics-file', join(dir, 'm.prom')], { env });
      expect(merged.code, merged.stderr).toBe(0);
      let families = familiesOf(join(dir, 'm.prom'));
      expect(valueOf(families, 'reporting_last_run_windows', { ...labels, outcome: 'written' })).toBe(4);
      expect(valueOf(families, 'reporting_reports_in_progress', labels)).toBe(0);
      expect(valueOf(families, 'reporting_last_run_bytes', labels)).toBe(readFileSync(join(dir, 'merged.csv')).length);
      expect(valueOf(families, 'reporting_last_run_rows', labels)).toBe((parse(readFileSync(join(dir, 'merged.csv'), 'utf8'), { columns: true }) as unknown[]).length);

      // into DuckDB: the windows loaded and their rows
      const loaded = await runCli(['run', 'buyer', ...period, '--state', join(dir, 'l.json'), '--load', `duckdb:${join(dir, 'w.duckdb')}`, '--metrics-file', join(dir, 'l.prom')], { env });
      expect(loaded.code, loaded.stderr).toBe(0);
      families = familiesOf(join(dir, 'l.prom'));
      expect(valueOf(families, 'reporting_last_run_windows', { ...labels, outcome: 'written' })).toBe(4);
      const state = JSON.parse(readFileSync(join(dir, 'l.json'), 'utf8')) as { windows: { rows: number }[] };
      expect(valueOf(families, 'reporting_last_run_rows', labels)).toBe(state.windows.reduce((sum, w) => sum + w.rows, 0));
    });
    await withSandbox({ readyDelayMs: 60_000 }, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      const labels = { reporting_job: 'buyer' };
      const prom = join(dir, 'w.prom');
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--chunk', 'day', '--poll-interval', '20ms', '-q',
        '--state', join(dir, 'w.json'), '-o', join(dir, 'w-{since}.csv'), '--metrics-file', prom];
      // --max-wait gives up: both reports are kept for the next run, in progress on the server
      const gaveUp = await runCli([...args, '--max-wait', '1s'], { env });
      expect(gaveUp.code).not.toBe(0);
      const families = familiesOf(prom);
      expect(valueOf(families, 'reporting_reports_in_progress', labels)).toBe(2);
      const before = readFileSync(prom, 'utf8');
      // a run refused by another run's lock does not overwrite that run's series
      writeFileSync(join(dir, 'w.json.lock'), JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname(), nonce: 'held', since: new Date().toISOString() }));
      const refused = await runCli(args, { env });
      expect(refused.code).toBe(2);
      expect(readFileSync(prom, 'utf8')).toBe(before);
    });
  });

  it('jobs run: one series a job, labelled reporting_job and profile; a job file cannot set it per job', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), ['version: 1', 'defaults:', `  since: ${DAYS[0]}`, `  until: ${DAYS[1]}`, '  chunk: day', '  breakdowns: [DAILY]',
        '  state: state/{job}.json', '  output: out/{job}/{since}.csv', '  poll-interval: 20ms', 'jobs:', '  - name: buyer', '    side: buyer', '  - name: seller', '    side: seller', ''].join('\n'));
      const out = await runCli(['jobs', 'run', '-q', '--metrics-file', 'night.prom'], { env: sandboxEnv(sandbox, dir), cwd: dir });
      expect(out.code, out.stderr).toBe(0);
      const families = familiesOf(join(dir, 'night.prom'));
      checkConventions(families);
      for (const job of ['buyer', 'seller']) {
        expect(valueOf(families, 'reporting_last_run_windows', { reporting_job: job, profile: 'default', outcome: 'written' })).toBe(2);
        expect(valueOf(families, 'reporting_last_run_exit_code', { reporting_job: job })).toBe(0);
      }
      // the shard of another pod writing the same file later keeps this one's series
      const other = await runCli(['jobs', 'run', 'seller', '-q', '--metrics-file', 'night.prom'], { env: sandboxEnv(sandbox, dir), cwd: dir });
      expect(other.code, other.stderr).toBe(0);
      const both = familiesOf(join(dir, 'night.prom'));
      expect(valueOf(both, 'reporting_last_run_windows', { reporting_job: 'buyer', outcome: 'written' })).toBe(2);
      expect(valueOf(both, 'reporting_last_run_windows', { reporting_job: 'seller', outcome: 'skipped' })).toBe(2);

      writeFileSync(join(dir, 'per-job.yaml'), ['version: 1', 'jobs:', '  - name: b', '    side: buyer', '    since: 2026-11-01', '    until: 2026-11-01', '    metrics-file: b.prom', ''].join('\n'));
      const refused = await runCli(['jobs', 'validate', '-f', 'per-job.yaml'], { env: sandboxEnv(sandbox, dir), cwd: dir });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/metrics-file/);
    });
  });
});
