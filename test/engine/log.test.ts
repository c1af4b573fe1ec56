import { DateTime } from 'luxon';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Secrets } from '../../src/api/redact.js';
import { createLogger, eventText, LOG_VERSION, serverText } from '../../src/engine/log.js';
import type { LogEvent } from '../../src/engine/events.js';
import type { Reporter } from '../../src/io/progress.js';
import type { Window } from '../../src/report/windows.js';
import { FakeOutput, FIXED_NOW } from '../helpers/ctx.js';

const TOKEN = '0123456789abcdef0123456789abcdef01234567';
const secrets = new Secrets();
secrets.add(TOKEN);

// the autumn DST day, 25 hours: 2026-10-25 00:00 +02:00 .. 23:59:59 +01:00
const paris = (iso: string) => Math.floor(DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toSeconds());
const DAY: Window = { since: paris('2026-10-25T00:00:00'), until: paris('2026-10-25T23:59:59') };
const NOON = paris('2026-10-25T12:00:00');
const HALVES: [Window, Window] = [{ since: DAY.since, until: NOON - 1 }, { since: NOON, until: DAY.until }];
const hostile = `too much data\u001b[31m\r\n\u009b2J token=${TOKEN} {"token":"${TOKEN}"}`;

/** One event of each kind, as a run emits them. */
const EVENTS: LogEvent[] = [
  { event: 'submitted', window: DAY, reportId: 'r1', attempt: 1 },
  { event: 'submitted', window: DAY, reportId: 'r2', attempt: 2, replaces: 'r0' },
  { event: 'resumed', window: DAY, reportId: 'r1', source: 'state' },
  { event: 'polled', window: DAY, reportId: 'r1', status: 'progress', polls: 3, durationMs: 4200 },
  { event: 'ready', window: DAY, reportId: 'r1', polls: 4, durationMs: 6100 },
  { event: 'failed', window: DAY, reportId: 'r1', attempt: 1, message: hostile, durationMs: 900 },
  { event: 'split', window: DAY, reportId: 'r1', into: HALVES, message: hostile },
  { event: 'retried', window: DAY, reportId: 'r1', attempt: 2, message: 'connection reset', delayMs: 500 },
  { event: 'download_started', window: DAY, reportId: 'r1', attempt: 1, file: '/data/buyer-2026-10-25.csv' },
  { event: 'download_done', window: DAY, reportId: 'r1', rows: 1234, bytes: 56789, durationMs: 800 },
  { event: 'written', window: DAY, reportId: 'r1', file: '/data/buyer-2026-10-25.csv', rows: 1234, bytes: 40000, sha256: 'c'.repeat(64) },
  { event: 'unchanged', window: DAY, reportId: 'r1', file: '/data/buyer-2026-10-25.csv', rows: 1234, bytes: 40000, sha256: 'c'.repeat(64) },
  { event: 'skipped', window: DAY, reportId: 'r1', file: '/data/buyer-2026-10-25.csv', reason: 'done' },
];

function recorder(): { reporter: Reporter; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    reporter: {
      state: (line) => calls.push(`state ${line}`),
      waiting: (status, polls, elapsed) => calls.push(`waiting ${status} ${polls} ${elapsed}`),
      downloading: (rows, bytes) => calls.push(`downloading ${rows} ${bytes}`),
      stop: () => calls.push('stop'),
      note: (line) => calls.push(`note ${line}`),
    },
  };
}

