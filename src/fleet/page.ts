// `jobs status --html FILE`: the fleet as a page a person looks at (issue 32, item 6). One
// self-contained HTML file: no script, no request anywhere (inline CSS, the system's fonts), a
// grid of jobs by day, each cell coloured and lettered (the letter alone says it: for those who do
// not see colour, and on paper), the lag and the last run's figures per job. Every text that comes
// from a state or the job file (names, errors, paths) is escaped here, in one place.
//
// A day's cell, from the windows the state records over that day (Europe/Paris days):
//   F failed       a window over the day failed (its error in the cell's title)
//   P in progress  a report of a window over the day is submitted and not written yet (or one is
//                  being submitted; or planned by a run that holds the state's lock now)
//   M missing      the day is in the job's period and not wholly covered by windows done (a
//                  window done whose file is gone counts as not done: the next run fetches it)
//   U unchanged    every window done over the day found, at its last fetch, what was already there
//   D done         the day is covered by windows done
//   (blank)        outside the job's period, with nothing recorded
// in that order of precedence (a day of hourly windows with one failed is failed).

import { DateTime } from 'luxon';
import type { StateDoc, StateEntry } from '../engine/state.js';
import { PARIS_ZONE } from '../paris-zone.js';
import { bytesText, lagText, type JobStatus } from './status.js';

/** the days the grid shows at most, ending on its last day */
export const PAGE_DAYS = 31;

export type DayKind = 'done' | 'unchanged' | 'failed' | 'missing' | 'progress' | 'outside';

/** Each kind's letter, name and colours (Okabe and Ito's palette, told apart by most colour-blind
 * readers too), in the legend's order. */
export const KINDS: Record<DayKind, { letter: string; name: string; meaning: string; background: string; color: string }> = {
  done: { letter: 'D', name: 'done', meaning: 'the day is covered by windows done', background: '#009e73', color: '#ffffff' },
  unchanged: { letter: 'U', name: 'unchanged', meaning: 'done, and its last fetch found what was already there', background: '#a8dcc9', color: '#003d2b' },
  failed: { letter: 'F', name: 'failed', meaning: 'a window over the day failed (its error on hover)', background: '#d55e00', color: '#ffffff' },
  missing: { letter: 'M', name: 'missing', meaning: "in the job's period, not done", background: '#f0e442', color: '#3d3800' },
  progress: { letter: 'P', name: 'in progress', meaning: 'a report for the day is submitted and not written yet', background: '#56b4e9', color: '#00314d' },
  outside: { letter: '', name: 'outside', meaning: "outside the job's period, nothing recorded", background: '#f4f4f4', color: '#767676' },
};

/** A Paris day: its date and its first and last second. */
export interface Day {
  date: string;
  since: number;
  until: number;
}

/** The period a job asks for, Unix seconds (until inclusive). */
export interface Period {
  since: number;
  until: number;
}

export interface DayCell {
  date: string;
  kind: DayKind;
  /** why, in words (a failed window's error, a report ID in progress) */
  detail?: string;
}

const parisDay = (seconds: number) => DateTime.fromSeconds(seconds, { zone: PARIS_ZONE }).startOf('day');

/** The days the page shows: up to PAGE_DAYS days ending on the last day of any job's period (or
 * of what its state records), never after today; starting no earlier than the first such day. */
export function pageDays(spans: readonly (Period | undefined)[], nowMs: number, count = PAGE_DAYS): Day[] {
  const known = spans.filter((span): span is Period => span !== undefined);
  const today = DateTime.fromMillis(nowMs, { zone: PARIS_ZONE }).startOf('day');
  let last = known.length ? parisDay(Math.max(...known.map((span) => span.until))) : today;
  if (last > today) last = today;
  const first = known.length ? parisDay(Math.min(...known.map((span) => span.since))) : last;
  const days: Day[] = [];
  for (let day = last; days.length < count && day >= first; day = day.minus({ days: 1 })) {
    days.unshift({ date: day.toISODate() as string, since: Math.floor(day.toSeconds()), until: Math.floor(day.endOf('day').toSeconds()) });
  }
  return days;
}

/** What a state records, as one span (the first window's start to the last one's end). */
export function recordedSpan(doc: StateDoc | undefined): Period | undefined {
  if (!doc?.windows.length) return undefined;
  return { since: Math.min(...doc.windows.map((w) => w.sinceUnix)), until: Math.max(...doc.windows.map((w) => w.untilUnix)) };
}

/** Each day's cell for one job. `running`: a run holds the state's lock now (its planned windows are
 * in progress). `gone`: the windows the state records done whose output is gone (the plan fetches
 * them again: `missing-file`). */
