// Recurring runs (issue 14) through the CLI: --state, resume by report ID after a SIGKILL, a stale
// report ID resubmitted, one run per state file, --since auto with --lookback against numbers that
// still move, the journal of runs without a state file, and --log-format json.

import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { runCli as runInProcess } from '../../src/cli/program.js';
import { readState } from '../../src/engine/state.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { call, withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

const PARIS = 'Europe/Paris';
const DAY_MS = 86_400_000;
const LONG_AGO = new Date('2026-01-01T00:00:00Z');
const env = (sandbox: Sandbox, dir: string) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
});
const dayOf = (unix: number) => DateTime.fromSeconds(unix, { zone: PARIS }).toISODate();

interface LogLine {
  v: number;
  ts: string;
  event: string;
  window: { since: string; until: string; sinceUnix: number; untilUnix: number };
  reportId?: string;
  message?: string;
  source?: string;
  replaces?: string;
  file?: string;
  rows?: number;
  sha256?: string;
}
/** Every stderr line is a JSON object of the documented shape (the test fails otherwise). */
function logLines(stderr: string): LogLine[] {
  return stderr.split('\n').filter(Boolean).map((line) => {
    const parsed = JSON.parse(line) as LogLine;
    expect(parsed.v).toBe(1);
    expect(Number.isNaN(Date.parse(parsed.ts))).toBe(false);
    if (parsed.event !== 'error') expect(typeof parsed.window.sinceUnix).toBe('number');
    return parsed;
  });
}
const eventsOf = (lines: LogLine[], name: string) => lines.filter((line) => line.event === name).map((line) => line.window.since.slice(0, 10));

interface StateFile { version: number; request: { output: string | null }; windows: { since: string; until: string; status: string; error: string | null; reportId: string | null; attempts: number; sha256: string | null; file: string | null; rows: number | null; unchanged?: boolean }[] }
const readStateFile = (path: string): StateFile | undefined => {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as StateFile;
  } catch {
    return undefined;
  }
};

describe('--log-format json -v', () => {
  it('the trace lines are JSON too (event trace), every line parses, and no token is in them', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const out = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--poll-interval', '20ms', '-v', '--log-format', 'json', '-o', join(dir, 'day.csv')], { env: env(sandbox, dir) });
      expect(out.code, out.stderr).toBe(0);
      const lines = out.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { event: string; message?: string });
      const traces = lines.filter((line) => line.event === 'trace');
      expect(traces.length).toBeGreaterThan(3);
      expect(traces.some((line) => /POST \/buyer-reporting/.test(line.message ?? ''))).toBe(true);
      expect(out.stderr).not.toContain(sandbox.token);
    });
  });
});

describe('--lock-wait', () => {
  it('a second run on one state file waits for the first, then finds every window done: exit 0, nothing submitted twice; without it, exit 2', async () => {
    await withSandbox({ readyDelayMs: 600 }, async (sandbox, dir) => {
      const state = join(dir, 'buyer.state.json');
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--chunk', 'day', '--concurrency', '1',
        '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '50ms', '-q'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      await until(() => existsSync(`${state}.lock`), 'the first run holding the lock');
      const refused = await runCli(args, { env: env(sandbox, dir) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/is in use by process \d+/);
      const waiting = await runCli([...args, '--lock-wait', '30s', '--log-format', 'json'], { env: env(sandbox, dir) });
      expect((await firstDone).code).toBe(0);
      expect(waiting.code, waiting.stderr).toBe(0);
      const lines = logLines(waiting.stderr);
      expect(eventsOf(lines, 'skipped')).toEqual(['2026-11-01', '2026-11-02']);
      expect(eventsOf(lines, 'submitted')).toEqual([]);
      expect(sandbox.reports().map((r) => dayOf(r.since))).toEqual(['2026-11-01', '2026-11-02']);
      // Ctrl-C's SIGTERM while waiting: interrupted (143), not refused (2)
      writeFileSync(`${state}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'held', since: new Date().toISOString() }));
      const waiter = startCli([...args, '--lock-wait', '1m', '--log-format', 'json'], { env: env(sandbox, dir) });
      const waited = collect(waiter);
      // stopped once it says it waits (a JSON log line), not on a timer
      let heard = '';
      waiter.stderr?.on('data', (chunk: Buffer) => { heard += chunk.toString(); });
      await until(() => heard.includes('"event":"warning"'), 'the waiter saying it waits');
      waiter.kill('SIGTERM');
      const stopped = await waited;
      expect(stopped.code, stopped.stderr).toBe(143);
      expect(stopped.stderr).toContain('interrupted (SIGTERM)');
      // the wait was said as it began (-q or not, a JSON log has every event)
      const said = logLines(stopped.stderr).filter((line) => line.event === 'warning').map((line) => line.message);
      expect(said).toEqual([expect.stringMatching(new RegExp(`^waiting up to 1m for the state's lock \\(--lock-wait\\): .*buyer\\.state\\.json is in use by process ${process.pid} since `))]);
      const without = await runCli([...args.filter((a) => a !== '--state' && a !== state), '--lock-wait', '5s'], { env: env(sandbox, dir) });
      expect(without.code).toBe(2);
      expect(without.stderr).toContain('--lock-wait needs --state FILE');
      // (the first run's --since is --since auto's matter only)
      expect(without.stderr).toMatch(/^hint: add --state buyer\.state\.json, for example$/m);
    });
  });
});

describe('jobs run --lock-wait (the Kubernetes recipe\'s command line)', () => {
  it('every job waits for its state\'s lock held by a live process, then says it waited; without it, exit 2 at once', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), ['version: 1', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-01', '  breakdowns: DAILY', '  state: state/{job}.json', '  output: out/{job}.csv',
        'jobs:', '  - name: held', '    side: buyer', ''].join('\n'));
      mkdirSync(join(dir, 'state'));
      // the lock of a live process (this test's)
      writeFileSync(join(dir, 'state', 'held.json.lock'), JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'held', since: new Date().toISOString() }));
      const at = Date.now();
      const refused = await runCli(['jobs', 'run'], { env: env(sandbox, dir), cwd: dir });
      expect(refused.code).toBe(2);
      expect(refused.stderr).not.toMatch(/waited/);
      const quick = Date.now() - at;
      const started = Date.now();
      const waited = await runCli(['jobs', 'run', '--lock-wait', '3s'], { env: env(sandbox, dir), cwd: dir });
      expect(waited.code, waited.stderr).toBe(2);
      expect(Date.now() - started).toBeGreaterThan(Math.max(2500, quick));
      expect(waited.stderr).toMatch(new RegExp(`is in use by process ${process.pid}.*\\(waited 3 s for it: --lock-wait\\)`));
      // said as the wait began, not only at its end
      expect(waited.stderr).toMatch(new RegExp(`warning: waiting up to 3\\.0s for the state's lock \\(--lock-wait\\): .*held\\.json is in use by process ${process.pid} since `));
      expect(refused.stderr).not.toMatch(/waiting up to/);
      expect(sandbox.reports()).toEqual([]);
    });
  });
});

