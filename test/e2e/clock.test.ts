// Rehearsing a nightly job with a moved clock (issue 21, items 3 and 5): the built CLI with
// REPORTING_NOW against a sandbox started with --now, night after night, without faketime. And a
// night killed with four windows submitted: the next night resumes them and submits its own day,
// never older days again.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { DateTime } from 'luxon';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readState } from '../../src/engine/state.js';
import { clockFrom } from '../../src/sandbox/options.js';
import { collect, firstLine, runCli, startCli, type Result, type RunOptions } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

const PARIS = 'Europe/Paris';
const DAY_MS = 86_400_000;
const dayOf = (unix: number) => DateTime.fromSeconds(unix, { zone: PARIS }).toISODate();
const REQUEST = ['--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '--chunk', 'day'];

interface Line { v: number; ts: string; now?: string; event: string; message?: string; window?: { since: string }; reportId?: string; source?: string }
const jsonLines = (stderr: string): Line[] => stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line);
const days = (lines: Line[], event: string) => lines.filter((l) => l.event === event).map((l) => l.window?.since.slice(0, 10)).sort();

/** Each CSV holds its day's rows only (read by csv-parse). */
function checkFiles(dir: string, dates: string[]): void {
  for (const date of dates) {
    const rows = parse(readFileSync(join(dir, 'out', `${date}.csv`), 'utf8'), { columns: true }) as Record<string, string>[];
    expect(rows.length, date).toBeGreaterThan(0);
    expect(new Set(rows.map((row) => row.date)), date).toEqual(new Set([date]));
  }
}

