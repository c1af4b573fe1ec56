// Three consecutive nightly runs composed from the modules `run` is to wire (state, resume, files,
// log) against a sandbox whose last two days still move (--restate 2d): `--since auto
// --lookback 3d --chunk day`, one CSV per day. Every day is there once, the days that still move
// are rewritten, the re-fetched day that did not move keeps its file and mtime, and a run killed
// after submitting is resumed by report ID the next time. (This is also the wiring, in short.)

import { readFileSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { DEFAULT_GLOBALS, createFactory, type Factory } from '../../src/factory.js';
import { createLogger } from '../../src/engine/log.js';
import type { LogEvent } from '../../src/engine/events.js';
import { sinkReceiver } from '../../src/destinations/destination.js';
import { downloadInto } from '../../src/engine/download.js';
import { openFileSink } from '../../src/export/sink.js';
import { replaceIfChanged } from '../../src/fs/files.js';
import { startReport } from '../../src/engine/resume.js';
import { RunState, stateRequestOf } from '../../src/engine/state.js';
import type { Window } from '../../src/report/windows.js';
import { waitUntilReady } from '../../src/report/poll.js';
import { buildReportRequest, requestParams, type ReportRequest } from '../../src/report/request.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { FakeOutput, fakeContext } from '../helpers/ctx.js';
import { call, withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const PARIS = 'Europe/Paris';
const FIRST_NIGHT = DateTime.fromISO('2026-11-21T06:00:00', { zone: PARIS }).toMillis();
const DAY_MS = 86_400_000;
const LONG_AGO = new Date('2026-01-01T00:00:00Z');

function days(since: number, until: number): Window[] {
  const windows: Window[] = [];
  for (let day = DateTime.fromSeconds(since, { zone: PARIS }).startOf('day'); day.toSeconds() <= until; day = day.plus({ days: 1 })) {
    windows.push({ since: Math.floor(day.toSeconds()), until: Math.floor(day.endOf('day').toSeconds()) });
  }
  return windows;
}
const dateOf = (window: Window) => DateTime.fromSeconds(window.since, { zone: PARIS }).toISODate() ?? '';

interface Night {
  since: string;
  /** stop right after submitting this day's report (a kill while it waits) */
  killAfterSubmitting?: string;
}

async function nightlyRun(sandbox: Sandbox, dir: string, night: Night): Promise<LogEvent[]> {
  const { ctx } = fakeContext({ env: { REPORTING_TOKEN: sandbox.token, REPORTING_CONFIG_DIR: join(dir, 'config') }, cwd: dir });
  const f: Factory = createFactory({ ...ctx, now: () => sandbox.now() }, { ...DEFAULT_GLOBALS, baseUrl: sandbox.baseUrl, retries: 0 });
  const stderr = new FakeOutput();
  const events: LogEvent[] = [];
  const json = createLogger('json', { stderr, now: f.now }, { state() {}, waiting() {}, downloading() {}, stop() {}, note() {} });
  const emit = (event: LogEvent) => { events.push(event); json.emit(event); };

  const requestFor = (since: number): ReportRequest => buildReportRequest('buyer', {
    since: String(since), until: 'yesterday', metrics: ['displays', 'clicks'], breakdowns: ['DAILY', 'COUNTRY'], filters: {}, params: [], validate: true,
  }, f.now());
  const template = join(dir, 'out', 'buyer-{since}.csv');
  const shape = requestFor(0);
  const state = await RunState.open(join(dir, 'buyer.state.json'), stateRequestOf(shape, 'csv', template), { now: f.now, host: f.host });
  try {
    const start = state.start(night.since === 'auto' ? 'auto' : Math.floor(DateTime.fromISO(night.since, { zone: PARIS }).toSeconds()), shape.until, 3);
    if (start.upToDate) return events;
    const windows = days(start.since, shape.until);
    const steps = state.plan(windows, { lookbackFrom: start.lookbackFrom });
    await state.pending(windows);
    for (const step of steps) {
      const { window } = step;
      const target = template.replace('{since}', dateOf(window));
      if (step.action === 'skip') {
        emit({ event: 'skipped', window, reportId: step.entry.reportId ?? undefined, file: target, reason: 'done' });
        continue;
      }
      const request = { ...requestFor(window.since), since: window.since, until: window.until };
      const attempt = (step.entry?.attempts ?? 0) + 1;
      const started = await startReport(window, step.action === 'resume' ? { reportId: step.reportId, source: 'state' } : undefined, attempt, {
        submit: () => f.client().submit('buyer', requestParams(request)),
        status: (id) => f.client().status(id),
        emit,
        onSubmitted: (id) => state.submitted(window, id),
      });
      if (night.killAfterSubmitting === dateOf(window)) return events;
      const began = f.now();
      const ready = await waitUntilReady(f.client(), started.reportId, {
        maxWaitMs: 60_000, signal: f.signal, now: f.now, intervalMs: 1000,
        sleep: async (ms) => { sandbox.advance(ms); },
        onStatus: (status, polls, durationMs) => emit({ event: 'polled', window, reportId: started.reportId, status: status.status, polls, durationMs }),
      });
      emit({ event: 'ready', window, reportId: started.reportId, polls: 1, durationMs: f.now() - began });
      expect(ready.status).toBe('ready');
      // downloaded beside the target, then put in its place only if the content changed
      const fetched = `${target}.fetched`;
      const { receiver, result: saved } = await downloadInto(f.client(), started.reportId, {
        retries: 0, signal: f.signal, random: f.random,
        open: async () => sinkReceiver(await openFileSink(fetched, { cwd: dir, host: f.host }), 'csv', { delimiter: ',', bom: false, excel: false }),
      });
      await receiver.sink.commit();
      const placed = await replaceIfChanged(fetched, target);
      emit({ event: placed.outcome, window, reportId: started.reportId, file: target, rows: saved.rows, bytes: placed.bytes, sha256: placed.sha256 });
      await state.done(window, { rows: saved.rows, bytes: placed.bytes, sha256: placed.sha256, file: target });
    }
    return events;
  } finally {
    await state.close();
    await f.close();
  }
}

const summary = (events: LogEvent[]) => events
  .filter((event) => ['skipped', 'resumed', 'written', 'unchanged'].includes(event.event) || (event.event === 'submitted' && event.replaces))
  .map((event) => `${dateOf(event.window)} ${event.event}`);

describe('three nightly runs with --since auto --lookback 3d against late numbers', () => {
  it('never miss a day, never duplicate one, rewrite what moved, leave what did not', async () => {
    const dir = tempDir();
    let clock = FIRST_NIGHT;
    await withSandbox({ readyDelayMs: 1, restateMs: 2 * DAY_MS, reportTtlMs: 6 * 3_600_000, now: () => clock }, async (sandbox) => {
      const next = () => { clock = FIRST_NIGHT + Math.ceil((sandbox.now() - FIRST_NIGHT) / DAY_MS) * DAY_MS; };
      const out = join(dir, 'out');

      // night 1 (Nov 21): the first run says where to start
      expect(summary(await nightlyRun(sandbox, dir, { since: '2026-11-16' }))).toEqual([
        '2026-11-16 written', '2026-11-17 written', '2026-11-18 written', '2026-11-19 written', '2026-11-20 written',
      ]);
      for (const name of readdirSync(out)) utimesSync(join(out, name), LONG_AGO, LONG_AGO);

      // night 2 (Nov 22): starts at Nov 18, as the lookback re-fetches Nov 18-20. Nov 18 did not
      // move; Nov 19 still moved last night (the two days before Nov 21 06:00) and has its final
      // numbers now; Nov 20 still moves (the two days before Nov 22 06:00)
      next();
      const second = await nightlyRun(sandbox, dir, { since: 'auto' });
      expect(summary(second)).toEqual([
        '2026-11-18 unchanged', '2026-11-19 written', '2026-11-20 written', '2026-11-21 written',
      ]);
      expect(second.filter((e) => e.event === 'submitted').map((e) => dateOf(e.window))).toEqual(['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21']);
      for (const day of ['16', '17', '18']) expect(statSync(join(out, `buyer-2026-11-${day}.csv`)).mtime, day).toEqual(LONG_AGO);
      for (const day of ['19', '20']) expect(statSync(join(out, `buyer-2026-11-${day}.csv`)).mtime, day).not.toEqual(LONG_AGO);

      // night 3 (Nov 23): killed while Nov 21's report is in progress; started again, it resumes that report
      next();
      const killed = await nightlyRun(sandbox, dir, { since: 'auto', killAfterSubmitting: '2026-11-21' });
      expect(killed.filter((e) => e.event === 'submitted').map((e) => dateOf(e.window))).toEqual(['2026-11-19', '2026-11-20', '2026-11-21']);
      const submittedBefore = sandbox.reports().length;
      const resumed = await nightlyRun(sandbox, dir, { since: 'auto' });
      // Nov 21 is not done any more (its re-fetch was interrupted): the run starts there, and
      // looks back three days from it, to Nov 18
      expect(summary(resumed)).toEqual([
        '2026-11-18 unchanged', '2026-11-19 unchanged', '2026-11-20 unchanged', '2026-11-21 resumed', '2026-11-21 written', '2026-11-22 written',
      ]);
      // Nov 21 polled and downloaded, not submitted again; Nov 22 submitted once
      const after = sandbox.reports().slice(submittedBefore);
      expect(after.map((report) => DateTime.fromSeconds(report.since, { zone: PARIS }).toISODate())).toEqual(['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-22']);
      const nov21 = sandbox.reports().filter((report) => DateTime.fromSeconds(report.since, { zone: PARIS }).toISODate() === '2026-11-21');
      // submitted by the killed run; then the resuming run's status check, its wait, its download
      expect(nov21.at(-1)?.events.map((e) => e.kind)).toEqual(['submit', 'status', 'status', 'download']);

      // an explicit --since on the same morning: what is done and outside the lookback is skipped
      expect(summary(await nightlyRun(sandbox, dir, { since: '2026-11-16' }))).toEqual([
        '2026-11-16 skipped', '2026-11-17 skipped', '2026-11-18 skipped', '2026-11-19 skipped',
        '2026-11-20 unchanged', '2026-11-21 written', '2026-11-22 written',
      ]);

      // every day once, each file the latest numbers: what a fresh report of that day says now
      expect(readdirSync(out).sort()).toEqual(['16', '17', '18', '19', '20', '21', '22'].map((d) => `buyer-2026-11-${d}.csv`));
      const state = JSON.parse(readFileSync(join(dir, 'buyer.state.json'), 'utf8')) as { windows: { since: string; status: string; file: string }[] };
      expect(state.windows.map((w) => `${w.since.slice(0, 10)} ${w.status}`)).toEqual(['16', '17', '18', '19', '20', '21', '22'].map((d) => `2026-11-${d} done`));
      for (const name of readdirSync(out)) {
        const date = name.slice(6, 16);
        const rows = parse(readFileSync(join(out, name), 'utf8'), { columns: true }) as Record<string, string>[];
        expect(new Set(rows.map((row) => row.date)), name).toEqual(new Set([date]));
        expect(new Set(rows.map((row) => `${row.date} ${row.country}`)).size, `${name}: no duplicated row`).toBe(rows.length);
        if (date >= '2026-11-21') continue; // still moving: any fresh report differs again
        const day = days(Math.floor(DateTime.fromISO(date, { zone: PARIS }).toSeconds()), Math.floor(DateTime.fromISO(date, { zone: PARIS }).toSeconds()))[0] as Window;
        const submitted = await call(sandbox, '/buyer-reporting', { form: { since: day.since, until: day.until, metrics: 'displays,clicks', breakdowns: ['DAILY', 'COUNTRY'] } });
        sandbox.advance(1000);
        const fresh = await call(sandbox, '/download-reporting', { form: { id: submitted.json.response.report_id } });
        const expected = (fresh.json.data as Record<string, unknown>[]).map((row) => `${row.country} ${row.displays} ${row.clicks}`);
        expect(rows.map((row) => `${row.country} ${row.displays} ${row.clicks}`), `${name} holds the final numbers`).toEqual(expected);
      }
    });
  });
});