describe('--log-format json', () => {
  const stderr = new FakeOutput();
  const logger = createLogger('json', { stderr, now: () => FIXED_NOW, secrets }, recorder().reporter);
  for (const event of EVENTS) logger.emit(event);
  logger.downloading(10, 100);
  const lines = stderr.text.split('\n').slice(0, -1);

  it('writes one JSON object per line for every event, and nothing else', () => {
    expect(stderr.text.endsWith('\n')).toBe(true);
    expect(lines).toHaveLength(EVENTS.length);
    for (const [i, line] of lines.entries()) {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      expect(parsed).toMatchObject({ v: LOG_VERSION, ts: '2026-11-21T11:00:00.000Z', event: EVENTS[i]?.event });
    }
  });

  it('writes the server\'s bidi controls and line separators as \\u escapes; the line parses back to them (issue 20, item 8)', () => {
    const out = new FakeOutput();
    const bidi = 'exe.\u202etxt\u2066\u200f\u061c\u2028\u2029.pdf';
    createLogger('json', { stderr: out, now: () => FIXED_NOW, secrets }, recorder().reporter)
      .emit({ event: 'polled', window: DAY, reportId: `r\u202e1`, status: `in${bidi}progress`, polls: 1, durationMs: 1 });
    expect(out.text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]/);
    expect(out.text).toContain('"status":"inexe.\\u202etxt\\u2066\\u200f\\u061c\\u2028\\u2029.pdfprogress"');
    expect(JSON.parse(out.text)).toMatchObject({ reportId: 'r\u202e1', status: `in${bidi}progress` });
  });

  it('gives the window with its Paris offsets and Unix seconds, and the typed fields', () => {
    const [submitted, resubmitted, , polled, , , split, , , done, written] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(submitted).toEqual({
      v: 1, ts: '2026-11-21T11:00:00.000Z', event: 'submitted',
      window: { since: '2026-10-25T00:00:00+02:00', until: '2026-10-25T23:59:59+01:00', sinceUnix: DAY.since, untilUnix: DAY.until },
      reportId: 'r1', attempt: 1,
    });
    expect(resubmitted).toMatchObject({ reportId: 'r2', replaces: 'r0', attempt: 2 });
    expect(polled).toMatchObject({ status: 'progress', polls: 3, durationMs: 4200 });
    expect((split?.into as { since: string }[]).map((w) => w.since)).toEqual(['2026-10-25T00:00:00+02:00', '2026-10-25T12:00:00+01:00']);
    expect(done).toMatchObject({ rows: 1234, bytes: 56789, durationMs: 800 });
    expect(written).toMatchObject({ file: '/data/buyer-2026-10-25.csv', sha256: 'c'.repeat(64) });
  });

  it('never holds a secret nor a control character, even when the server sends them', () => {
    expect(DAY.until - DAY.since + 1).toBe(25 * 3600);
    expect(stderr.text).not.toContain(TOKEN);
    const failed = JSON.parse(lines[5] as string) as { message: string };
    expect(failed.message).toBe('too much data [31m 2J token=*** {"token":"***"}');
    for (const line of lines) expect(JSON.stringify(JSON.parse(line))).not.toMatch(/\\u00(1b|9b)|\\r/);
    expect(serverText('x'.repeat(400))).toHaveLength(300);
  });

  it('a run can be reconstructed from it: each report from submit to its file', () => {
    const byReport = new Map<string, string[]>();
    for (const line of lines) {
      const { event, reportId } = JSON.parse(line) as { event: string; reportId?: string };
      if (reportId) byReport.set(reportId, [...(byReport.get(reportId) ?? []), event]);
    }
    expect(byReport.get('r1')?.slice(0, 3)).toEqual(['submitted', 'resumed', 'polled']);
    expect(byReport.get('r1')).toContain('written');
  });
});