describe('three nights rehearsed with REPORTING_NOW against `reporting sandbox --now`', () => {
  it('--since auto moves by one day each night (across the spring DST change); the warning even with -q; whoami shows it; `now` in JSON events', async () => {
    const dir = tempDir();
    const state = join(dir, 'buyer.state.json');
    // the nights of the 28th, 29th (a 23-hour day) and 30th of March 2026, at 03:00 Paris time
    const nights = ['2026-03-28T03:00:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-30T03:00:00+02:00'];
    const submittedPerNight: number[] = [];
    const results: Result[] = [];
    // the state records the server: each night's sandbox listens where the first one did
    let port = '0';
    for (const [index, night] of nights.entries()) {
      const sandbox = startCli(['sandbox', '--port', port, '--json', '--delay', '100ms', '--now', night]);
      const info = JSON.parse(await firstLine(sandbox)) as { baseUrl: string; token: string; now: string };
      port = new URL(info.baseUrl).port;
      const stopped = collect(sandbox);
      // a failed assertion must not leave the sandbox running (a passing night stops it with SIGINT below)
      onTestFinished(() => { if (sandbox.exitCode === null && sandbox.signalCode === null) sandbox.kill('SIGKILL'); });
      // the sandbox says its clock, which runs on from --now
      expect(Date.parse(info.now) - Date.parse(night)).toBeGreaterThanOrEqual(0);
      expect(Date.parse(info.now) - Date.parse(night)).toBeLessThan(60_000);
      const env = { REPORTING_NOW: night, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token, REPORTING_CONFIG_DIR: join(dir, '.config') };
      const since = index === 0 ? ['--since', '2026-03-25'] : ['--since', 'auto'];
      // the first night with -q and text; the next ones with a JSON log
      const log = index === 0 ? ['-q'] : ['--log-format', 'json', '-q'];
      const run = await runCli(['run', 'buyer', ...since, '--until', 'yesterday', ...REQUEST, '--state', state, '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '50ms', ...log], { env, cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      results.push(run);
      if (index === 1) {
        const who = await runCli(['whoami'], { env });
        expect(who.stdout).toContain(`now:      ${night} (moved by REPORTING_NOW=${night}; the real clock says `);
        expect(who.stderr).toMatch(/^warning: REPORTING_NOW=/);
      }
      sandbox.kill('SIGINT');
      const stats = JSON.parse((await stopped).stdout.trim().split('\n').at(-1) ?? '{}') as { stopped: boolean; stats: { submitted: number } };
      submittedPerNight.push(stats.stats.submitted);
      // the period the night planned: from where --since auto put it, to yesterday
      const planned = readState(state)?.planned;
      expect(planned && [dayOf(planned.sinceUnix), dayOf(planned.untilUnix)]).toEqual([['2026-03-25', '2026-03-27'], ['2026-03-28', '2026-03-28'], ['2026-03-29', '2026-03-29']][index]);
    }
    // night 1: -q silences everything but the warning, which names the moved and the real clock
    expect(results[0]?.stderr).toMatch(/^warning: REPORTING_NOW=2026-03-28T03:00:00\+01:00: the calendar says 2026-03-28T03:0\d:\d\d\+01:00, not \d{4}-\d\d-\d\dT.*unset it for real runs\n$/);
    // nights 2 and 3: every stderr line is JSON; the warning first; each line carries `now` and is
    // dated by the moved clock; --since auto continued at the next day
    for (const [index, expected] of [[1, '2026-03-28'], [2, '2026-03-29']] as const) {
      const lines = jsonLines(results[index]?.stderr ?? '');
      expect(lines[0]).toMatchObject({ event: 'warning', now: nights[index] });
      for (const line of lines) {
        expect(line.now).toBe(nights[index]);
        const drift = Date.parse(line.ts) - Date.parse(nights[index] as string);
        expect(drift).toBeGreaterThanOrEqual(0);
        expect(drift).toBeLessThan(60_000);
      }
      expect(days(lines, 'submitted')).toEqual([expected]);
      expect(days(lines, 'written')).toEqual([expected]);
      expect(lines.at(-1)).toMatchObject({ event: 'done' });
    }
    expect(submittedPerNight).toEqual([3, 1, 1]);
    checkFiles(dir, ['2026-03-25', '2026-03-26', '2026-03-27', '2026-03-28', '2026-03-29']);
    // the 29th is the 23-hour day
    const windows = readState(state)?.windows ?? [];
    const last = windows.at(-1);
    expect(last && last.untilUnix - last.sinceUnix + 1).toBe(23 * 3600);
  }, 120_000);
});

describe('a crash must not widen the next night\'s work (issue 21, item 5)', () => {
  it('a night killed with four windows submitted: the next night resumes the four and submits its own day only', async () => {
    // the sandbox's clock starts at the first night (as `sandbox --now` does) and is moved a day each night
    await withSandbox({ readyDelayMs: 2500, now: clockFrom('2026-11-21T03:00') }, async (sandbox, dir) => {
      const state = join(dir, 'buyer.state.json');
      const night = (now: string, since: string[], log: string[] = ['--log-format', 'json']): [string[], RunOptions] => [
        ['run', 'buyer', ...since, '--until', 'yesterday', '--lookback', '3d', ...REQUEST, '--concurrency', '4', '--state', state,
          '-o', join(dir, 'out', '{since}.csv'), '--poll-interval', '50ms', ...log],
        { env: { REPORTING_NOW: now, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, REPORTING_CONFIG_DIR: join(dir, '.config') }, cwd: dir },
      ];
      const submitsSoFar = () => sandbox.reports().filter((report) => report.events.some((e) => e.kind === 'submit')).length;

      // night of the 21st: the first run, 14th..20th
      const first = await runCli(...night('2026-11-21T03:00', ['--since', '2026-11-14']));
      expect(first.code, first.stderr).toBe(0);
      expect(submitsSoFar()).toBe(7);

      // night of the 22nd: the lookback (18th..20th) and the 21st are submitted, then the run is killed
      sandbox.advance(DAY_MS);
      const [args, options] = night('2026-11-22T03:00', ['--since', 'auto']);
      const killed = startCli(args, options);
      const killedDone = collect(killed);
      onTestFinished(() => { if (killed.exitCode === null && killed.signalCode === null) killed.kill('SIGKILL'); });
      const submitted = () => readState(state)?.windows.filter((w) => w.status === 'submitted').map((w) => dayOf(w.sinceUnix)) ?? [];
      await until(() => submitted().length === 4, 'four windows submitted');
      killed.kill('SIGKILL');
      await killedDone;
      expect(submitted()).toEqual(['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21']);
      expect(submitsSoFar()).toBe(11);

      // night of the 23rd: the four resumed by report ID, the 22nd submitted, nothing older
      sandbox.advance(DAY_MS);
      const next = await runCli(...night('2026-11-23T03:00', ['--since', 'auto']));
      expect(next.code, next.stderr).toBe(0);
      const lines = jsonLines(next.stderr);
      expect(days(lines, 'resumed')).toEqual(['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21']);
      expect(lines.filter((l) => l.event === 'resumed').every((l) => l.source === 'state')).toBe(true);
      expect(days(lines, 'submitted')).toEqual(['2026-11-22']);
      expect(submitsSoFar()).toBe(12);
      // the sandbox's ledger: one submit per day of the 14th..17th and of the 22nd, two of the
      // 18th..20th (the first night and the lookback of the killed one), one of the 21st
      const perDay = new Map<string, number>();
      for (const report of sandbox.reports()) perDay.set(dayOf(report.since) ?? '', (perDay.get(dayOf(report.since) ?? '') ?? 0) + report.events.filter((e) => e.kind === 'submit').length);
      expect(Object.fromEntries([...perDay].sort())).toEqual({
        '2026-11-14': 1, '2026-11-15': 1, '2026-11-16': 1, '2026-11-17': 1, '2026-11-18': 2, '2026-11-19': 2, '2026-11-20': 2, '2026-11-21': 1, '2026-11-22': 1,
      });
      const after = readState(state);
      expect(after?.windows.map((w) => `${dayOf(w.sinceUnix)} ${w.status}`)).toEqual(
        ['14', '15', '16', '17', '18', '19', '20', '21', '22'].map((d) => `2026-11-${d} done`));
      expect(after?.planned && [dayOf(after.planned.sinceUnix), dayOf(after.planned.untilUnix)]).toEqual(['2026-11-18', '2026-11-22']);
      checkFiles(dir, ['14', '15', '16', '17', '18', '19', '20', '21', '22'].map((d) => `2026-11-${d}`));
    });
  }, 120_000);
});
