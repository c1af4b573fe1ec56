import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { EXIT, UsageError } from '../../src/errors.js';
import {
  RunState, autoSince, daysBefore, parseLookback, planSteps, readState, resolveStart, requestDifferences,
  STATE_VERSION, type StateDoc, type StateEntry, type StateRequest, type Step,
} from '../../src/engine/state.js';
import type { Window } from '../../src/report/windows.js';
import { HOST } from '../helpers/host.js';
import { tempDir } from '../helpers/tmp.js';

const PARIS = 'Europe/Paris';
const at = (iso: string) => DateTime.fromISO(iso, { zone: PARIS });
const ms = (iso: string) => at(iso).toMillis();

/** Paris calendar days from `first` to `last`, one window each (as `--chunk day` plans them). */
function days(first: string, last: string): Window[] {
  const windows: Window[] = [];
  for (let day = at(first).startOf('day'); day <= at(last); day = day.plus({ days: 1 })) {
    windows.push({ since: Math.floor(day.toSeconds()), until: Math.floor(day.endOf('day').toSeconds()) });
  }
  return windows;
}
const day = (date: string): Window => days(date, date)[0] as Window;

const REQUEST: StateRequest = {
  side: 'buyer',
  metrics: ['displays', 'clicks'],
  breakdowns: ['DAILY', 'COUNTRY'],
  filters: { campaignId: ['42', '7'] },
  params: {},
  format: 'csv',
  output: '/data/{side}-{since}.csv',
};

function entry(window: Window, status: StateEntry['status'], submittedAt: string, extra: Partial<StateEntry> = {}): StateEntry {
  return {
    since: DateTime.fromSeconds(window.since, { zone: PARIS }).toISO() ?? '',
    until: DateTime.fromSeconds(window.until, { zone: PARIS }).toISO() ?? '',
    sinceUnix: window.since,
    untilUnix: window.until,
    status,
    reportId: status === 'pending' ? null : `r${window.since}`,
    submittedAt: status === 'pending' ? null : new Date(ms(submittedAt)).toISOString(),
    attempts: status === 'pending' ? 0 : 1,
    rows: status === 'done' ? 10 : null,
    bytes: status === 'done' ? 100 : null,
    sha256: status === 'done' ? 'a'.repeat(64) : null,
    file: null,
    finishedAt: status === 'done' ? new Date(ms(submittedAt) + 5000).toISOString() : null,
    error: status === 'failed' ? 'too much data' : null,
    ...extra,
  };
}

function doc(windows: StateEntry[]): StateDoc {
  return { version: STATE_VERSION, createdAt: '2026-11-01T05:00:00.000Z', updatedAt: '2026-11-01T05:00:00.000Z', request: REQUEST, windows };
}

/** `done`, `skip`… per window, with the day, for readable assertions. */
const summary = (steps: Step[]) => steps.map((step) => {
  const date = DateTime.fromSeconds(step.window.since, { zone: PARIS }).toISODate();
  return `${date} ${step.action}${step.action === 'submit' ? `:${step.reason}` : ''}`;
});