describe('--state: a run killed while it waits is resumed by report ID', () => {
  it('SIGKILL during window 2 of 3: the next run skips 1, polls and downloads 2 without submitting it again, submits 3', async () => {
    await withSandbox({ readyDelayMs: 1200 }, async (sandbox, dir) => {
      const state = join(dir, 'buyer.state.json');
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks',
        '--chunk', 'day', '--concurrency', '1', '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '50ms', '--log-format', 'json'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      await until(() => readStateFile(state)?.windows[0]?.status === 'done' && readStateFile(state)?.windows[1]?.status === 'submitted', 'window 1 done, window 2 submitted');
      first.kill('SIGKILL');
      await firstDone;
      expect(readdirSync(join(dir, 'out'))).toEqual(['2026-11-01.csv']);
      const before = readStateFile(state) as StateFile;
      expect(before.windows.map((w) => w.status)).toEqual(['done', 'submitted', 'pending']);

      const second = await runCli(args, { env: env(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      const lines = logLines(second.stderr);
      expect(eventsOf(lines, 'skipped')).toEqual(['2026-11-01']);
      expect(lines.filter((l) => l.event === 'resumed').map((l) => [l.window.since.slice(0, 10), l.reportId, l.source])).toEqual([['2026-11-02', before.windows[1]?.reportId, 'state']]);
      expect(eventsOf(lines, 'submitted')).toEqual(['2026-11-03']);
      expect(eventsOf(lines, 'written')).toEqual(['2026-11-02', '2026-11-03']);

      // the sandbox's log: one report per day; day 2's report polled and downloaded by both runs' work, submitted once
      const perDay = sandbox.reports().map((report) => [dayOf(report.since), report.events.filter((e) => e.kind === 'submit').length, report.events.some((e) => e.kind === 'download')]);
      expect(perDay).toEqual([['2026-11-01', 1, true], ['2026-11-02', 1, true], ['2026-11-03', 1, true]]);

      // the files: each day's rows, read by csv-parse; the state is the manifest of them
      const after = readStateFile(state) as StateFile;
      expect(after.windows.map((w) => w.status)).toEqual(['done', 'done', 'done']);
      for (const entry of after.windows) {
        const rows = parse(readFileSync(entry.file as string, 'utf8'), { columns: true }) as Record<string, string>[];
        expect(new Set(rows.map((row) => row.date))).toEqual(new Set([entry.since.slice(0, 10)]));
        expect(rows.length).toBe(entry.rows);
      }
      // a run can be reconstructed from its log: every window is written or skipped, with its file
      const reconstructed = lines.filter((l) => l.event === 'written' || l.event === 'skipped').map((l) => [l.window.since.slice(0, 10), l.file]).sort();
      expect(reconstructed).toEqual(after.windows.map((w) => [w.since.slice(0, 10), w.file]));
      expect(second.stdout).toBe('');
    });
  });
});

describe('--state: a run killed while its changes are in the log (FILE.log)', () => {
  it('SIGKILL with 40 windows under way: the next run skips what was done, resumes what was submitted, and ends with one document', async () => {
    await withSandbox({ readyDelayMs: 300 }, async (sandbox, dir) => {
      const state = join(dir, 'buyer.state.json');
      const log = `${state}.log`;
      const args = ['run', 'buyer', '--since', '2026-09-01', '--until', '2026-10-10', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks',
        '--chunk', 'day', '--concurrency', '4', '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '50ms', '--log-format', 'json'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      const statuses = () => (existsSync(log) ? readState(state)?.windows.map((w) => w.status) ?? [] : []);
      await until(() => { const now = statuses(); return now.filter((s) => s === 'done').length >= 8 && now.includes('submitted'); }, '8 windows done, one submitted, in the log');
      first.kill('SIGKILL');
      await firstDone;
      // a crash in the middle of an append leaves part of a line: it was never acknowledged
      appendFileSync(log, '{"at":"2026-11-');

      // what a reader of the file sees is the document as last written (as the run opened it);
      // what the next run sees is that and the log
      expect(readStateFile(state)?.windows).toEqual([]);
      const atKill = readState(state);
      const sinceOf = (status: string) => (atKill?.windows ?? []).filter((w) => w.status === status).map((w) => w.since.slice(0, 10));
      const done = sinceOf('done');
      const submitted = sinceOf('submitted');
      expect(done.length).toBeGreaterThanOrEqual(8);
      expect(atKill?.windows).toHaveLength(40);

      const second = await runCli(args, { env: env(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      const lines = logLines(second.stderr);
      expect(eventsOf(lines, 'skipped').sort()).toEqual(done);
      expect(lines.filter((l) => l.event === 'resumed').map((l) => [l.window.since.slice(0, 10), l.source]).sort()).toEqual(submitted.map((day) => [day, 'state']));
      expect(eventsOf(lines, 'submitted').filter((day) => done.includes(day) || submitted.includes(day))).toEqual([]);
      // nothing submitted twice that the state knew of: one report per day done or submitted at the kill
      for (const day of [...done, ...submitted]) {
        expect(sandbox.reports().filter((report) => dayOf(report.since) === day).flatMap((report) => report.events.filter((e) => e.kind === 'submit')), day).toHaveLength(1);
      }

      // the end: one document, every day done once with its file; no log left
      expect(existsSync(log)).toBe(false);
      const after = readStateFile(state) as StateFile;
      expect(after.windows.map((w) => w.status)).toEqual(Array(40).fill('done'));
      expect(new Set(after.windows.map((w) => w.since)).size).toBe(40);
      expect(readdirSync(join(dir, 'out'))).toHaveLength(40);
      for (const entry of after.windows) {
        const rows = parse(readFileSync(entry.file as string, 'utf8'), { columns: true }) as Record<string, string>[];
        expect(new Set(rows.map((row) => row.date))).toEqual(new Set([entry.since.slice(0, 10)]));
        expect(rows.length).toBe(entry.rows);
      }
    });
  });
});

describe('--state: stale report IDs and one run at a time', () => {
  it('a report ID the server forgot (--report-ttl) is submitted again; a second run on the state file exits 2', async () => {
    let offset = 0;
    await withSandbox({ readyDelayMs: 1500, reportTtlMs: 60_000, now: () => Date.now() + offset }, async (sandbox, dir) => {
      const state = join(dir, 'nightly.state.json');
      const args = ['run', 'buyer', '--since', '2026-11-05', '--until', '2026-11-05', '--breakdowns', 'DAILY', '--metrics', 'displays',
        '--state', state, '-o', join(dir, 'day-{since}.csv'), '--poll-interval', '50ms'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      await until(() => readStateFile(state)?.windows[0]?.status === 'submitted', 'the report submitted');

      const concurrent = await runCli(args, { env: env(sandbox, dir) });
      expect(concurrent.code).toBe(2);
      expect(concurrent.stderr).toMatch(/^error: .*nightly\.state\.json is in use by process \d+ since .*another run with this state file is still going/m);
      expect(concurrent.stderr).toMatch(/^hint: let it finish, .*; --lock-wait 2m waits for it$/m);
      expect(concurrent.stderr).not.toMatch(/\n\s+at /);

      first.kill('SIGKILL');
      await firstDone;
      const stale = readStateFile(state)?.windows[0]?.reportId;
      offset += 5 * 60_000; // the sandbox forgets the report

      const second = await runCli(args, { env: env(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toContain(`report ${stale} is no longer known to the server; submitted buyer report`);
      const entry = readStateFile(state)?.windows[0];
      expect(entry?.status).toBe('done');
      expect(entry?.attempts).toBe(2);
      expect(entry?.reportId).not.toBe(stale);
      expect(sandbox.reports()).toHaveLength(2);
    });
  });

  it('a state file written for another request is refused with what differs; --full-refresh starts it over', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const base = ['run', 'buyer', '--since', '2026-11-05', '--until', '2026-11-05', '--breakdowns', 'DAILY', '--state', state, '-o', join(dir, '{since}.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli([...base, '--metrics', 'displays'], { env: env(sandbox, dir) })).code).toBe(0);
      const other = await runCli([...base, '--metrics', 'clicks'], { env: env(sandbox, dir) });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/^error: the state file .*s\.json was written for another request: metrics are clicks here, displays in the state file$/m);
      expect(other.stderr).toMatch(/^hint: .*--full-refresh/m);
      const refreshed = await runCli([...base, '--metrics', 'clicks', '--full-refresh'], { env: env(sandbox, dir) });
      expect(refreshed.code, refreshed.stderr).toBe(0);
      expect(readFileSync(join(dir, '2026-11-05.csv'), 'utf8').split('\n')[0]).toContain('clicks');
    });
  });

  it('flags that need --state say so, before any request', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      for (const flags of [['--since', 'auto', '--until', 'yesterday'], ['--since', '-2d', '--lookback', '3d'], ['--since', '-2d', '--full-refresh']]) {
        const result = await runCli(['run', 'buyer', ...flags, '--breakdowns', 'DAILY', '-o', join(dir, 'x.csv')], { env: env(sandbox, dir) });
        expect(result.code).toBe(2);
        expect(result.stderr).toMatch(/^error: .*need(s)? --state FILE/m);
      }
      const bad = await runCli(['run', 'buyer', '--since', 'auto', '--until', 'yesterday', '--lookback', 'three', '--state', join(dir, 's.json')], { env: env(sandbox, dir) });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--lookback wants a number of days from 0 to 366/);
      const first = await runCli(['run', 'buyer', '--since', 'auto', '--until', 'yesterday', '--state', join(dir, 's.json')], { env: env(sandbox, dir) });
      expect(first.code).toBe(2);
      expect(first.stderr).toMatch(/--since auto continues after the period the last run planned, and there is no state file yet/);
      expect(first.stderr).toMatch(/^hint: add --start DATE for the first run/m);
      const start = await runCli(['run', 'buyer', '--since', '2026-11-01', '--start', '2026-11-01', '--until', 'yesterday', '--state', join(dir, 's.json')], { env: env(sandbox, dir) });
      expect(start.code).toBe(2);
      expect(start.stderr).toMatch(/^error: --start only applies with --since auto/m);
      expect(sandbox.reports()).toHaveLength(0);
    });
  });

  it('--since auto --start DATE: one command line for every night; the first night starts at DATE, the next go on from the state (issue 33, item 2)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 'n.state.json');
      const night = (now: string) => runCli(['run', 'buyer', '--since', 'auto', '--start', '2026-11-18', '--until', 'yesterday', '--chunk', 'day', '--breakdowns', 'DAILY',
        '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '20ms', '-q'], { env: { ...env(sandbox, dir), REPORTING_NOW: now } });
      const first = await night('2026-11-21T05:00');
      expect(first.code, first.stderr).toBe(0);
      expect(readdirSync(join(dir, 'out')).sort()).toEqual(['2026-11-18.csv', '2026-11-19.csv', '2026-11-20.csv']);
      const submitted = sandbox.reports().length;
      expect(submitted).toBe(3);
      const second = await night('2026-11-22T05:00');
      expect(second.code, second.stderr).toBe(0);
      expect(readdirSync(join(dir, 'out')).sort()).toEqual(['2026-11-18.csv', '2026-11-19.csv', '2026-11-20.csv', '2026-11-21.csv']);
      // the second night fetched its own day only
      expect(sandbox.reports().length).toBe(submitted + 1);
      // the same night again, and the same days named: nothing to fetch, one result shape for both
      // (a newcomer's explicit period printed no upToDate, --since auto a merged file's shape)
      const json = (run: Promise<{ code: number | null; stdout: string; stderr: string }>) => run.then((r) => {
        expect(r.code, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as unknown;
      });
      const days = ['run', 'buyer', '--since', '2026-11-18', '--until', '2026-11-21', '--chunk', 'day', '--breakdowns', 'DAILY', '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '20ms', '-q', '--json'];
      const expected = { side: 'buyer', format: 'csv', upToDate: true, files: [] };
      expect(await json(runCli([...days.slice(0, 3), 'auto', '--start', '2026-11-18', ...days.slice(4)], { env: { ...env(sandbox, dir), REPORTING_NOW: '2026-11-22T06:00' } }))).toEqual(expected);
      expect(await json(runCli(days, { env: { ...env(sandbox, dir), REPORTING_NOW: '2026-11-22T06:00' } }))).toEqual(expected);
      expect(sandbox.reports().length).toBe(submitted + 1);
    });
  });
});

describe('--state: failed windows', () => {
  it('a window that failed is recorded failed, the others done; the next run retries only it (attempt 2)', async () => {
    const dir = tempDir();
    const state = join(dir, 'weeks.state.json');
    // Monday 2 to Thursday 12 November by week: a 7-day window and a 4-day one
    const args = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-12', '--breakdowns', 'DAILY', '--metrics', 'displays', '--chunk', 'week',
      '--no-split', '--state', state, '-o', join(dir, 'week-{since}.csv'), '--poll-interval', '20ms', '--log-format', 'json'];
    // the same platform (the same base URL: the state records it), strict, then lenient
    let port = 0;
    await withSandbox({ failOverDays: 5 }, async (strict) => {
      port = Number(new URL(strict.baseUrl).port);
      const first = await runCli(args, { env: env(strict, dir) });
      expect(first.code).toBe(6);
      const entries = readStateFile(state)?.windows.map((w) => [w.since.slice(0, 10), w.status, w.attempts]);
      expect(entries).toEqual([['2026-11-02', 'failed', 1], ['2026-11-09', 'done', 1]]);
      expect(readStateFile(state)?.windows[0]).toMatchObject({ error: expect.stringMatching(/too much data/) });
    });
    await withSandbox({ port }, async (lenient) => {
      const second = await runCli(args, { env: env(lenient, dir) });
      expect(second.code, second.stderr).toBe(0);
      const lines = logLines(second.stderr);
      expect(eventsOf(lines, 'skipped')).toEqual(['2026-11-09']);
      expect(lines.filter((l) => l.event === 'submitted').map((l) => [l.window.since.slice(0, 10), (l as LogLine & { attempt: number }).attempt])).toEqual([['2026-11-02', 2]]);
      expect(readStateFile(state)?.windows.map((w) => [w.since.slice(0, 10), w.status, w.attempts])).toEqual([['2026-11-02', 'done', 2], ['2026-11-09', 'done', 1]]);
      expect(lenient.reports()).toHaveLength(1);
    });
  });
});

describe('three nightly runs with --since auto --lookback 2d against --restate 2d', () => {
  it('no day missing, none duplicated, each file the latest numbers, untouched files keep their mtime', async () => {
    const firstNight = DateTime.fromISO('2026-11-21T06:00:00', { zone: PARIS }).toMillis();
    let anchor = firstNight;
    let started = Date.now();
    const clock = () => anchor + (Date.now() - started);
    const night = (day: number) => { anchor = firstNight + day * DAY_MS; started = Date.now(); };
    await withSandbox({ readyDelayMs: 1, restateMs: 2 * DAY_MS, now: clock }, async (sandbox, dir) => {
      const out = join(dir, 'out');
      const nightly = async (since: string, lookback = '2d') => {
        const { ctx, stdout, stderr } = fakeContext({ env: env(sandbox, dir), cwd: dir });
        const code = await runInProcess(argv('run', 'buyer', '--since', since, '--until', 'yesterday', '--lookback', lookback, '--chunk', 'day',
          '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '-o', 'out/buyer-{since}.csv', '--state', 'buyer.state.json',
          '--log-format', 'json', '--poll-interval', '20ms', '--json'), { ...ctx, now: clock });
        expect(code, stderr.text).toBe(0);
        const lines = logLines(stderr.text);
        const outcome = (name: string) => eventsOf(lines, name);
        return { lines, written: outcome('written'), unchanged: outcome('unchanged'), skipped: outcome('skipped'), result: JSON.parse(stdout.text) as { files: { since: string; outcome: string }[] } };
      };
      const ageAll = () => { for (const name of readdirSync(out)) utimesSync(join(out, name), LONG_AGO, LONG_AGO); };
      const touched = () => readdirSync(out).filter((name) => statSync(join(out, name)).mtime.getTime() !== LONG_AGO.getTime()).sort();

      // night 1 (Nov 21): the first run gives its first day
      const one = await nightly('2026-11-16');
      // (in the order the windows finish: they run at once)
      expect([...one.written].sort()).toEqual(['2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20']);
      ageAll();

      // night 2 (Nov 22): continues at Nov 21 and looks back two days (Nov 19, 20); older days are not even requested
      night(1);
      const two = await nightly('auto');
      expect([...two.written, ...two.unchanged].sort()).toEqual(['2026-11-19', '2026-11-20', '2026-11-21']);
      expect(two.skipped).toEqual([]);
      expect(touched()).toEqual([...two.written].sort().map((d) => `buyer-${d}.csv`));
      ageAll();

      // night 3 (Nov 23), then it is run again the same morning looking back 3 days: Nov 20 no
      // longer moves, so its second fetch is unchanged and its file keeps its mtime
      night(2);
      const three = await nightly('auto');
      expect([...three.written, ...three.unchanged].sort()).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);
      ageAll();
      const again = await nightly('auto', '3d');
      expect(again.unchanged).toContain('2026-11-20');
      expect(again.result.files.find((file) => file.since === '2026-11-20')?.outcome).toBe('unchanged');
      expect(touched()).toEqual([...again.written].sort().map((d) => `buyer-${d}.csv`));
      expect(touched()).not.toContain('buyer-2026-11-20.csv');

      // every day once, each file what a fresh report of that day says now (days that no longer move)
      expect(readdirSync(out).sort()).toEqual(['16', '17', '18', '19', '20', '21', '22'].map((d) => `buyer-2026-11-${d}.csv`));
      const state = readStateFile(join(dir, 'buyer.state.json')) as StateFile;
      expect(state.windows.map((w) => `${w.since.slice(0, 10)} ${w.status}`)).toEqual(['16', '17', '18', '19', '20', '21', '22'].map((d) => `2026-11-${d} done`));
      // each window says whether its last fetch found it unchanged (jobs status --html shows it),
      // and a window written after an unchanged fetch says so no more
      const lastFetch = new Map<string, boolean>();
      for (const night of [one, two, three, again]) {
        for (const day of night.written) lastFetch.set(day, false);
        for (const day of night.unchanged) lastFetch.set(day, true);
      }
      expect(state.windows.filter((w) => w.unchanged).map((w) => w.since.slice(0, 10))).toEqual([...lastFetch].filter(([, same]) => same).map(([day]) => day).sort());
      expect(state.windows.filter((w) => w.unchanged).map((w) => w.since.slice(0, 10))).toContain('2026-11-20');
      for (const entry of state.windows) {
        const date = entry.since.slice(0, 10);
        const rows = parse(readFileSync(entry.file as string, 'utf8'), { columns: true }) as Record<string, string>[];
        expect(new Set(rows.map((row) => row.date)), date).toEqual(new Set([date]));
        expect(new Set(rows.map((row) => row.country)).size, `${date}: no duplicated row`).toBe(rows.length);
        if (date >= '2026-11-21') continue; // still moving: any fresh report differs again
        const since = Math.floor(DateTime.fromISO(date, { zone: PARIS }).toSeconds());
        const submitted = await call(sandbox, '/buyer-reporting', { form: { since, until: since + 86_399, metrics: 'displays,clicks', breakdowns: ['DAILY', 'COUNTRY'] } });
        await new Promise((resolve) => setTimeout(resolve, 20));
        const fresh = await call(sandbox, '/download-reporting', { form: { id: submitted.json.response.report_id } });
        const expected = (fresh.json.data as Record<string, unknown>[]).map((row) => `${row.country} ${row.displays} ${row.clicks}`);
        expect(rows.map((row) => `${row.country} ${row.displays} ${row.clicks}`), `${date} holds the final numbers`).toEqual(expected);
      }
    });
  });
});

describe('without --state: the journal', () => {
  it('a run killed after submitting is resumed by the same command; --no-resume submits a new report', async () => {
    await withSandbox({ readyDelayMs: 1500 }, async (sandbox, dir) => {
      const args = ['run', 'seller', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '-o', join(dir, 'day.csv'), '--poll-interval', '50ms'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      await until(() => sandbox.reports().length === 1, 'the report submitted');
      // the journal is written right after the answer: wait for it rather than for a fixed time
      const journalDir = join(dir, '.config', 'journal');
      const journalled = () => existsSync(journalDir) && readdirSync(journalDir, { recursive: true }).some((name) => String(name).endsWith('.json'));
      await until(journalled, 'the journal written');
      first.kill('SIGKILL');
      await firstDone;
      const id = sandbox.reports()[0]?.id as string;

      const second = await runCli(args, { env: env(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toContain(`resumed seller report ${id}, submitted by an earlier run (from the journal); not submitting a new one`);
      expect(sandbox.reports()).toHaveLength(1);
      expect(existsSync(join(dir, 'day.csv'))).toBe(true);

      // written: nothing left to resume, the next run submits
      const third = await runCli([...args, '-q'], { env: env(sandbox, dir) });
      expect(third.code).toBe(0);
      expect(sandbox.reports()).toHaveLength(2);

      // killed again, then --no-resume: a fresh report, the journal ignored
      const fourth = startCli(args, { env: env(sandbox, dir) });
      const fourthDone = collect(fourth);
      await until(() => sandbox.reports().length === 3, 'the third report submitted');
      await until(journalled, 'the journal written');
      fourth.kill('SIGKILL');
      await fourthDone;
      const fresh = await runCli([...args, '--no-resume'], { env: env(sandbox, dir) });
      expect(fresh.code).toBe(0);
      expect(fresh.stderr).toMatch(/^submitted seller report [0-9a-f]+$/m);
      expect(fresh.stderr).not.toContain('resumed');
      expect(sandbox.reports()).toHaveLength(4);
      // the journal never holds the token
      const journal = join(dir, '.config', 'journal');
      for (const name of existsSync(journal) ? readdirSync(journal) : []) expect(readFileSync(join(journal, name), 'utf8')).not.toContain(sandbox.token);
    });
  });

  it('--log-format json on a one-report run: every line parses, no text line, and no secret', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '-o', join(dir, 'd.csv'), '--poll-interval', '20ms', '--log-format', 'json'], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const lines = logLines(result.stderr);
      expect(lines.map((l) => l.event).filter((e) => e !== 'polled')).toEqual(['submitted', 'ready', 'download_started', 'download_done', 'written', 'done']);
      expect(lines.at(-2)?.file).toBe(join(dir, 'd.csv'));
      expect((lines.at(-2) as LogLine & { bytes: number }).bytes).toBe(statSync(join(dir, 'd.csv')).size);
      // the last line says the run finished (issue 21, item 4): not "died after its last write"
      expect(lines.at(-1)).toMatchObject({ event: 'done', exitCode: 0, fetched: 1, skipped: 0, unchanged: 0, rows: lines.at(-2)?.rows, files: [join(dir, 'd.csv')] });
      expect((lines.at(-1) as LogLine & { durationMs: number }).durationMs).toBeGreaterThan(0);
      expect(result.stderr).not.toContain(sandbox.token);
    });
  });

  it('--log-format json: a request retried inside the HTTP client is a `retried` event of its window, never a text line', async () => {
    for (const chunk of [[], ['--chunk', 'day']]) {
      await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'status', first: 2 }] } }, async (sandbox, dir) => {
        const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-03', '--breakdowns', 'DAILY', ...chunk, '-o', join(dir, `r${chunk.length}.csv`),
          '--poll-interval', '20ms', '--log-format', 'json'], { env: env(sandbox, dir) });
        expect(result.code, result.stderr).toBe(0);
        const retried = logLines(result.stderr).filter((l) => l.event === 'retried') as (LogLine & { attempt: number; message: string; delayMs: number })[];
        expect(retried.length, chunk.join(' ') || 'one report').toBeGreaterThan(0);
        for (const line of retried) {
          expect(line.message).toMatch(/^HTTP 503 \(POST \/status-reporting\); retrying in/);
          expect(line.attempt).toBeGreaterThanOrEqual(2);
          // full jitter: a delay drawn from [0, cap), 0 included (it once drew 0 in CI)
          expect(line.delayMs).toBeGreaterThanOrEqual(0);
          expect(line.delayMs).toBeLessThan(30_000);
        }
        if (chunk.length) expect(retried.every((l) => l.window.since.startsWith('2026-11-0'))).toBe(true);
      });
    }
  });

  it('--log-format json: failures and interruptions are JSON lines too, the error last', async () => {
    // every window refused: the token is wrong (exit 3 for the run, as for one report)
    await withSandbox({}, async (sandbox, dir) => {
      const bad = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-03', '--breakdowns', 'DAILY', '--chunk', 'day', '-o', join(dir, '{since}.csv'),
        '--log-format', 'json'], { env: { ...env(sandbox, dir), REPORTING_TOKEN: 'f'.repeat(40) } });
      expect(bad.code).toBe(3);
      const lines = logLines(bad.stderr) as (LogLine & { message?: string; hint?: string; exitCode?: number })[];
      expect(eventsOf(lines, 'failed')).toEqual(['2026-11-02', '2026-11-03']);
      expect(lines.at(-1)).toMatchObject({ event: 'error', exitCode: 3, message: expect.stringMatching(/2 windows failed, 0 written: .*401/) });
      expect(lines.at(-1)?.hint).toMatch(/retry only the windows that failed with: reporting run buyer .*--since 2026-11-02 --until 2026-11-03/);
      expect(bad.stderr).not.toContain('f'.repeat(40));
    });
  });
});