export function dayCells(doc: StateDoc | undefined, period: Period | undefined, days: readonly Day[], running: boolean, gone: readonly Period[] = []): DayCell[] {
  // (the windows over the days shown, once: a state of years of hourly windows is not read 31 times over)
  const [first, last] = [days[0], days.at(-1)];
  const windows = first && last ? (doc?.windows ?? []).filter((w) => w.sinceUnix <= last.until && w.untilUnix >= first.since) : [];
  return days.map((day) => {
    const over = windows.filter((w) => w.sinceUnix <= day.until && w.untilUnix >= day.since);
    const failed = over.find((w) => w.status === 'failed');
    if (failed) return { date: day.date, kind: 'failed', detail: failed.error ?? 'failed' };
    const going = over.find((w) => w.status === 'submitted' || Boolean(w.submitting) || (running && w.status === 'pending'));
    if (going) return { date: day.date, kind: 'progress', ...(going.reportId ? { detail: `report ${going.reportId}` } : {}) };
    const lost = over.filter((w) => w.status === 'done' && gone.some((g) => g.since <= w.untilUnix && g.until >= w.sinceUnix));
    const done = over.filter((w) => w.status === 'done' && !lost.includes(w));
    const wanted = period && period.since <= day.until && period.until >= day.since ? { since: Math.max(day.since, period.since), until: Math.min(day.until, period.until) } : undefined;
    if (wanted && !covers(done, wanted)) return { date: day.date, kind: 'missing', ...(lost.length ? { detail: 'done, and its file is gone: the next run fetches it again' } : {}) };
    if (done.length === 0) return { date: day.date, kind: 'outside' };
    return { date: day.date, kind: done.every((w) => w.unchanged === true) ? 'unchanged' : 'done' };
  });
}

/** A window as the plan names it (`run`'s --since/--until: Paris dates, or Unix seconds), as seconds. */
export function periodOfArgs(window: { since: string; until: string }): Period {
  const at = (text: string, end: boolean) => {
    if (/^\d+$/.test(text)) return Number(text);
    const day = DateTime.fromISO(text, { zone: PARIS_ZONE });
    return Math.floor((end ? day.endOf('day') : day.startOf('day')).toSeconds());
  };
  return { since: at(window.since, false), until: at(window.until, true) };
}

/** Do these windows cover every second of `span`? */
function covers(windows: readonly StateEntry[], span: Period): boolean {
  let next = span.since;
  for (const w of [...windows].sort((a, b) => a.sinceUnix - b.sinceUnix)) {
    if (w.sinceUnix > next) return false;
    next = Math.max(next, w.untilUnix + 1);
    if (next > span.until) return true;
  }
  return next > span.until;
}

// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /[&<>"'\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** `&`, `<`, `>`, `"` and `'` as entities: text that is safe in an element and in a quoted attribute. */
export function escapeHtml(text: string): string {
  // (most texts need nothing: a page of 20,000 jobs escapes 620,000 cells' titles)
  if (!NEEDS_ESCAPE.test(text)) return text;
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '\ufffd');
}

export interface PageJob {
  status: JobStatus;
  cells: DayCell[];
}

export interface PageInput {
  jobs: readonly PageJob[];
  days: readonly Day[];
  /** the job file, as named */
  file: string;
  /** ms since the epoch (the calendar's now) */
  now: number;
  /** --max-lag, when given */
  maxLag?: string;
  version: string;
  /** masks the secrets a text may hold (an error naming a URL with its password): applied before
   * escaping, which would hide a secret holding `&` from it */
  redact?: (text: string) => string;
}

const STYLE = `
:root { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1a1a1a; background: #ffffff; }
body { margin: 1.5rem; font-size: 14px; line-height: 1.35; }
h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
p.about { margin: 0 0 1rem; color: #444; }
.legend { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; margin: 0 0 1rem; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: .4rem; }
.wrap { overflow-x: auto; }
table.grid { border-collapse: separate; border-spacing: 2px; }
.grid th, .grid td { padding: 0; }
.grid thead th { font-weight: 600; font-size: 12px; color: #444; vertical-align: bottom; text-align: center; }
.grid thead th.day { width: 1.7rem; line-height: 1.1; }
.grid thead th.day .month { display: block; font-weight: 400; font-size: 10px; }
.grid th.job { text-align: left; padding: .15rem .6rem .15rem 0; white-space: nowrap; max-width: 22rem; overflow: hidden; text-overflow: ellipsis; }
.grid th.job .profile, .grid th.job .note { display: block; font-weight: 400; font-size: 11px; color: #555; white-space: normal; }
.grid th.job .note.error { color: #a33b00; }
.grid td.lag, .grid td.run { white-space: nowrap; font-size: 12px; padding: 0 .6rem 0 0; text-align: right; font-variant-numeric: tabular-nums; }
.grid td.lag.stale { color: #a33b00; font-weight: 700; }
.c { width: 1.7rem; height: 1.7rem; text-align: center; font: 700 12px/1.7rem ui-monospace, "DejaVu Sans Mono", monospace; border-radius: 3px; }
${(Object.keys(KINDS) as DayKind[]).map((kind) => `.c.${kind} { background: ${KINDS[kind].background}; color: ${KINDS[kind].color}; }`).join('\n')}
.legend .c { display: inline-block; }
footer { margin-top: 1rem; font-size: 11px; color: #666; }
@media print {
  @page { size: landscape; margin: 10mm; }
  body { margin: 0; font-size: 10px; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .wrap { overflow: visible; }
  .c { width: 1.25rem; height: 1.25rem; line-height: 1.25rem; font-size: 10px; }
  .grid thead th.day { width: 1.25rem; }
  .grid thead { display: table-header-group; }
  .grid tr { break-inside: avoid; }
  .c.outside { border: 1px solid #ddd; }
}
`;

