// Date windows for chunked runs (issue 13): since..until cut on the Paris calendar, checked
// against the time breakdown, and halved when a window is too big for the platform.
//
// A window is [since, until] in Unix seconds, both inclusive, as the CLI sends them (a day is
// 00:00:00..23:59:59 Paris). Windows are contiguous: each starts the second after its
// predecessor ends. Only the first and last are clipped to the requested since/until, and a
// single report over the whole period is clipped the same way, so clipping never changes a row.
// What matters for merging is the boundaries *between* windows: they must fall on time-bucket
// boundaries, otherwise one bucket (a day, a month) would come back as two rows.

import { DateTime } from 'luxon';
import { UsageError } from '../errors.js';
import { isTimeDimension, type TimeDimension } from '../report/catalog.js';
import { didYouMean } from '../suggest.js';
import { parisIso } from '../report/time.js';
import { PARIS_ZONE } from '../paris-zone.js';

export interface Window {
  /** first second, Unix seconds */
  since: number;
  /** last second, inclusive */
  until: number;
}

export type Chunk =
  | { unit: 'day'; count: number }
  | { unit: 'hour'; count: number }
  | { unit: 'week' }
  | { unit: 'month' };

/** More windows than this is almost certainly a mistake (1h over two years), and would flood the API. */
const MAX_WINDOWS = 10_000;

const CHUNK_WORDS = ['day', 'week', 'month'] as const;
const CHUNK_FORMS = 'day, week, month, Nd (N days, e.g. 7d) or Nh (N hours, e.g. 6h)';

export function parseChunk(text: string): Chunk {
  const value = text.trim().toLowerCase();
  if (value === 'day') return { unit: 'day', count: 1 };
  if (value === 'week') return { unit: 'week' };
  if (value === 'month') return { unit: 'month' };
  const sized = /^(\d+)([dh])$/.exec(value);
  if (sized) {
    const count = Number(sized[1]);
    if (count < 1 || count > 9999) throw new UsageError(`--chunk ${text}: N must be between 1 and 9999`, `accepted: ${CHUNK_FORMS}`).about('--chunk');
    return { unit: sized[2] === 'd' ? 'day' : 'hour', count };
  }
  throw new UsageError(`--chunk "${text}" is not a window size${didYouMean(value.replace(/s$/, ''), CHUNK_WORDS)}`, `accepted: ${CHUNK_FORMS}`).about('--chunk');
}

export function formatChunk(chunk: Chunk): string {
  switch (chunk.unit) {
    case 'day': return chunk.count === 1 ? 'day' : `${chunk.count}d`;
    case 'hour': return `${chunk.count}h`;
    default: return chunk.unit;
  }
}

const paris = (seconds: number) => DateTime.fromSeconds(seconds, { zone: PARIS_ZONE });
const secondsOf = (time: DateTime) => Math.floor(time.toSeconds());

/** The first boundary at or before `since`, and the step to the next, in the chunk's unit. */
function boundaries(since: number, chunk: Chunk): (k: number) => number {
  switch (chunk.unit) {
    case 'hour': {
      // Paris offsets are whole hours, so a Paris hour starts on a whole UTC hour: plain arithmetic,
      // and an N-hour window is N elapsed hours whatever the clocks do
      const first = Math.floor(since / 3600) * 3600;
      return (k) => first + k * chunk.count * 3600;
    }
    case 'day': {
      // calendar arithmetic: a day is 23 or 25 hours on DST days
      const first = paris(since).startOf('day');
      return (k) => secondsOf(first.plus({ days: k * chunk.count }).startOf('day'));
    }
    case 'week': {
      const first = paris(since).startOf('week'); // ISO week: Monday
      return (k) => secondsOf(first.plus({ weeks: k }).startOf('day'));
    }
    case 'month': {
      const first = paris(since).startOf('month');
      return (k) => secondsOf(first.plus({ months: k }).startOf('month'));
    }
  }
}

/** The windows of a few periods, remembered: a job file's thousands of jobs share a few periods and
 * chunks, and luxon's calendar arithmetic for each job's windows was a tenth of `jobs plan`. */
const planned = new Map<string, readonly Window[]>();

/** since..until cut into windows, in chronological order; the first and last are clipped. */
export function planWindows(since: number, until: number, chunk: Chunk): Window[] {
  const key = `${since}:${until}:${formatChunk(chunk)}`;
  const known = planned.get(key);
  if (known) return known.map((window) => ({ ...window }));
  const windows = cutWindows(since, until, chunk);
  if (planned.size >= 256) planned.clear();
  planned.set(key, windows.map((window) => ({ ...window })));
  return windows;
}

function cutWindows(since: number, until: number, chunk: Chunk): Window[] {
  if (until < since) throw new UsageError('--since is after --until').about('--since');
  const at = boundaries(since, chunk);
  const windows: Window[] = [];
  for (let k = 0; ; k++) {
    const start = at(k);
    if (start > until) break;
    const end = at(k + 1) - 1;
    if (end < since) continue;
    windows.push({ since: Math.max(since, start), until: Math.min(until, end) });
    if (windows.length > MAX_WINDOWS) {
      throw new UsageError(
        `--chunk ${formatChunk(chunk)} makes more than ${MAX_WINDOWS} windows from ${describeWindow({ since, until })}`,
        'choose a larger --chunk',
      );
    }
  }
  return windows;
}

