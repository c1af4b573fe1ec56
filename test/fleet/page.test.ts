// The page of `jobs status --html` (issue 32, item 6), as pure functions: which days it shows,
// what each day's cell says from the state's windows, and that nothing from a state or a job file
// becomes markup. The end-to-end tests (test/e2e/jobs-status-html.test.ts) run it against the
// sandbox and in Chromium.

import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { dayCells, escapeHtml, pageDays, statusPage, type Day } from '../../src/fleet/page.js';
import { jobStatus } from '../../src/fleet/status.js';
import type { StateDoc, StateEntry } from '../../src/engine/state.js';

const PARIS = 'Europe/Paris';
const at = (iso: string) => Math.floor(DateTime.fromISO(iso, { zone: PARIS }).toSeconds());
const dayOf = (date: string): Day => ({ date, since: at(`${date}T00:00:00`), until: at(`${date}T23:59:59`) });

function entry(since: string, until: string, status: StateEntry['status'], extra: Partial<StateEntry> = {}): StateEntry {
  return {
    since, until, sinceUnix: at(since), untilUnix: at(until), status, reportId: null, submittedAt: null, attempts: 1, rows: 1, bytes: 10, sha256: null,
    file: null, finishedAt: '2026-11-23T05:00:00.000Z', error: null, ...extra,
  };
}
const doc = (windows: StateEntry[]) => ({ version: 2, createdAt: '', updatedAt: '', request: {}, windows }) as unknown as StateDoc;
const day = (date: string, status: StateEntry['status'], extra: Partial<StateEntry> = {}) => entry(`${date}T00:00:00`, `${date}T23:59:59`, status, extra);

describe('the days shown', () => {
  it('end on the last day of any period, never after today, and go back at most 31 days, not before the first', () => {
    const now = Date.parse('2026-11-29T08:00:00Z');
    expect(pageDays([{ since: at('2026-11-01T00:00:00'), until: at('2026-11-03T23:59:59') }], now).map((d) => d.date)).toEqual(['2026-11-01', '2026-11-02', '2026-11-03']);
    const long = pageDays([{ since: at('2026-01-01T00:00:00'), until: at('2027-03-01T23:59:59') }, undefined], now);
    expect(long).toHaveLength(31);
    expect([long[0]?.date, long.at(-1)?.date]).toEqual(['2026-10-30', '2026-11-29']);
    expect(pageDays([undefined], now).map((d) => d.date)).toEqual(['2026-11-29']);
  });

  it('are Paris days: the autumn change of offset makes one of 25 hours', () => {
    const days = pageDays([{ since: at('2026-10-24T00:00:00'), until: at('2026-10-26T23:59:59') }], Date.parse('2026-11-29T08:00:00Z'));
    expect(days.map((d) => [d.date, (d.until + 1 - d.since) / 3600])).toEqual([['2026-10-24', 24], ['2026-10-25', 25], ['2026-10-26', 24]]);
  });
});