describe('--since auto and --lookback', () => {
  // nightly runs at 06:00 Paris: each day was fetched the morning after it ended
  const nightly = (first: string, last: string) => days(first, last).map((w) => entry(w, 'done', DateTime.fromSeconds(w.until + 1 + 6 * 3600, { zone: PARIS }).toISO() ?? ''));

  it('starts right after the last window done, and a missed night is caught up', () => {
    const state = doc(nightly('2026-11-10', '2026-11-17'));
    // the job did not run on the 19th, 20th and 21st: on the 22nd, yesterday is the 21st
    const until = day('2026-11-21').until;
    const start = resolveStart('auto', until, state, { lookbackDays: 0, fullRefresh: false });
    expect(start).toEqual({ since: day('2026-11-18').since, lookbackFrom: undefined, upToDate: false });
    expect(summary(planSteps(state, days('2026-11-18', '2026-11-21')))).toEqual([
      '2026-11-18 submit:new', '2026-11-19 submit:new', '2026-11-20 submit:new', '2026-11-21 submit:new',
    ]);
  });

  it('--lookback 2d re-fetches the two days before, and skips the rest', () => {
    const state = doc(nightly('2026-11-10', '2026-11-19'));
    const until = day('2026-11-20').until;
    const start = resolveStart('auto', until, state, { lookbackDays: 2, fullRefresh: false });
    expect(start.since).toBe(day('2026-11-18').since);
    expect(start.lookbackFrom).toBe(day('2026-11-18').since);
    expect(summary(planSteps(state, days('2026-11-18', '2026-11-20'), { lookbackFrom: start.lookbackFrom }))).toEqual([
      '2026-11-18 submit:lookback', '2026-11-19 submit:lookback', '2026-11-20 submit:new',
    ]);
    // an explicit, earlier --since: the days outside the lookback are skipped
    expect(summary(planSteps(state, days('2026-11-16', '2026-11-20'), { lookbackFrom: start.lookbackFrom }))).toEqual([
      '2026-11-16 skip', '2026-11-17 skip', '2026-11-18 submit:lookback', '2026-11-19 submit:lookback', '2026-11-20 submit:new',
    ]);
  });

  it('counts calendar days across the autumn DST change (a 25-hour day)', () => {
    const state = doc(nightly('2026-10-20', '2026-10-26'));
    const start = resolveStart('auto', day('2026-10-27').until, state, { lookbackDays: 2, fullRefresh: false });
    // October 25 has 25 hours: two calendar days before October 27 is not 48 hours before
    expect(start.since).toBe(Math.floor(at('2026-10-25T00:00:00').toSeconds()));
    expect(day('2026-10-25').until - day('2026-10-25').since + 1).toBe(25 * 3600);
    expect(DateTime.fromSeconds(start.since, { zone: PARIS }).toISO()).toBe('2026-10-25T00:00:00.000+02:00');
    expect(summary(planSteps(state, days('2026-10-23', '2026-10-27'), { lookbackFrom: start.lookbackFrom }))).toEqual([
      '2026-10-23 skip', '2026-10-24 skip', '2026-10-25 submit:lookback', '2026-10-26 submit:lookback', '2026-10-27 submit:new',
    ]);
  });

  it('counts calendar days across the spring DST change (a 23-hour day)', () => {
    expect(daysBefore(day('2026-03-30').since, 1)).toBe(day('2026-03-29').since);
    expect(daysBefore(day('2026-03-31').since + 3600 * 5, 2)).toBe(day('2026-03-29').since);
    expect(day('2026-03-29').until - day('2026-03-29').since + 1).toBe(23 * 3600);
    const state = doc(nightly('2026-03-25', '2026-03-29'));
    const start = resolveStart('auto', day('2026-03-30').until, state, { lookbackDays: 1, fullRefresh: false });
    expect(DateTime.fromSeconds(start.since, { zone: PARIS }).toISO()).toBe('2026-03-29T00:00:00.000+01:00');
  });

  it('starts at an earlier window that failed or was interrupted, so nothing is missed', () => {
    const windows = days('2026-11-10', '2026-11-14');
    const state = doc([
      entry(windows[0] as Window, 'done', '2026-11-15T06:00'),
      entry(windows[1] as Window, 'failed', '2026-11-15T06:00'),
      entry(windows[2] as Window, 'done', '2026-11-15T06:00'),
      entry(windows[3] as Window, 'submitted', '2026-11-15T06:00'),
      entry(windows[4] as Window, 'done', '2026-11-15T06:00'),
    ]);
    expect(autoSince(state)).toBe(day('2026-11-11').since);
    expect(summary(planSteps(state, days('2026-11-11', '2026-11-16')))).toEqual([
      '2026-11-11 retry', '2026-11-12 skip', '2026-11-13 resume', '2026-11-14 skip', '2026-11-15 submit:new', '2026-11-16 submit:new',
    ]);
  });

  it('an old window that keeps failing is retried, but does not drag every later day into the lookback', () => {
    const state = doc(nightly('2026-11-10', '2026-11-19').map((e) => (e.untilUnix === day('2026-11-12').until ? { ...e, status: 'failed' as const } : e)));
    const start = resolveStart('auto', day('2026-11-20').until, state, { lookbackDays: 2, fullRefresh: false });
    expect(start.since).toBe(day('2026-11-12').since);
    expect(start.lookbackFrom).toBe(day('2026-11-18').since);
    expect(summary(planSteps(state, days('2026-11-12', '2026-11-20'), { lookbackFrom: start.lookbackFrom }))).toEqual([
      '2026-11-12 retry', '2026-11-13 skip', '2026-11-14 skip', '2026-11-15 skip', '2026-11-16 skip', '2026-11-17 skip',
      '2026-11-18 submit:lookback', '2026-11-19 submit:lookback', '2026-11-20 submit:new',
    ]);
  });

  it('starts at a done window whose file was deleted since, and plans it again', () => {
    const windows = days('2026-11-10', '2026-11-13');
    const state = doc(windows.map((w) => entry(w, 'done', '2026-11-15T06:00', { file: `/data/${w.since}.csv` })));
    const gone = `/data/${(windows[1] as Window).since}.csv`;
    const exists = (path: string) => path !== gone;
    expect(autoSince(state, () => true)).toBe(day('2026-11-14').since);
    expect(autoSince(state, exists)).toBe(day('2026-11-11').since);
    expect(summary(planSteps(state, days('2026-11-11', '2026-11-14'), { fileExists: exists }))).toEqual([
      '2026-11-11 submit:missing-file', '2026-11-12 skip', '2026-11-13 skip', '2026-11-14 submit:new',
    ]);
  });

  it('-o repeated: a window is settled while every output it is recorded in exists', () => {
    const windows = days('2026-11-10', '2026-11-12');
    const outputs = (w: Window) => [{ file: `/data/${w.since}.csv`, bytes: 100, sha256: 'a'.repeat(64) }, { file: `/data/${w.since}.parquet`, bytes: 90, sha256: 'b'.repeat(64), etag: null }];
    const state = doc(windows.map((w) => entry(w, 'done', '2026-11-15T06:00', { file: `/data/${w.since}.csv`, outputs: outputs(w) })));
    const gone = `/data/${(windows[1] as Window).since}.parquet`;
    expect(summary(planSteps(state, windows, { fileExists: (path) => path !== gone }))).toEqual(['2026-11-10 skip', '2026-11-11 submit:missing-file', '2026-11-12 skip']);
    expect(autoSince(state, (path) => path !== gone)).toBe(day('2026-11-11').since);
    // the outputs, in their order, are the request's: another set is another request
    const two = { ...REQUEST, outputs: ['/data/{side}-{since}.csv', '/data/{side}-{since}.parquet'] };
    expect(requestDifferences(two, two)).toEqual([]);
    expect(requestDifferences(two, { ...two, outputs: [...two.outputs].reverse() })).toEqual([
      'the outputs are /data/{side}-{since}.parquet, /data/{side}-{since}.csv here, /data/{side}-{since}.csv, /data/{side}-{since}.parquet in the state file',
    ]);
    expect(requestDifferences(REQUEST, two)).toHaveLength(1);
  });

  it('fetches again a window that was fetched before its period ended (today, partially)', () => {
    const state = doc([entry(day('2026-11-20'), 'done', '2026-11-20T15:00')]);
    expect(autoSince(state)).toBeUndefined();
    expect(summary(planSteps(state, [day('2026-11-20')]))).toEqual(['2026-11-20 submit:incomplete']);
  });

  it('is up to date when every window to --until is done (and does nothing)', () => {
    const state = doc(nightly('2026-11-10', '2026-11-19'));
    expect(resolveStart('auto', day('2026-11-19').until, state, { lookbackDays: 0, fullRefresh: false }).upToDate).toBe(true);
    expect(resolveStart('auto', day('2026-11-19').until, state, { lookbackDays: 1, fullRefresh: false }).upToDate).toBe(false);
  });

  // issue 21, item 5: a run killed with windows submitted planned them; the next one counts its
  // lookback from the end of that period, not from its last window done
  const planned = (first: string, last: string, at: string) => ({
    since: DateTime.fromSeconds(day(first).since, { zone: PARIS }).toISO() ?? '', until: DateTime.fromSeconds(day(last).until, { zone: PARIS }).toISO() ?? '',
    sinceUnix: day(first).since, untilUnix: day(last).until, at: new Date(ms(at)).toISOString(),
  });
  // night of the 25th: --lookback 3d planned 21..24 (21..23 again, 24 new), killed with all four submitted
  const killed = (withPlanned: boolean) => ({
    ...doc([...nightly('2026-11-10', '2026-11-20'), ...days('2026-11-21', '2026-11-24').map((w) => entry(w, 'submitted', '2026-11-25T03:00'))]),
    ...(withPlanned ? { planned: planned('2026-11-21', '2026-11-24', '2026-11-25T03:00') } : {}),
  });

  it('after a run killed with windows submitted, the lookback counts from the end of the period it planned', () => {
    const state = killed(true);
    // the same night, run again: the four are resumed, nothing older is submitted
    const again = resolveStart('auto', day('2026-11-24').until, state, { lookbackDays: 3, fullRefresh: false });
    expect(again).toEqual({ since: day('2026-11-21').since, lookbackFrom: day('2026-11-22').since, upToDate: false });
    expect(summary(planSteps(state, days('2026-11-21', '2026-11-24'), { lookbackFrom: again.lookbackFrom }))).toEqual([
      '2026-11-21 resume', '2026-11-22 resume', '2026-11-23 resume', '2026-11-24 resume',
    ]);
    // the next night: the four resumed, the 25th new
    const next = resolveStart('auto', day('2026-11-25').until, state, { lookbackDays: 3, fullRefresh: false });
    expect(next.since).toBe(day('2026-11-21').since);
    expect(summary(planSteps(state, days('2026-11-21', '2026-11-25'), { lookbackFrom: next.lookbackFrom }))).toEqual([
      '2026-11-21 resume', '2026-11-22 resume', '2026-11-23 resume', '2026-11-24 resume', '2026-11-25 submit:new',
    ]);
  });

  it('a state without a planned period (older files) keeps the rule of the last window done', () => {
    const state = killed(false);
    const again = resolveStart('auto', day('2026-11-24').until, state, { lookbackDays: 3, fullRefresh: false });
    // what the issue saw: three older days submitted again
    expect(again).toEqual({ since: day('2026-11-18').since, lookbackFrom: day('2026-11-18').since, upToDate: false });
  });

  it('a planned period older than the last window done (a backfill of old days) does not pull the lookback back', () => {
    const state = { ...doc(nightly('2026-11-10', '2026-11-19')), planned: planned('2026-01-01', '2026-01-31', '2026-11-20T10:00') };
    expect(resolveStart('auto', day('2026-11-20').until, state, { lookbackDays: 2, fullRefresh: false }).lookbackFrom).toBe(day('2026-11-18').since);
  });

  it('--since auto after a first run killed before any window was done starts at the period it planned', () => {
    const state = { ...doc(days('2026-11-01', '2026-11-03').map((w) => entry(w, 'submitted', '2026-11-04T03:00'))), planned: planned('2026-11-01', '2026-11-03', '2026-11-04T03:00') };
    expect(resolveStart('auto', day('2026-11-04').until, state, { lookbackDays: 0, fullRefresh: false }).since).toBe(day('2026-11-01').since);
  });

  it('refuses --since auto without a window done, or with --full-refresh', () => {
    for (const [state, fullRefresh] of [[undefined, false], [doc([]), false], [doc(nightly('2026-11-10', '2026-11-12')), true]] as const) {
      const error = (() => { try { resolveStart('auto', 0, state, { lookbackDays: 0, fullRefresh }); } catch (e) { return e; } })();
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).exitCode).toBe(EXIT.usage);
      expect((error as UsageError).hint).toMatch(/--since auto --start 2026-11-01/);
    }
  });

  it('--start is the first run\'s start (no run recorded, or --full-refresh), and nothing once a run is recorded', () => {
    const first = day('2026-11-05').since;
    const until = day('2026-11-12').until;
    expect(resolveStart('auto', until, undefined, { lookbackDays: 3, fullRefresh: false, start: first })).toEqual({ since: first, lookbackFrom: undefined, upToDate: false });
    const done = doc(nightly('2026-11-01', '2026-11-03'));
    expect(resolveStart('auto', until, done, { lookbackDays: 0, fullRefresh: false, start: first }).since).toBe(resolveStart('auto', until, done, { lookbackDays: 0, fullRefresh: false }).since);
    expect(resolveStart('auto', until, done, { lookbackDays: 0, fullRefresh: true, start: first }).since).toBe(first);
    expect(resolveStart('auto', day('2026-11-04').until, undefined, { lookbackDays: 0, fullRefresh: false, start: first }).upToDate).toBe(true);
  });

  it('--full-refresh submits every window', () => {
    const state = doc(nightly('2026-11-10', '2026-11-12'));
    expect(summary(planSteps(state, days('2026-11-10', '2026-11-12'), { fullRefresh: true }))).toEqual([
      '2026-11-10 submit:full-refresh', '2026-11-11 submit:full-refresh', '2026-11-12 submit:full-refresh',
    ]);
  });

  it('parses --lookback as days', () => {
    expect(parseLookback('3d')).toBe(3);
    expect(parseLookback('0')).toBe(0);
    for (const bad of ['3h', '-1d', 'x', '400d', '1.5d']) expect(() => parseLookback(bad)).toThrow(/--lookback wants a number of days/);
  });
});