export function timeBreakdown(breakdowns: readonly string[]): TimeDimension | undefined {
  return breakdowns.map((value) => value.toUpperCase()).find(isTimeDimension);
}

/**
 * Refuses a chunk whose windows would cut a time bucket in two (the merged output would then hold
 * two rows for one day or month). The check is on the chunk, not on the dates, so that a nightly
 * job does not start failing on the day its period happens to cross a boundary.
 * DAILY: any whole-day chunk (day, week, month, Nd). HOURLY: every chunk (Paris days start on
 * whole hours). MONTHLY: month only. RANGE or none: every chunk (rows are summed instead).
 */
export function checkChunk(chunk: Chunk, breakdowns: readonly string[]): void {
  const time = timeBreakdown(breakdowns);
  const name = formatChunk(chunk);
  if (time === 'DAILY' && chunk.unit === 'hour') {
    throw new UsageError(`--chunk ${name} would cut DAILY days in two`, 'with DAILY use --chunk day, week, month or Nd (e.g. 7d)').about('--chunk');
  }
  if (time === 'MONTHLY' && chunk.unit !== 'month') {
    throw new UsageError(`--chunk ${name} would cut MONTHLY months in two`, 'with MONTHLY use --chunk month').about('--chunk');
  }
}

/** The smallest window bisection goes down to: an hour with HOURLY, else a day. */
function splitUnit(breakdowns: readonly string[]): 'hour' | 'day' {
  return timeBreakdown(breakdowns) === 'HOURLY' ? 'hour' : 'day';
}

/**
 * Halves a window on a whole day (a whole hour with HOURLY), the first half taking the extra unit
 * when the count is odd; undefined when the window is within one unit already.
 * With MONTHLY the halves cut the month bucket: the merger sums such pieces back into their
 * month (see merge.ts), so the output is still one row per month.
 */
export function splitWindow(window: Window, breakdowns: readonly string[]): [Window, Window] | undefined {
  let middle: number;
  if (splitUnit(breakdowns) === 'hour') {
    const first = Math.floor(window.since / 3600);
    const count = Math.floor(window.until / 3600) - first + 1;
    if (count < 2) return undefined;
    middle = (first + Math.ceil(count / 2)) * 3600;
  } else {
    const first = paris(window.since).startOf('day');
    const count = Math.round(paris(window.until).startOf('day').diff(first, 'days').days) + 1;
    if (count < 2) return undefined;
    middle = secondsOf(first.plus({ days: Math.ceil(count / 2) }).startOf('day'));
  }
  return [{ since: window.since, until: middle - 1 }, { since: middle, until: window.until }];
}

function isDayStart(seconds: number): boolean {
  return secondsOf(paris(seconds).startOf('day')) === seconds;
}

function isDayEnd(seconds: number): boolean {
  return secondsOf(paris(seconds).endOf('day')) === seconds;
}

/** `2026-03-29`, `2026-03-01..2026-03-31`, or Paris times with their offset when not whole days. */
export function describeWindow(window: Window): string {
  if (isDayStart(window.since) && isDayEnd(window.until)) {
    const first = paris(window.since).toISODate();
    const last = paris(window.until).toISODate();
    return first === last ? `${first}` : `${first}..${last}`;
  }
  return `${parisIso(window.since)}..${parisIso(window.until)}`;
}

/** The --since/--until values that request exactly this window again: dates when it is whole
 * days (readable in a retry command), else Unix seconds. */
export function windowArgs(window: Window): { since: string; until: string } {
  // (remembered: a plan of thousands of jobs names the same few windows again and again)
  const key = `${window.since}:${window.until}`;
  const known = namedWindows.get(key);
  if (known) return { ...known };
  const named = isDayStart(window.since) && isDayEnd(window.until)
    ? { since: paris(window.since).toISODate() ?? String(window.since), until: paris(window.until).toISODate() ?? String(window.until) }
    : { since: String(window.since), until: String(window.until) };
  if (namedWindows.size >= 4096) namedWindows.clear();
  namedWindows.set(key, named);
  return { ...named };
}
const namedWindows = new Map<string, { since: string; until: string }>();

/**
 * With one output file per window, two windows must not land on the same file (6h windows with
 * `{since}` placeholders, which are dates, would overwrite each other).
 */
export function checkDistinctTargets(windows: readonly Window[], target: (window: Window) => string): void {
  const seen = new Map<string, Window>();
  for (const window of windows) {
    const name = target(window);
    const other = seen.get(name);
    if (other) {
      throw new UsageError(
        `windows ${describeWindow(other)} and ${describeWindow(window)} would both be written to ${name}`,
        'use a --chunk of whole days with {since}/{until} in -o, or one output without placeholders',
      );
    }
    seen.set(name, window);
  }
}