const NUMBER = new Intl.NumberFormat('en-US');

/** An instant of the state (ISO, UTC) as Paris wall time to the minute, as the page's other times. */
function parisMinute(iso: string): string {
  const at = DateTime.fromISO(iso, { zone: PARIS_ZONE });
  return at.isValid ? at.toFormat('yyyy-MM-dd HH:mm') : iso;
}

/** The page, whole. */
export function statusPage(input: PageInput): string {
  const redact = input.redact ?? ((text: string) => text);
  const e = (text: string) => escapeHtml(redact(text));
  const now = DateTime.fromMillis(input.now, { zone: PARIS_ZONE });
  const first = input.days[0]?.date;
  const last = input.days.at(-1)?.date;
  const head = input.days.map((day, index) => {
    const date = DateTime.fromISO(day.date, { zone: PARIS_ZONE });
    // the month over the first day and each 1st
    const month = index === 0 || date.day === 1 ? date.toFormat('LLL') : '';
    return `<th class="day" scope="col" title="${e(day.date)}"><span class="month">${month ? e(month) : '&nbsp;'}</span>${e(date.toFormat('d'))}</th>`;
  }).join('');
  const rows = input.jobs.map(({ status, cells }) => {
    const notes = [
      status.state === null ? '<span class="note">no state: not followed</span>' : '',
      status.error !== null ? `<span class="note error">error: ${e(status.error)}</span>` : '',
      status.lock ? `<span class="note">${status.lock.stale ? 'lock left by' : 'running: lock held by'} ${e(String(status.lock.pid ?? '?'))}${status.lock.host ? `@${e(status.lock.host)}` : ''}</span>` : '',
    ].join('');
    const lag = status.state === null ? '' : `${e(lagText(status.lagSeconds))}${status.stale ? ' STALE' : ''}`;
    const run = status.lastRun ? `${NUMBER.format(status.lastRun.rows)} rows, ${e(bytesText(status.lastRun.bytes))}<br>${NUMBER.format(status.lastRun.windows)} window${status.lastRun.windows === 1 ? '' : 's'}, ${e(parisMinute(status.lastRun.at))}` : '';
    const tds = cells.map((cell) => {
      const kind = KINDS[cell.kind];
      const title = `${status.job}, ${cell.date}: ${kind.name}${cell.detail ? `: ${cell.detail}` : ''}`;
      return `<td class="c ${cell.kind}" data-day="${e(cell.date)}" data-kind="${cell.kind}" title="${e(title)}">${kind.letter}</td>`;
    }).join('');
    return `<tr data-job="${e(status.job)}"><th class="job" scope="row" title="${e(status.job)}">${e(status.job)}<span class="profile">${e(status.profile)}</span>${notes}</th><td class="lag${status.stale ? ' stale' : ''}">${lag}</td><td class="run">${run}</td>${tds}</tr>`;
  }).join('\n');
  const legend = (Object.keys(KINDS) as DayKind[]).map((kind) => `<li><span class="c ${kind}">${KINDS[kind].letter || '&nbsp;'}</span><span><b>${KINDS[kind].letter ? `${KINDS[kind].letter}: ` : 'blank: '}${e(KINDS[kind].name)}</b>, ${e(KINDS[kind].meaning)}</span></li>`).join('');
  const stale = input.jobs.filter((job) => job.status.stale).length;
  const about = [
    `${input.jobs.length} job${input.jobs.length === 1 ? '' : 's'} of ${e(input.file)}`,
    first && last ? `days ${e(first)} to ${e(last)} (Europe/Paris)` : '',
    `as of ${e(now.toFormat('yyyy-MM-dd HH:mm'))} Paris time`,
    input.maxLag ? `${stale} stale beyond --max-lag ${e(input.maxLag)}` : '',
  ].filter(Boolean).join(' · ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>reporting jobs status, ${e(now.toFormat('yyyy-MM-dd HH:mm'))}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Jobs status</h1>
<p class="about">${about}</p>
<ul class="legend">${legend}</ul>
<div class="wrap">
<table class="grid">
<thead><tr><th class="job" scope="col">Job</th><th scope="col">Lag</th><th scope="col">Last run</th>${head}</tr></thead>
<tbody>
${rows}
</tbody>
</table>
</div>
<footer>Made by reporting ${e(input.version)} (reporting jobs status --html). Times are Paris times. Lag: from the end of the last window done to now. Last run: what the job's last run finished, and when it started.</footer>
</body>
</html>
`;
}