describe("a day's cell", () => {
  const days = ['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23'].map(dayOf);
  const period = { since: at('2026-11-19T00:00:00'), until: at('2026-11-22T23:59:59') };

  it('done, unchanged, failed (with its error), in progress (with its report), missing, and outside the period', () => {
    const cells = dayCells(doc([
      day('2026-11-19', 'done'), day('2026-11-20', 'done', { unchanged: true }), day('2026-11-21', 'failed', { error: 'report failed: quota' }),
      day('2026-11-22', 'submitted', { reportId: 'abc123' }),
    ]), period, days, false);
    expect(cells).toEqual([
      { date: '2026-11-18', kind: 'outside' }, { date: '2026-11-19', kind: 'done' }, { date: '2026-11-20', kind: 'unchanged' },
      { date: '2026-11-21', kind: 'failed', detail: 'report failed: quota' }, { date: '2026-11-22', kind: 'progress', detail: 'report abc123' }, { date: '2026-11-23', kind: 'outside' },
    ]);
  });

  it('a day of hourly windows: missing while an hour is not done, failed if one failed, done when every hour is', () => {
    const hours = (date: string, upTo: number) => Array.from({ length: upTo }, (_, h) => entry(`${date}T${String(h).padStart(2, '0')}:00:00`, `${date}T${String(h).padStart(2, '0')}:59:59`, 'done'));
    const cells = dayCells(doc([...hours('2026-11-19', 24), ...hours('2026-11-20', 23), ...hours('2026-11-21', 5), entry('2026-11-21T05:00:00', '2026-11-21T05:59:59', 'failed')]), period, days, false);
    expect(cells.slice(1, 4).map((c) => c.kind)).toEqual(['done', 'missing', 'failed']);
  });

  it('a week-long window makes each of its days; a pending window is in progress only while a run holds the lock', () => {
    const week = entry('2026-11-16T00:00:00', '2026-11-22T23:59:59', 'done');
    expect(dayCells(doc([week]), period, days, false).map((c) => c.kind)).toEqual(['done', 'done', 'done', 'done', 'done', 'outside']);
    const pending = doc([day('2026-11-19', 'pending')]);
    expect(dayCells(pending, period, days, false)[1]?.kind).toBe('missing');
    expect(dayCells(pending, period, days, true)[1]?.kind).toBe('progress');
  });

  it('a day done by a merged window and by an unchanged one is done (unchanged only when every window over it is)', () => {
    const cells = dayCells(doc([entry('2026-11-19T00:00:00', '2026-11-19T11:59:59', 'done', { unchanged: true }), entry('2026-11-19T12:00:00', '2026-11-19T23:59:59', 'done')]), period, days, false);
    expect(cells[1]?.kind).toBe('done');
  });
});

describe('the page', () => {
  it('escapes every text from the job file and the state: a job named <script>, an error with markup and quotes', () => {
    const hostile = '<script>alert("x")</script>';
    const state = doc([day('2026-11-19', 'failed', { error: `</td><img src=x onerror=alert(1)> & "it's"` })]);
    const status = jobStatus({ job: hostile, profile: '<b>p</b>', state: '/s/<i>.json', doc: state, toFetch: 1, now: Date.parse('2026-11-23T05:00:00Z'), error: 'bad <state>' });
    const page = statusPage({ jobs: [{ status, cells: dayCells(state, undefined, [dayOf('2026-11-19')], false) }], days: [dayOf('2026-11-19')], file: '<x>.yaml', now: Date.parse('2026-11-23T05:00:00Z'), version: '1.0.0' });
    expect(page).not.toContain('<script');
    expect(page).not.toContain('<img');
    expect(page).not.toContain('<b>p</b>');
    expect(page).not.toContain('<i>');
    expect(page).not.toContain('<x>');
    expect(page).not.toContain('<state>');
    expect(page).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;');
    expect(page).toContain('&#60;/td&#62;&#60;img src=x onerror=alert(1)&#62; &#38; &#34;it&#39;s&#34;');
    // the only elements are the page's own: no script, no link, nothing fetched
    expect([...new Set([...page.matchAll(/<([a-z][a-z0-9]*)/g)].map((m) => m[1]))].sort()).toEqual(['b', 'body', 'div', 'footer', 'h1', 'head', 'html', 'li', 'meta', 'p', 'span', 'style', 'table', 'tbody', 'td', 'th', 'thead', 'title', 'tr', 'ul']);
    expect(page).not.toMatch(/https?:\/\/|url\(|@import/i);
  });

  it('masks secrets before escaping: a password holding & is not let through as &#38;', () => {
    const state = doc([day('2026-11-19', 'failed', { error: 'cannot connect to postgres://me:p&ss@db/x' })]);
    const status = jobStatus({ job: 'j', profile: 'p', state: 's.json', doc: state, toFetch: 0, now: Date.parse('2026-11-23T05:00:00Z') });
    const page = statusPage({ jobs: [{ status, cells: dayCells(state, undefined, [dayOf('2026-11-19')], false) }], days: [dayOf('2026-11-19')], file: 'f.yaml', now: Date.parse('2026-11-23T05:00:00Z'), version: '1', redact: (text) => text.split('p&ss').join('***') });
    expect(page).toContain('postgres://me:***@db/x');
    expect(page).not.toContain('p&#38;ss');
  });

  it('escapeHtml makes text safe in an element and in a quoted attribute', () => {
    expect(escapeHtml(`a<b>&"c'`)).toBe('a&#60;b&#62;&#38;&#34;c&#39;');
    expect(escapeHtml('bell\u0007')).toBe('bell\ufffd');
  });
});
