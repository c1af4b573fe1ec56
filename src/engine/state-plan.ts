// Planning a run from its state, without touching the state's store: where it starts (--since
// auto, --lookback), and what to do with each window. The run's store is state.ts.

import { DateTime } from 'luxon';
import { UsageError } from '../errors.js';
import { outputExists as sinkStillThere } from '../destinations/sinks.js';
import type { Window } from '../report/windows.js';
import { PARIS_ZONE } from '../paris-zone.js';
import type { StateDoc, StateEntry } from './state-doc.js';

const unixOf = (iso: string | null) => (iso === null ? Number.NaN : Math.floor(Date.parse(iso) / 1000));

/** Fetched after its period ended: its numbers were complete when fetched (late conversions aside). */
function isComplete(entry: StateEntry): boolean {
  return unixOf(entry.submittedAt) > entry.untilUnix;
}

/** An output recorded done is still there, as its kind says (destinations/sinks.ts): a file that
 * exists, or an object in a bucket (taken to be there: checking would cost a request per window). */
const outputExists = (file: string) => sinkStillThere(file);

/** Every output recorded for a window (-o repeated: each of them) still exists. */
const outputsExist = (entry: StateEntry, fileExists: (path: string) => boolean) =>
  (entry.outputs ?? [entry]).every((output) => output.file === null || fileExists(output.file));

const isSettled = (entry: StateEntry, fileExists: (path: string) => boolean = outputExists) =>
  entry.status === 'done' && isComplete(entry) && outputsExist(entry, fileExists);

/** The second after the last window done (with complete numbers), or undefined when none is. */
function afterLastDone(doc: StateDoc): number | undefined {
  const settled = doc.windows.filter((entry) => entry.status === 'done' && isComplete(entry));
  return settled.length ? Math.max(...settled.map((entry) => entry.untilUnix)) + 1 : undefined;
}

/**
 * Where the last run left off: the second after the end of the period it planned (recorded by
 * state files since issue 21, item 5), or after the last window done if that is later (an older
 * period re-fetched by hand since) or if no period is recorded (an older file). A run killed with
 * windows submitted planned them: the next one goes on from its end, not from its last window
 * done, so its lookback does not slide back over days already fetched.
 */
export function afterLastRun(doc: StateDoc): number | undefined {
  const afterLast = afterLastDone(doc);
  const afterPlanned = doc.planned ? doc.planned.untilUnix + 1 : undefined;
  if (afterPlanned === undefined) return afterLast;
  return afterLast === undefined ? afterPlanned : Math.max(afterLast, afterPlanned);
}

/**
 * Where `--since auto` starts: the second after the last run (afterLastRun), or earlier if a window
 * recorded before it is not done (failed, interrupted, or fetched before its period ended).
 * Undefined when no window was ever done and no run planned.
 */
export function autoSince(doc: StateDoc, fileExists: (path: string) => boolean = outputExists): number | undefined {
  const afterLast = afterLastRun(doc);
  if (afterLast === undefined) return undefined;
  // a window not done, or done but its file deleted since, is fetched again
  const open = doc.windows.filter((entry) => !isSettled(entry, fileExists) && entry.sinceUnix < afterLast);
  return Math.min(afterLast, ...open.map((entry) => entry.sinceUnix));
}

/** The start of the Paris day `days` calendar days before the day of `anchor` (DST days are 23 or 25 h). */
export function daysBefore(anchor: number, days: number): number {
  return Math.floor(DateTime.fromSeconds(anchor, { zone: PARIS_ZONE }).startOf('day').minus({ days }).startOf('day').toSeconds());
}

export interface Start {
  since: number;
  /** done windows that end at or after this second are fetched again (--lookback) */
  lookbackFrom?: number;
  /** --since auto, and every window up to --until is done: nothing to fetch */
  upToDate: boolean;
}

/**
 * Resolves `--since` (a time already parsed, or `auto`) against the state. The lookback is the
 * N days before the end of the last run's planned period (afterLastRun: an old window that keeps
 * failing does not drag every later day into it, nor do windows a killed run left submitted); it
 * applies to an explicit since too. `auto` starts at autoSince, or at the lookback if that is earlier.
 */
export function resolveStart(
  since: number | 'auto',
  until: number,
  doc: StateDoc | undefined,
  options: { lookbackDays: number; fullRefresh: boolean; start?: number },
): Start {
  const state = doc && !options.fullRefresh ? doc : undefined;
  const afterLast = state && afterLastRun(state);
  const lookbackFrom = afterLast !== undefined && options.lookbackDays > 0 ? daysBefore(afterLast, options.lookbackDays) : undefined;
  if (since !== 'auto') return { since, lookbackFrom, upToDate: false };
  const auto = state && autoSince(state);
  // --start: the first run's (no run recorded yet, or --full-refresh) start
  if (auto === undefined && options.start !== undefined) return { since: options.start, lookbackFrom: undefined, upToDate: options.start > until };
  if (auto === undefined) {
    throw new UsageError(
      options.fullRefresh
        ? '--since auto continues from the state file, which --full-refresh ignores'
        : `--since auto continues after the period the last run planned, and ${doc ? 'the state file records no run yet' : 'there is no state file yet'}`,
      'add --start DATE for the first run (--since auto --start 2026-11-01: one command line for every night; in a job file, `start: 2026-11-01`), or give the first day once as --since',
    );
  }
  const start = Math.min(auto, lookbackFrom ?? auto);
  return { since: start, lookbackFrom, upToDate: start > until };
}

