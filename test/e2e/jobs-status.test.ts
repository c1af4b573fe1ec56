// `reporting jobs status` (issue 32, item 4): one line a job from its state, and a check a
// scheduler can run (exit 1 beyond --max-lag). The calendar is fixed by REPORTING_NOW, so the lag
// is known to the second; the rows are counted again from the files by csv-parse.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { jobStatus } from '../../src/fleet/status.js';
import type { StateDoc } from '../../src/engine/state.js';

const FILE = ['version: 1', 'defaults:', '  since: auto', '  start: 2026-11-20', '  until: 2026-11-22', '  chunk: day', '  breakdowns: [DAILY]',
  '  state: state/{job}.json', '  output: out/{job}/{since}.csv', '  poll-interval: 20ms', 'jobs:', '  - name: buyer', '    side: buyer', '  - name: seller', '    side: seller', ''].join('\n');

interface Status { job: string; state: string | null; lastDone: { until: string } | null; lagSeconds: number | null; failed: number; toFetch: number | null; lastRun: { windows: number; rows: number; bytes: number } | null; lock: unknown; stale: boolean }

describe('jobs status', () => {
  it('before and after a run: last window done, lag on the calendar, windows to fetch, the last run\'s rows; --max-lag exits 1 naming the stale jobs', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), FILE);
      // the morning of the 23rd, 06:00 Paris: the 22nd ended 6 hours ago
      const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: '2026-11-23T06:00:00' };
      const status = async (extra: string[] = []) => {
        const out = await runCli(['jobs', 'status', '--json', ...extra], { env, cwd: dir });
        return { ...out, jobs: (JSON.parse(out.stdout) as { jobs: Status[] }).jobs };
      };

      const before = await status();
      expect(before.code, before.stderr).toBe(0);
      expect(before.jobs.map((j) => [j.job, j.lastDone, j.lagSeconds, j.toFetch, j.stale])).toEqual([['buyer', null, null, 3, false], ['seller', null, null, 3, false]]);
      const strict = await status(['--max-lag', '12h']);
      expect(strict.code).toBe(1);
      expect(strict.stderr).toContain('2 jobs stale beyond --max-lag 12h: buyer, seller');

      const run = await runCli(['jobs', 'run', 'buyer', '-q'], { env, cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      const after = await status(['--max-lag', '12h']);
      expect(after.code).toBe(1);
      expect(after.stderr).toContain('1 job stale beyond --max-lag 12h: seller');
      const [buyer, seller] = after.jobs as [Status, Status];
      expect(buyer).toMatchObject({ job: 'buyer', lastDone: { until: '2026-11-22T23:59:59+01:00' }, lagSeconds: 6 * 3600, failed: 0, toFetch: 0, lock: null, stale: false });
      const rows = ['2026-11-20', '2026-11-21', '2026-11-22'].map((day) => parse(readFileSync(join(dir, 'out', 'buyer', `${day}.csv`), 'utf8'), { columns: true }).length).reduce((a, b) => a + b, 0);
      const bytes = ['2026-11-20', '2026-11-21', '2026-11-22'].map((day) => readFileSync(join(dir, 'out', 'buyer', `${day}.csv`)).length).reduce((a, b) => a + b, 0);
      expect(buyer.lastRun).toEqual({ at: expect.any(String), windows: 3, rows, bytes });
      expect(seller).toMatchObject({ lastDone: null, toFetch: 3, stale: true });

      // the text form: one tab-separated line a job (not a terminal)
      const text = await runCli(['jobs', 'status'], { env, cwd: dir });
      expect(text.code).toBe(0);
      expect(text.stdout.trim().split('\n').map((line) => line.split('\t').slice(0, 5))).toEqual([['buyer', '2026-11-22 23:59', '6h 0m', '0', '0'], ['seller', 'none', 'never', '0', '3']]);
      expect(text.stdout + text.stderr).not.toContain(sandbox.token);

      // a lag without its unit is seconds, which no schedule means: refused, the unit suggested
      const bare = await runCli(['jobs', 'status', '--max-lag', '36'], { env, cwd: dir });
      expect(bare.code).toBe(2);
      expect(bare.stdout).toBe('');
      expect(bare.stderr).toMatch(/^error: --max-lag must be from 1m to 366d, not "36"\nhint: a number alone is seconds: give its unit, as in 36m, 36h or 36d\n$/);
    });
  });

  it("a state that cannot be read is its job's line (an error, stale under --max-lag), not the end of every job's; a file of several windows counts its bytes once", async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), FILE.replace('  output: out/{job}/{since}.csv', '  output: out/{job}.csv'));
      const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: '2026-11-23T06:00:00' };
      const run = await runCli(['jobs', 'run', '-q'], { env, cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      writeFileSync(join(dir, 'state', 'seller.json'), '{corrupt');
      const out = await runCli(['jobs', 'status', '--json', '--max-lag', '12h'], { env, cwd: dir });
      expect(out.code).toBe(1);
      const [buyer, seller] = (JSON.parse(out.stdout) as { jobs: (Status & { error: string | null })[] }).jobs as [Status & { error: string | null }, Status & { error: string | null }];
      expect(buyer).toMatchObject({ error: null, stale: false, lastRun: { windows: 3, bytes: readFileSync(join(dir, 'out', 'buyer.csv')).length } });
      expect(seller).toMatchObject({ stale: true, error: expect.stringContaining('is not valid JSON') });
      expect(out.stderr).toContain('1 job stale beyond --max-lag 12h: seller');
    });
  });

  it('counts failed windows, and the lock of a run that holds the state', () => {
    const window = (day: string, status: string) => ({ since: `${day}T00:00:00+01:00`, until: `${day}T23:59:59+01:00`, sinceUnix: Date.parse(`${day}T00:00:00+01:00`) / 1000, untilUnix: Date.parse(`${day}T23:59:59+01:00`) / 1000, status, reportId: null, submittedAt: null, attempts: 1, rows: 5, bytes: 100, sha256: null, file: null, finishedAt: '2026-11-23T05:00:00.000Z', error: null });
    const doc = { version: 2, createdAt: '', updatedAt: '', request: {}, planned: { since: '', until: '', sinceUnix: 0, untilUnix: 0, at: '2026-11-23T04:59:00.000Z' }, windows: [window('2026-11-20', 'done'), window('2026-11-21', 'failed'), window('2026-11-22', 'failed')] } as unknown as StateDoc;
    const lock = { path: 's.json.lock', holder: { pid: 7, host: 'pod-3', nonce: 'n', since: '2026-11-23T04:58:00.000Z' }, local: false, stale: false, ageMs: 1000, renewEveryMs: 20_000, expiresAt: Date.parse('2026-11-23T05:01:00.000Z'), seen: '' };
    const status = jobStatus({ job: 'j', profile: 'p', state: 's.json', doc, lock, toFetch: 2, now: Date.parse('2026-11-23T05:00:00.000Z'), maxLagMs: 36 * 3600_000 });
    expect(status).toMatchObject({ failed: 2, lastRun: { windows: 1, rows: 5, bytes: 100 }, lock: { pid: 7, host: 'pod-3', stale: false, expiresAt: '2026-11-23T05:01:00.000Z' }, lagSeconds: 2 * 86_400 + 6 * 3600, stale: true });
  });
});