describe('what a run leaves to the next one', () => {
  it('a wait that gave up (--max-wait) keeps the report: the next run resumes it, from the journal and from the state', async () => {
    await withSandbox({ readyDelayMs: 1500 }, async (sandbox, dir) => {
      const plain = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '-o', join(dir, 'p.csv'), '--poll-interval', '50ms'];
      const gaveUp = await runCli([...plain, '--max-wait', '1s'], { env: env(sandbox, dir) });
      expect(gaveUp.code).toBe(6);
      const again = await runCli(plain, { env: env(sandbox, dir) });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/^resumed buyer report [0-9a-f]+, submitted by an earlier run \(from the journal\)/m);
      expect(sandbox.reports()).toHaveLength(1);

      const state = join(dir, 's.json');
      const chunked = ['run', 'buyer', '--since', '2026-11-05', '--until', '2026-11-05', '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', join(dir, '{since}.csv'), '--poll-interval', '50ms'];
      expect((await runCli([...chunked, '--max-wait', '1s'], { env: env(sandbox, dir) })).code).toBe(6);
      expect(readStateFile(state)?.windows[0]).toMatchObject({ status: 'submitted', error: expect.stringMatching(/not ready within 1(\.0)?s/) });
      const resumed = await runCli(chunked, { env: env(sandbox, dir) });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stderr).toMatch(/resumed buyer report [0-9a-f]+, submitted by an earlier run \(from the state file\)/);
      expect(sandbox.reports()).toHaveLength(2);
    });
  });

  it('a run that ends well leaves no journal entry, split pieces included; --no-resume replaces the entry it finds', async () => {
    await withSandbox({ failOverDays: 3, readyDelayMs: 1500 }, async (sandbox, dir) => {
      const week = ['run', 'buyer', '--since', '2026-11-16', '--until', '2026-11-22', '--breakdowns', 'DAILY', '--chunk', 'week', '-o', join(dir, 'w-{since}.csv'), '--poll-interval', '50ms', '-q'];
      const done = await runCli(week, { env: env(sandbox, dir) });
      expect(done.code, done.stderr).toBe(0);
      const journal = join(dir, '.config', 'journal');
      expect(existsSync(journal) ? readdirSync(journal) : []).toEqual([]);

      // killed after submitting; then --no-resume submits anew and finishes; then a normal run
      // submits too (nothing left to resume), instead of resuming the report --no-resume passed over
      const args = ['run', 'seller', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '-o', join(dir, 's.csv'), '--poll-interval', '50ms'];
      const before = sandbox.reports().length;
      const killed = startCli(args, { env: env(sandbox, dir) });
      const killedDone = collect(killed);
      await until(() => sandbox.reports().length === before + 1, 'the report submitted');
      await until(() => existsSync(journal) && readdirSync(journal).length === 1, 'the journal written');
      killed.kill('SIGKILL');
      await killedDone;
      expect((await runCli([...args, '--no-resume'], { env: env(sandbox, dir) })).code).toBe(0);
      const normal = await runCli(args, { env: env(sandbox, dir) });
      expect(normal.code).toBe(0);
      expect(normal.stderr).not.toContain('resumed');
      expect(sandbox.reports()).toHaveLength(before + 3);
    });
  });

  it('a split window is recorded done with its report, and is skipped the next time', async () => {
    await withSandbox({ failOverDays: 3 }, async (sandbox, dir) => {
      const state = join(dir, 'w.json');
      const args = ['run', 'buyer', '--since', '2026-11-09', '--until', '2026-11-15', '--breakdowns', 'DAILY', '--chunk', 'week', '--state', state, '-o', join(dir, 'w-{since}.csv'),
        '--poll-interval', '20ms', '--log-format', 'json'];
      expect((await runCli(args, { env: env(sandbox, dir) })).code).toBe(0);
      const entry = readStateFile(state)?.windows;
      expect(entry).toHaveLength(1);
      expect(entry?.[0]).toMatchObject({ status: 'done', reportId: expect.stringMatching(/^[0-9a-f]+$/) });
      expect((entry?.[0]?.attempts ?? 0)).toBeGreaterThan(0);
      const submitted = sandbox.reports().length;
      const again = await runCli(args, { env: env(sandbox, dir) });
      expect(eventsOf(logLines(again.stderr), 'skipped')).toEqual(['2026-11-09']);
      expect(sandbox.reports()).toHaveLength(submitted);
    });
  });

  it('one merged file with --since auto: the state forgets the days the rewritten file no longer holds; another --chunk is refused', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 'm.json');
      const base = ['run', 'buyer', '--until', '2026-11-20', '--breakdowns', 'DAILY', '--metrics', 'displays', '--chunk', 'day', '--state', state, '-o', join(dir, 'all.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli([...base.slice(0, 2), '--since', '2026-11-16', ...base.slice(2)], { env: env(sandbox, dir) })).code).toBe(0);
      const next = [...base];
      next[3] = '2026-11-22';
      const auto = await runCli([...next.slice(0, 2), '--since', 'auto', '--lookback', '1d', ...next.slice(2)], { env: env(sandbox, dir) });
      expect(auto.code, auto.stderr).toBe(0);
      const dates = (parse(readFileSync(join(dir, 'all.csv'), 'utf8'), { columns: true }) as { date: string }[]).map((row) => row.date);
      const recorded = readStateFile(state)?.windows.map((w) => w.since.slice(0, 10));
      expect(recorded).toEqual([...new Set(dates)].sort());
      expect(recorded).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);

      const weekly = await runCli([...next.slice(0, 2), '--since', 'auto', ...next.slice(2).map((word) => (word === 'day' ? 'week' : word))], { env: env(sandbox, dir) });
      expect(weekly.code).toBe(2);
      expect(weekly.stderr).toMatch(/--chunk is week here, day in the state file/);
    });
  });


  it('a resumed report whose status check fails on the network stays submitted: the run after resumes it', async () => {
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'status', first: 2 }] } }, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const args = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', join(dir, 'd-{since}.csv'),
        '--retries', '0', '--poll-interval', '20ms', '-q'];
      for (const run of [1, 2]) {
        expect((await runCli(args, { env: env(sandbox, dir) })).code, `run ${run}`).toBe(5);
        expect(readStateFile(state)?.windows[0]?.status, `run ${run}`).toBe('submitted');
      }
      const third = await runCli(args.filter((word) => word !== '-q'), { env: env(sandbox, dir) });
      expect(third.code, third.stderr).toBe(0);
      expect(third.stderr).toMatch(/resumed buyer report/);
      expect(sandbox.reports()).toHaveLength(1);
    });
  });

  it('--lookback with --chunk week re-fetches whole weeks: no day in two files, no overlapping records; DAY is day', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 'w.json');
      const tail = ['--breakdowns', 'DAILY', '--metrics', 'displays', '--chunk', 'week', '--state', state, '-o', join(dir, 'w-{since}.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-15', ...tail], { env: env(sandbox, dir) })).code).toBe(0);
      const next = await runCli(['run', 'buyer', '--since', 'auto', '--until', '2026-11-22', '--lookback', '3d', ...tail], { env: env(sandbox, dir) });
      expect(next.code, next.stderr).toBe(0);
      expect(readdirSync(dir).filter((name) => name.endsWith('.csv')).sort()).toEqual(['w-2026-11-02.csv', 'w-2026-11-09.csv', 'w-2026-11-16.csv']);
      expect(readStateFile(state)?.windows.map((w) => `${w.since.slice(0, 10)}..${w.until.slice(0, 10)} ${w.status}`)).toEqual([
        '2026-11-02..2026-11-08 done', '2026-11-09..2026-11-15 done', '2026-11-16..2026-11-22 done',
      ]);
      const daily = join(dir, 'd.json');
      const dayTail = (chunk: string) => ['--breakdowns', 'DAILY', '--chunk', chunk, '--state', daily, '-o', join(dir, 'd-{since}.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', ...dayTail('day')], { env: env(sandbox, dir) })).code).toBe(0);
      expect((await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-03', ...dayTail('DAY')], { env: env(sandbox, dir) })).code).toBe(0);
    });
  });
});