export type SubmitReason = 'new' | 'lookback' | 'incomplete' | 'missing-file' | 'full-refresh' | 'merged';

/** What to do with one window. `window` may be a piece of a requested window (split earlier). */
export type Step =
  | { action: 'skip'; window: Window; entry: StateEntry }
  | { action: 'resume'; window: Window; entry: StateEntry; reportId: string }
  | { action: 'retry'; window: Window; entry: StateEntry }
  | { action: 'submit'; window: Window; reason: SubmitReason; entry?: StateEntry };

export interface PlanOptions {
  lookbackFrom?: number;
  fullRefresh?: boolean;
  /** one output for every window: it is rewritten whole, so no window can be skipped if one is fetched */
  merged?: boolean;
  /** whether a recorded file still exists (a deleted file is fetched again) */
  fileExists?: (path: string) => boolean;
  /** the database file the windows were loaded into is gone: a window loaded is fetched again */
  tableGone?: boolean;
}

const windowOf = (entry: StateEntry): Window => ({ since: entry.sinceUnix, until: entry.untilUnix });

/** Entries that tile `window` exactly (the window itself, or the pieces it was split into). */
function tiles(entries: readonly StateEntry[], window: Window): StateEntry[] | undefined {
  const inside = entries
    .filter((entry) => entry.sinceUnix >= window.since && entry.untilUnix <= window.until)
    .sort((a, b) => a.sinceUnix - b.sinceUnix || b.untilUnix - a.untilUnix);
  const pieces: StateEntry[] = [];
  let next = window.since;
  for (const entry of inside) {
    if (entry.sinceUnix !== next) continue; // an older overlapping piece
    pieces.push(entry);
    next = entry.untilUnix + 1;
  }
  return next === window.until + 1 ? pieces : undefined;
}

/** Recorded already: exactly, in pieces, or inside a larger window. */
export function covered(entries: readonly StateEntry[], window: Window): boolean {
  return tiles(entries, window) !== undefined || entries.some((entry) => entry.sinceUnix <= window.since && entry.untilUnix >= window.until);
}

function decide(entry: StateEntry, options: PlanOptions): Step {
  const window = windowOf(entry);
  switch (entry.status) {
    case 'submitted':
      if (entry.reportId) return { action: 'resume', window, entry, reportId: entry.reportId };
      return { action: 'submit', window, reason: 'new', entry };
    case 'failed':
      return { action: 'retry', window, entry };
    case 'pending':
      return { action: 'submit', window, reason: 'new', entry };
    case 'done': {
      if (options.lookbackFrom !== undefined && entry.untilUnix >= options.lookbackFrom) return { action: 'submit', window, reason: 'lookback', entry };
      if (!isComplete(entry)) return { action: 'submit', window, reason: 'incomplete', entry };
      // an object in a bucket is taken to be there (its check would cost a request per window)
      const exists = options.fileExists ?? outputExists;
      if (!outputsExist(entry, exists)) return { action: 'submit', window, reason: 'missing-file', entry };
      if (options.tableGone && entry.loaded) return { action: 'submit', window, reason: 'missing-file', entry };
      return { action: 'skip', window, entry };
    }
  }
}

/**
 * The steps of a run over `windows` (chronological): done windows outside the lookback are
 * skipped, submitted ones resumed by report ID, failed ones retried, the rest submitted.
 */
export function planSteps(doc: StateDoc | undefined, windows: readonly Window[], options: PlanOptions = {}): Step[] {
  if (!doc || options.fullRefresh) {
    return windows.map((window) => ({ action: 'submit', window, reason: options.fullRefresh ? 'full-refresh' : 'new' }));
  }
  const steps: Step[] = [];
  for (const window of windows) {
    const pieces = tiles(doc.windows, window);
    if (pieces) {
      steps.push(...pieces.map((entry) => decide(entry, options)));
      continue;
    }
    // recorded with a larger window (another --chunk): done there is done here
    const container = doc.windows.find((entry) => entry.sinceUnix <= window.since && entry.untilUnix >= window.until);
    const step = container ? decide(container, options) : undefined;
    steps.push(step?.action === 'skip' ? { ...step, window } : { action: 'submit', window, reason: 'new' });
  }
  if (options.merged && steps.some((step) => step.action !== 'skip')) {
    return steps.map((step) => (step.action === 'skip' ? { action: 'submit', window: step.window, reason: 'merged', entry: step.entry } : step));
  }
  return steps;
}