describe('planning windows', () => {
  const done = (w: Window, extra: Partial<StateEntry> = {}) => entry(w, 'done', '2026-11-21T06:00', extra);

  it('resumes a submitted window by its report ID', () => {
    const steps = planSteps(doc([done(day('2026-11-18')), entry(day('2026-11-19'), 'submitted', '2026-11-20T06:00')]), days('2026-11-18', '2026-11-20'));
    expect(steps[1]).toMatchObject({ action: 'resume', reportId: `r${day('2026-11-19').since}` });
    expect(summary(steps)).toEqual(['2026-11-18 skip', '2026-11-19 resume', '2026-11-20 submit:new']);
  });

  it('uses the pieces a window was split into', () => {
    const week: Window = { since: day('2026-11-16').since, until: day('2026-11-22').until };
    const first: Window = { since: week.since, until: day('2026-11-18').until };
    const second: Window = { since: day('2026-11-19').since, until: week.until };
    const steps = planSteps(doc([done(first), entry(second, 'submitted', '2026-11-23T06:00')]), [week]);
    expect(steps.map((step) => [step.action, step.window])).toEqual([['skip', first], ['resume', second]]);
    // a hole among the pieces: the window is requested whole
    expect(planSteps(doc([done(first)]), [week])).toEqual([{ action: 'submit', window: week, reason: 'new' }]);
  });

  it('skips a day inside a larger window done with another --chunk', () => {
    const week: Window = { since: day('2026-11-09').since, until: day('2026-11-15').until };
    expect(summary(planSteps(doc([done(week)]), days('2026-11-14', '2026-11-16')))).toEqual([
      '2026-11-14 skip', '2026-11-15 skip', '2026-11-16 submit:new',
    ]);
  });

  it('fetches again a done window whose file was deleted', () => {
    const state = doc([done(day('2026-11-18'), { file: '/data/a.csv' }), done(day('2026-11-19'), { file: '/data/b.csv' })]);
    expect(summary(planSteps(state, days('2026-11-18', '2026-11-19'), { fileExists: (path) => path === '/data/a.csv' }))).toEqual([
      '2026-11-18 skip', '2026-11-19 submit:missing-file',
    ]);
  });

  it('with one merged output, fetches every window as soon as one must be fetched', () => {
    const state = doc([done(day('2026-11-18')), entry(day('2026-11-19'), 'submitted', '2026-11-20T06:00')]);
    expect(summary(planSteps(state, days('2026-11-18', '2026-11-20'), { merged: true }))).toEqual([
      '2026-11-18 submit:merged', '2026-11-19 resume', '2026-11-20 submit:new',
    ]);
    expect(summary(planSteps(doc([done(day('2026-11-18'))]), [day('2026-11-18')], { merged: true }))).toEqual(['2026-11-18 skip']);
  });
});