describe('the state records what its files look like and where the numbers came from (issue 20, item 2)', () => {
  it('another --columns, --delimiter, --bom, --excel, server or profile is refused, naming what differs; --full-refresh starts over', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const base = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-03', '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', join(dir, 'd-{since}.csv'), '--poll-interval', '20ms', '-q'];
      const first = await runCli(base, { env: env(sandbox, dir) });
      expect(first.code, first.stderr).toBe(0);
      const recorded = JSON.parse(readFileSync(state, 'utf8')) as { version: number; request: Record<string, unknown> };
      expect(recorded.version).toBe(2);
      // the requested columns, by default
      const requested = 'date,displays,clicks,downloads,leads,landings,revenueEuro,valueDollar,eyesTrackings';
      expect(recorded.request).toMatchObject({ columns: requested.split(','), delimiter: ',', bom: false, excel: false, server: { baseUrl: sandbox.baseUrl, profile: 'default' } });
      expect(JSON.stringify(recorded)).not.toContain(sandbox.token);
      const before = sandbox.requests.length;
      for (const [extra, difference] of [
        [['--columns', 'date,displays'], new RegExp(`--columns are date,displays here, ${requested} in the state file`)],
        [['--columns', 'all'], new RegExp(`--columns are every column here, ${requested} in the state file`)],
        [['--delimiter', ';'], /the CSV delimiter is ";" here, "," in the state file/],
        [['--bom'], /--bom is on here, off in the state file/],
        [['--excel'], /--excel is on here, off in the state file/],
        [['--base-url', sandbox.baseUrl.replace('127.0.0.1', 'localhost')], /the server is http:\/\/localhost:\d+ here, http:\/\/127\.0\.0\.1:\d+ in the state file/],
        [['--profile', 'other'], /the profile is other here, default in the state file/],
      ] as const) {
        const result = await runCli([...base, ...extra], { env: env(sandbox, dir) });
        expect(result.code, `${extra.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toMatch(difference);
        expect(result.stderr).toMatch(/--full-refresh/);
      }
      expect(sandbox.requests.length).toBe(before);
      const over = await runCli([...base, '--delimiter', ';', '--full-refresh'], { env: env(sandbox, dir) });
      expect(over.code, over.stderr).toBe(0);
      expect(readFileSync(join(dir, 'd-2026-11-02.csv'), 'utf8').split('\n')[0]).toContain(';');
    });
  });

  it('a version 1 state (every column) met with the default columns is refused, naming --columns all and --full-refresh; each works (issue 21, item 1)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const base = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '--state', state, '-o', join(dir, 'd.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli([...base, '--columns', 'all'], { env: env(sandbox, dir) })).code).toBe(0);
      const allHeader = readFileSync(join(dir, 'd.csv'), 'utf8').split('\n')[0];
      // as version 1 wrote it: no shape recorded, every column written
      const doc = JSON.parse(readFileSync(state, 'utf8')) as { version: number; request: Record<string, unknown> };
      for (const key of ['columns', 'delimiter', 'bom', 'excel', 'server']) delete doc.request[key];
      const v1 = JSON.stringify({ ...doc, version: 1 });
      writeFileSync(state, v1);
      const before = sandbox.requests.length;
      const refused = await runCli(base, { env: env(sandbox, dir) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: the state file .*s\.json was written for another request: --columns are date,country,displays,clicks here, every column in the state file; it is of format version 1, which always wrote every field of every row \(--columns all\), and the default is now the requested columns$/m);
      expect(refused.stderr).toMatch(/^hint: add --columns all to keep this file's shape, or --full-refresh to start it anew with --columns date,country,displays,clicks$/m);
      expect(refused.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
      expect(sandbox.requests.length).toBe(before);
      expect(readFileSync(state, 'utf8')).toBe(v1); // untouched
      // the first way: keep the file's shape
      const kept = await runCli([...base, '--columns', 'all'], { env: env(sandbox, dir) });
      expect(kept.code, kept.stderr).toBe(0);
      expect(JSON.parse(readFileSync(state, 'utf8'))).toMatchObject({ version: 2, request: { columns: null, delimiter: ',', server: { baseUrl: sandbox.baseUrl } } });
      expect(readFileSync(join(dir, 'd.csv'), 'utf8').split('\n')[0]).toBe(allHeader);
      // a version 2 state recording every column says so too, without the version
      const v2 = await runCli(base, { env: env(sandbox, dir) });
      expect(v2.code).toBe(2);
      expect(v2.stderr).toMatch(/every column in the state file; it records every field of every row \(--columns all\), and the default is now the requested columns$/m);
      expect(v2.stderr).toMatch(/^hint: add --columns all to keep this file's shape, or --full-refresh to start it anew/m);
      // the second way: start anew with the requested columns
      writeFileSync(state, v1);
      const anew = await runCli([...base, '--full-refresh'], { env: env(sandbox, dir) });
      expect(anew.code, anew.stderr).toBe(0);
      expect(JSON.parse(readFileSync(state, 'utf8'))).toMatchObject({ version: 2, request: { columns: ['date', 'country', 'displays', 'clicks'] } });
      expect(parse(readFileSync(join(dir, 'd.csv'), 'utf8'))[0]).toEqual(['date', 'country', 'displays', 'clicks']);
      // another named set: the hint names the recorded one
      const named = await runCli([...base, '--columns', 'date,clicks'], { env: env(sandbox, dir) });
      expect(named.code).toBe(2);
      expect(named.stderr).toMatch(/^hint: add --columns date,country,displays,clicks to keep this file's shape, or --full-refresh to start it anew with --columns date,clicks$/m);
      // another breakdown: no --columns would make this file's rows (a newcomer followed that hint
      // into a second refusal)
      const other = await runCli(base.map((arg) => (arg === 'DAILY,COUNTRY' ? 'DAILY' : arg)), { env: env(sandbox, dir) });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/^error: the state file .*s\.json was written for another request: breakdowns are DAILY here, DAILY,COUNTRY in the state file$/m);
      expect(other.stderr).toMatch(/^hint: use another --state file for this request, or add --full-refresh to start this one over$/m);
    });
  });
});

describe('a report is checked against the window it was fetched for (issue 20, item 3)', () => {
  it("a report ID recorded for the wrong window: exit 5 naming both periods, that day's file not written, the next run submits it anew", async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const args = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-03', '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', join(dir, 'd-{since}.csv'), '--poll-interval', '20ms', '-q'];
      expect((await runCli(args, { env: env(sandbox, dir) })).code).toBe(0);
      const day2 = readFileSync(join(dir, 'd-2026-11-03.csv'), 'utf8');
      // an edited (or merged) state: day 2 "submitted" with day 1's report
      const doc = JSON.parse(readFileSync(state, 'utf8')) as { windows: { status: string; reportId: string | null }[] };
      const [first, second] = doc.windows as [{ status: string; reportId: string | null }, { status: string; reportId: string | null }];
      Object.assign(second, { status: 'submitted', reportId: first.reportId });
      writeFileSync(state, JSON.stringify(doc));
      const wrong = await runCli(args, { env: env(sandbox, dir) });
      expect(wrong.code, wrong.stderr).toBe(5);
      expect(wrong.stderr).toMatch(/covers 2026-11-02T00:00:00\+01:00 \.\. 2026-11-02T23:59:59\+01:00, not 2026-11-03T00:00:00\+01:00 \.\. 2026-11-03T23:59:59\+01:00/);
      expect(readFileSync(join(dir, 'd-2026-11-03.csv'), 'utf8')).toBe(day2); // day 1's rows never reached day 2's file
      expect(readStateFile(state)?.windows[1]?.status).toBe('failed');
      const submits = sandbox.reports().length;
      const again = await runCli(args, { env: env(sandbox, dir) });
      expect(again.code, again.stderr).toBe(0);
      expect(sandbox.reports()).toHaveLength(submits + 1); // day 2 submitted anew, day 1 skipped
      expect(readFileSync(join(dir, 'd-2026-11-03.csv'), 'utf8')).toBe(day2);
    });
  });
});

describe('the intent to submit is recorded before the submit (issue 20, item 10)', () => {
  it('a run killed while its submit is in flight: the next run says a report of unknown ID may be running, and submits anew', async () => {
    await withSandbox({ faults: { latencyMs: 1500, errors: [] } }, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const args = ['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', join(dir, 'd-{since}.csv'), '--poll-interval', '20ms'];
      const first = startCli(args, { env: env(sandbox, dir) });
      const firstDone = collect(first);
      await until(() => typeof (readStateFile(state)?.windows[0] as { submitting?: string | null } | undefined)?.submitting === 'string', 'the intent recorded');
      expect(readStateFile(state)?.windows[0]).toMatchObject({ status: 'pending', reportId: null });
      first.kill('SIGKILL');
      await firstDone;
      const second = await runCli(args, { env: env(sandbox, dir) });
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toMatch(/^2026-11-02: warning: an earlier run was stopped while submitting this window's report \(at \d{4}-\d\d-\d\dT[\d:.]+Z\): a report of unknown ID may be running on the server/m);
      const entry = readStateFile(state)?.windows[0] as unknown as { status: string; submitting: string | null };
      expect(entry).toMatchObject({ status: 'done', submitting: null });
    });
  }, 60_000);
});

describe('what the state and the done event say of summed windows (found by a newcomer)', () => {
  it('without a time breakdown, each window is recorded with the rows its file holds; done lists the files by date', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const state = join(dir, 'a.json');
      const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-05', '--breakdowns', 'COUNTRY', '--chunk', 'day', '--concurrency', '4',
        '--state', state, '-o', join(dir, 'a/{since}.csv'), '--poll-interval', '20ms', '--log-format', 'json'], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      for (const entry of readStateFile(state)?.windows ?? []) {
        const rows = parse(readFileSync(entry.file as string), { columns: true }) as unknown[];
        expect(rows.length).toBeGreaterThan(0);
        expect(entry.rows, entry.since).toBe(rows.length);
      }
      const done = logLines(result.stderr).at(-1) as LogLine & { files: string[] };
      expect(done.event).toBe('done');
      expect(done.files).toEqual(['02', '03', '04', '05'].map((d) => join(dir, `a/2026-11-${d}.csv`)));
    });
  });
});