describe('text logs', () => {
  it('go through the Reporter as `run` always printed them', () => {
    const { reporter, calls } = recorder();
    const logger = createLogger('text', { stderr: new FakeOutput(), now: () => FIXED_NOW, secrets }, reporter);
    for (const event of EVENTS) logger.emit(event);
    logger.downloading(10, 100);
    logger.stop();
    expect(calls).toEqual([
      'state 2026-10-25: submitted report r1',
      'state 2026-10-25: report r0 is no longer known to the server; submitted report r2 instead',
      'state 2026-10-25: resumed report r1, submitted by an earlier run (from the state file); not submitting a new one',
      'waiting progress 3 4200',
      'state 2026-10-25: report r1 ready after 4 polls (6.1s)',
      'state 2026-10-25: report r1 failed: too much data [31m 2J token=*** {"token":"***"}',
      'state 2026-10-25: report r1 failed (too much data [31m 2J token=*** {"token":"***"}); splitting into 2026-10-25T00:00:00+02:00..2026-10-25T11:59:59+01:00 and 2026-10-25T12:00:00+01:00..2026-10-25T23:59:59+01:00',
      'state 2026-10-25: connection reset; retrying (attempt 2)',
      'state 2026-10-25: downloading report r1 to /data/buyer-2026-10-25.csv',
      'state 2026-10-25: downloaded 1,234 rows, 57 kB of JSON in 800ms',
      'state 2026-10-25: wrote 1,234 rows to /data/buyer-2026-10-25.csv',
      'state 2026-10-25: /data/buyer-2026-10-25.csv unchanged (same content, left untouched)',
      'state 2026-10-25: skipped, already done (/data/buyer-2026-10-25.csv)',
      'downloading 10 100',
      'stop',
    ]);
    expect(eventText({ event: 'resumed', window: { since: DAY.since, until: HALVES[1].until + 86400 }, reportId: 'j', source: 'journal' }))
      .toBe('2026-10-25..2026-10-26: resumed report j, submitted by an earlier run (from the journal); not submitting a new one');
  });

  it('for a run of one window, read as `run` has always printed them', () => {
    const { reporter, calls } = recorder();
    const logger = createLogger('text', { stderr: new FakeOutput(), now: () => FIXED_NOW, secrets }, reporter, { side: 'buyer', period: false });
    const id = '0123456789abcdef01234567';
    logger.emit({ event: 'submitted', window: DAY, reportId: id, attempt: 1 });
    logger.emit({ event: 'ready', window: DAY, reportId: id, polls: 3, durationMs: 2140 });
    logger.emit({ event: 'download_started', window: DAY, reportId: id, attempt: 1, file: 'out.csv' });
    logger.emit({ event: 'resumed', window: DAY, reportId: id, source: 'journal' });
    // the lines test/e2e/run.test.ts expects of `run` today
    expect(calls).toEqual([
      `state submitted buyer report ${id}`,
      `state report ${id} ready after 3 polls (2.1s)`,
      `state downloading report ${id} to out.csv`,
      `state resumed buyer report ${id}, submitted by an earlier run (from the journal); not submitting a new one`,
    ]);
  });
});

describe('the docs (docs/exit-codes-and-logs.md)', () => {
  it('documents every event, and its example lines are what the logger writes', () => {
    const page = readFileSync(new URL('../../docs/exit-codes-and-logs.md', import.meta.url), 'utf8');
    expect(page).toContain('\n## JSON logs\n');
    const section = page.slice(page.indexOf('\n## JSON logs\n'));
    for (const event of new Set(EVENTS.map((e) => e.event))) expect(section).toContain(`\`${event}\``);
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1]?.trim().split('\n') ?? [];
    expect(example.length).toBeGreaterThan(0);
    for (const line of example) {
      const parsed = JSON.parse(line) as { v: number; event: string; window: { sinceUnix: number; untilUnix: number } };
      const stderr = new FakeOutput();
      const { v, ts, event, window, ...fields } = parsed as unknown as Record<string, unknown>;
      const w = window as { sinceUnix: number; untilUnix: number };
      createLogger('json', { stderr, now: () => Date.parse(ts as string), secrets }, recorder().reporter)
        .emit({ event, window: { since: w.sinceUnix, until: w.untilUnix }, ...fields } as LogEvent);
      expect(v).toBe(LOG_VERSION);
      expect(stderr.text).toBe(`${line}\n`);
    }
  });
});