describe('the state file', () => {
  const now = () => ms('2026-11-21T06:00');

  it('records each window as it goes, atomically, in the documented shape (read by Python)', async () => {
    const dir = tempDir();
    const path = join(dir, 'nightly.state.json');
    const file = join(dir, 'buyer-2026-11-19.csv');
    writeFileSync(file, 'date,displays\n');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    const [first, second] = days('2026-11-19', '2026-11-20') as [Window, Window];
    await state.pending([first, second]);
    await state.submitted(first, '5f0c01');
    await state.done(first, { rows: 12, bytes: 3456, sha256: 'b'.repeat(64), file });
    await state.submitted(second, '5f0c02');
    await state.failed(second, 'too much data');
    await state.close();

    const python = execFileSync('python3', ['-c', `
import json, sys
doc = json.load(open(sys.argv[1]))
print(doc["version"], doc["request"]["side"], ",".join(doc["request"]["metrics"]), doc["request"]["output"])
for w in doc["windows"]:
    print(w["since"], w["until"], w["sinceUnix"], w["untilUnix"], w["status"], w["reportId"], w["attempts"], w["rows"], w["bytes"], w["file"], w["error"], w["submittedAt"] is not None, w["finishedAt"] is not None)
`, path], { encoding: 'utf8' });
    expect(python.trim().split('\n')).toEqual([
      '2 buyer displays,clicks /data/{side}-{since}.csv',
      `2026-11-19T00:00:00+01:00 2026-11-19T23:59:59+01:00 ${first.since} ${first.until} done 5f0c01 1 12 3456 ${file} None True True`,
      `2026-11-20T00:00:00+01:00 2026-11-20T23:59:59+01:00 ${second.since} ${second.until} failed 5f0c02 1 None None None too much data True True`,
    ]);
    // the next run reads it back and plans from it
    const next = await RunState.open(path, REQUEST, { now, host: HOST });
    expect(summary(next.plan([first, second]))).toEqual(['2026-11-19 skip', '2026-11-20 retry']);
    await next.submitted(second, '5f0c03');
    expect(next.entry(second)).toMatchObject({ status: 'submitted', reportId: '5f0c03', attempts: 2, error: null });
    await next.close();
  });

  it('days inside a week recorded with another --chunk are not recorded again', async () => {
    const path = join(tempDir(), 'w.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    const week: Window = { since: day('2026-11-09').since, until: day('2026-11-15').until };
    await state.submitted(week, 'w');
    await state.done(week, { rows: 1, bytes: 1, sha256: null, file: null });
    await state.pending(days('2026-11-14', '2026-11-16'));
    expect(state.doc.windows.map((w) => `${w.since.slice(0, 10)}..${w.until.slice(0, 10)} ${w.status}`)).toEqual([
      '2026-11-09..2026-11-15 done', '2026-11-16..2026-11-16 pending',
    ]);
    expect(autoSince(state.doc)).toBe(day('2026-11-16').since);
    await state.close();
  });

  it('the windows planned are written with the first intent (one write fewer), or at the end if no write comes', async () => {
    const path = join(tempDir(), 'planned.json');
    const [first, second] = days('2026-11-19', '2026-11-20') as [Window, Window];
    const period: Window = { since: first.since, until: second.until };
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending([first, second], period, true);
    expect(() => readFileSync(path)).toThrowError(/ENOENT/);
    await state.submitting(first);
    const written = readState(path);
    expect(written?.windows.map((w) => [w.since.slice(0, 10), w.status, w.submitting !== null && w.submitting !== undefined])).toEqual([
      ['2026-11-19', 'pending', true], ['2026-11-20', 'pending', false],
    ]);
    expect(written?.planned?.sinceUnix).toBe(period.since);
    await state.close();

    // a run stopped before any submit: the plan is written as the state closes
    const other = join(tempDir(), 'stopped.json');
    const stopped = await RunState.open(other, REQUEST, { now, host: HOST });
    await stopped.pending([first, second], period, true);
    await stopped.close();
    expect(readState(other)?.windows.map((w) => w.status)).toEqual(['pending', 'pending']);
    expect(readState(other)?.planned?.untilUnix).toBe(period.until);
  });

  it('a split replaces the window by its two halves', async () => {
    const path = join(tempDir(), 's.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    const week: Window = { since: day('2026-11-16').since, until: day('2026-11-22').until };
    const halves: [Window, Window] = [{ since: week.since, until: day('2026-11-19').until }, { since: day('2026-11-20').since, until: week.until }];
    await state.submitted(week, 'big');
    await state.split(week, halves);
    await state.close();
    expect(readState(path)?.windows.map((w) => [w.sinceUnix, w.untilUnix, w.status])).toEqual([
      [halves[0].since, halves[0].until, 'pending'], [halves[1].since, halves[1].until, 'pending'],
    ]);
  });

  it('refuses a state file written for another request, saying what differs', async () => {
    const path = join(tempDir(), 'nightly.state.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending([day('2026-11-20')]);
    await state.close();
    const other: StateRequest = { ...REQUEST, metrics: ['displays'], filters: { campaignId: ['7', '42'] }, format: 'ndjson' };
    await expect(RunState.open(path, other, { now, host: HOST })).rejects.toThrowError(
      expect.objectContaining({
        exitCode: EXIT.usage,
        message: `the state file ${path} was written for another request: metrics are displays here, displays,clicks in the state file; the format is ndjson here, csv in the state file`,
        hint: expect.stringMatching(/--full-refresh/),
      }),
    );
    // the refusal released the lock, and --full-refresh starts the file over for the new request
    const fresh = await RunState.open(path, other, { now, host: HOST, fullRefresh: true });
    expect(fresh.doc.windows).toEqual([]);
    await fresh.update(day('2026-11-20'), {});
    await fresh.close();
    expect(readState(path)?.request.format).toBe('ndjson');
  });

  it('a state file that cannot be written is a one-line error (exit 1), not a crash', async () => {
    const dir = tempDir();
    const notAFolder = join(dir, 'file');
    writeFileSync(notAFolder, '');
    await expect(RunState.open(join(notAFolder, 'state.json'), REQUEST, { now, host: HOST })).rejects.toThrowError(
      expect.objectContaining({ exitCode: EXIT.internal, message: expect.stringMatching(/^cannot lock .*state\.json: E/) }),
    );
    // its folder replaced by a file while the run goes on
    const folder = join(dir, 'states');
    const state = await RunState.open(join(folder, 'state.json'), REQUEST, { now, host: HOST });
    await state.pending([day('2026-11-20')]);
    rmSync(folder, { recursive: true });
    writeFileSync(folder, '');
    await expect(state.submitted(day('2026-11-20'), 'x')).rejects.toMatchObject({ exitCode: EXIT.internal, message: expect.stringMatching(/^cannot write the state file /) });
    await state.close();
    expect(() => readFileSync(join(folder, 'state.json.lock'))).toThrow();
  });

  it('explains every kind of difference', () => {
    expect(requestDifferences(REQUEST, { ...REQUEST, side: 'seller', breakdowns: ['COUNTRY', 'DAILY'], filters: {}, params: { timezone: 'UTC' }, output: null })).toEqual([
      'the side is seller here, buyer in the state file',
      'breakdowns are COUNTRY,DAILY here, DAILY,COUNTRY in the state file',
      'filter campaignId is (not set) here, 42,7 in the state file',
      '--param timezone is UTC here, (not set) in the state file',
      'the output is (stdout) here, /data/{side}-{since}.csv in the state file',
    ]);
  });

  it('buyer\'s `requests`, which no buyer row carries, is no difference: a state of the old default goes on', () => {
    expect(requestDifferences({ ...REQUEST, metrics: ['requests', 'displays', 'clicks'] }, REQUEST)).toEqual([]);
    expect(requestDifferences({ ...REQUEST, metrics: ['requests', 'displays'] }, REQUEST)).toEqual(['metrics are displays,clicks here, displays in the state file']);
    // a seller row carries requests: there it is a column, and a difference
    const seller = { ...REQUEST, side: 'seller' as const };
    expect(requestDifferences({ ...seller, metrics: ['requests', 'displays', 'clicks'] }, seller)).toEqual(['metrics are displays,clicks here, requests,displays,clicks in the state file']);
  });

  it('a buyer state of the old default metrics (with requests) and every column is still refused with the requested columns', () => {
    // requests changes no column: the columns are compared, not taken as following from other metrics
    const differences = requestDifferences({ ...REQUEST, metrics: ['requests', 'displays', 'clicks'], columns: null }, { ...REQUEST, columns: ['date', 'country', 'displays', 'clicks'] });
    expect(differences).toEqual(['--columns are date,country,displays,clicks here, every column in the state file']);
  });

  it('a corrupt file, another kind of file or a newer version is a usage error, never a crash', async () => {
    const dir = tempDir();
    const cases: [string, RegExp][] = [
      ['{"version":1,"windows":[', /is not valid JSON/],
      ['[1,2,3]', /is not a reporting state file \(version 2\)/],
      [JSON.stringify({ ...doc([]), windows: [{ since: 'x' }] }), /windows\.0\.until/],
      [JSON.stringify({ ...doc([]), version: 3 }), /format version 3, written by a newer reporting; this one reads version 2/],
      [JSON.stringify(doc([entry(day('2026-11-10'), 'submitted', '2026-11-11T06:00', { reportId: '../../etc' })])), /windows\.0\.reportId: not a usable report ID/],
      ['null', /is not a reporting state file/],
    ];
    for (const [text, message] of cases) {
      const path = join(dir, 'state.json');
      writeFileSync(path, text);
      expect(() => readState(path)).toThrowError(message);
      await expect(RunState.open(path, REQUEST, { now, host: HOST })).rejects.toThrowError(UsageError);
      // never left locked, nor rewritten
      expect(readFileSync(path, 'utf8')).toBe(text);
      await (await RunState.open(path, REQUEST, { now, host: HOST, fullRefresh: true })).close();
    }
  });
});

describe('the docs (docs/recurring.md)', () => {
  const page = readFileSync(new URL('../../docs/recurring.md', import.meta.url), 'utf8');

  it("documents a state file that this version reads, with every field of a window", () => {
    expect(page).toContain('\n## Format (version 2)\n');
    const section = page.slice(page.indexOf('\n## Format (version 2)\n'));
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const path = join(tempDir(), 'example.json');
    writeFileSync(path, example);
    const parsed = readState(path);
    expect(parsed?.windows[0]).toMatchObject({ status: 'done', sinceUnix: day('2026-11-20').since, untilUnix: day('2026-11-20').until });
    // the field table names every field of a window
    for (const field of Object.keys(parsed?.windows[0] ?? {})) expect(section).toContain(`\`${field}\``);
  });
});

