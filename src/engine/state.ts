// `--state FILE`: the manifest of a recurring run. It records the request and, per date window,
// what happened to it (report ID, status, attempts, rows, bytes, sha256 and path of the file
// written), so that the next run skips what is done, resumes a submitted report by its ID instead
// of submitting it again, retries what failed, and re-fetches the last days (--lookback) whose
// numbers may still move. Its format is documented in docs/recurring.md and versioned:
// loaders read it as the run's manifest.
//
// The file is only ever replaced whole (atomic write) and only by the run holding its lock; between
// two such writes, a large state's changes go to a log beside it (state-log.ts).

import { DateTime } from 'luxon';
import { z } from 'zod';
import { UsageError } from '../errors.js';
import { outputExists as sinkStillThere } from '../destinations/sinks.js';
import { SIDES, metricsWithField } from '../report/catalog.js';
import { storedReportId } from '../api/schemas.js';
import type { ReportRequest } from '../report/request.js';
import type { LockHost, LockOptions } from '../fs/lock.js';
import { applyChange, byWindow, indexOfWindow, type Change, type EntryShape, type Upload, type WriterStart } from './state-log.js';
import { FileStore, readStateText } from './stores/file.js';
import type { StateStore, StateWrites, StoredState, StoreLock } from './stores/store.js';
import { parisIso } from '../report/time.js';
import type { Window } from '../report/windows.js';
import { PARIS_ZONE } from '../paris-zone.js';
import { COLUMN_CASES, type ColumnCase } from '../report/column-case.js';


export const STATE_VERSION = 2;
/** Version 1 recorded neither the output's shape nor the server: read as the defaults of then
 * (every column, comma, no BOM, no --excel), the server learnt on the next run. */
const OLDEST_READ = 1;
const WINDOW_STATUSES = ['pending', 'submitted', 'done', 'failed'] as const;

const requestSchema = z.object({
  side: z.enum(SIDES),
  metrics: z.array(z.string()),
  breakdowns: z.array(z.string()),
  filters: z.record(z.string(), z.array(z.string())),
  params: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  format: z.string(),
  output: z.string().nullable(),
  /** --chunk as given (null: the period is one window); absent in files that predate it */
  chunk: z.string().nullable().optional(),
  /** the output's shape (version 2): its columns (null: every field of every row) and CSV settings */
  columns: z.array(z.string()).nullable().optional(),
  delimiter: z.string().optional(),
  bom: z.boolean().optional(),
  excel: z.boolean().optional(),
  /** --column-case (absent in files that predate it: camel, the names as received) */
  columnCase: z.enum(COLUMN_CASES).optional(),
  /** where the numbers came from (version 2): the base URL and the profile, never a token */
  server: z.object({ baseUrl: z.string(), profile: z.string() }).optional(),
  /** run --load: the database (never its password) and the table */
  load: z.object({ target: z.string(), table: z.string() }).nullable().optional(),
  /** -o repeated: every output (`output` is the first; null: stdout); absent with one -o */
  outputs: z.array(z.string().nullable()).optional(),
});
export type StateRequest = z.infer<typeof requestSchema>;

const entrySchema = z.object({
  since: z.string(),
  until: z.string(),
  sinceUnix: z.number().int(),
  untilUnix: z.number().int(),
  status: z.enum(WINDOW_STATUSES),
  reportId: storedReportId.nullable(),
  submittedAt: z.string().nullable(),
  attempts: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative().nullable(),
  bytes: z.number().int().nonnegative().nullable(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  file: z.string().nullable(),
  /** (-o s3://) the object's ETag when it was written or found unchanged */
  etag: z.string().nullable().optional(),
  finishedAt: z.string().nullable(),
  error: z.string().nullable(),
  /** (version 2) a submit was started at this time and its answer not recorded yet: a run killed
   * in between may have left a report of unknown ID running on the server */
  submitting: z.string().nullable().optional(),
  /** run --load: the window's rows are in this table (its transaction committed): how many, and
   * the sha256 of the rows loaded (the report's row texts, one a line) */
  loaded: z.object({ table: z.string(), rows: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/), at: z.string(), reportIds: z.array(z.string()).optional() }).nullable().optional(),
  /** (version 2, since issue 32 item 6) for done: the last fetch found what was already there (the
   * file left untouched, the object or the table's rows kept); absent: false. `jobs status --html`
   * shows it */
  unchanged: z.boolean().optional(),
  /** -o repeated: each output's record, in -o's order (file, bytes, sha256 and etag above are the
   * first's); the window is done once every output holds it */
  outputs: z.array(z.object({ file: z.string().nullable(), bytes: z.number().int().nonnegative().nullable(), sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(), etag: z.string().nullable().optional() })).nullable().optional(),
}).refine((entry) => entry.sinceUnix <= entry.untilUnix, { message: 'sinceUnix is after untilUnix' });
export type StateEntry = z.infer<typeof entrySchema>;

/** (version 2, since issue 21 item 5) the period the last run planned, recorded before its first
 * submit: the next `--since auto` counts its lookback from its end, so a run that died with windows
 * submitted does not widen the next one. Absent in older files: the lookback counts from the last
 * window done, as before. */
const plannedSchema = z.object({
  since: z.string(),
  until: z.string(),
  sinceUnix: z.number().int(),
  untilUnix: z.number().int(),
  at: z.string(),
}).refine((planned) => planned.sinceUnix <= planned.untilUnix, { message: 'sinceUnix is after untilUnix' });

/** (version 2, since issue 31 item 3) a multipart upload in flight for -o s3://, recorded before
 * its first part and dropped once completed or aborted: the next run holding the state aborts
 * those a killed run left, from whatever machine it runs on. */
const uploadSchema = z.object({ bucket: z.string(), key: z.string(), uploadId: z.string(), startedAt: z.string() }).strict();

const stateSchema = z.object({
  version: z.number().int().min(OLDEST_READ).max(STATE_VERSION),
  createdAt: z.string(),
  updatedAt: z.string(),
  request: requestSchema,
  planned: plannedSchema.optional(),
  uploads: z.array(uploadSchema).optional(),
  windows: z.array(entrySchema),
});
export type StateDoc = z.infer<typeof stateSchema>;

const REFRESH_HINT = 'use another --state file for this request, or add --full-refresh to start this one over';

// ---------------------------------------------------------------------------------------------
// Reading, and checking that the file belongs to this request


const instant = (ms: number) => new Date(ms).toISOString();

/** The state file, or undefined when it does not exist yet. Corrupt or newer: a usage error. With
 * the changes of its log (FILE.log) when a run was stopped before it folded them in: the state as
 * the next run sees it. */
export function readState(path: string): StateDoc | undefined {
  return withLog(path, readStateText(path))?.doc;
}

/** The state a store holds, as readState reads a file. */
export async function readStateOf(store: StateStore): Promise<StateDoc | undefined> {
  return withLog(store.name, await store.read())?.doc;
}

interface Loaded {
  doc: StateDoc;
  /** the document's own text, when no log applied to it */
  text?: string;
  /** the format version it was written in */
  version: number;
}

/** The state as read (its log applied), the document's own text when no log applied to it, and the
 * format version the file was written in. */
function withLog(name: string, stored: StoredState | undefined): Loaded | undefined {
  if (!stored) return undefined;
  const read = parseDocument(name, stored.text);
  const windows = [...read.doc.windows].sort(byWindow);
  const logged = stored.replay?.(windows, ENTRY_SHAPE);
  if (!logged) return { doc: { ...read.doc, windows }, text: stored.text, version: read.version };
  const planned = logged.planned ?? read.doc.planned;
  const uploads = logged.uploads ?? read.doc.uploads;
  return { doc: { ...read.doc, updatedAt: logged.at ?? read.doc.updatedAt, ...(planned ? { planned } : {}), ...(uploads?.length ? { uploads } : {}), windows: logged.windows }, version: read.version };
}

function parseDocument(path: string, text: string): { doc: StateDoc; version: number } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new UsageError(`the state file ${path} is not valid JSON`, `fix it, or start over with --full-refresh (or delete it)`);
  }
  const version = (raw as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && Number.isInteger(version) && version > STATE_VERSION) {
    throw new UsageError(
      `the state file ${path} has format version ${version}, written by a newer reporting; this one reads version ${STATE_VERSION}`,
      'upgrade reporting, or use another --state file',
    );
  }
  const parsed = stateSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'the file';
    throw new UsageError(
      `the state file ${path} is not a reporting state file (version ${STATE_VERSION}): ${where}: ${issue?.message ?? 'unexpected shape'}`,
      'fix it, or start over with --full-refresh (or delete it)',
    );
  }
  // version 1: the output's shape as it then always was
  const { request } = parsed.data;
  const doc = { ...parsed.data, version: STATE_VERSION, request: { columns: null, delimiter: ',', bom: false, excel: false, columnCase: 'camel' as const, ...request } };
  return { doc, version: parsed.data.version };
}

/** The output's shape as recorded: the columns (null: every field) and the CSV settings. */
export interface OutputShape {
  columns: string[] | null;
  delimiter: string;
  bom: boolean;
  excel: boolean;
  columnCase: ColumnCase;
}

/** What `run` records as its request. `output` is the -o template, best resolved to an absolute path. */
export function stateRequestOf(
  request: ReportRequest,
  format: string,
  output: string | undefined,
  chunk?: string | null,
  shape?: OutputShape,
  server?: { baseUrl: string; profile: string },
  load?: { target: string; table: string },
  outputs?: (string | null)[],
): StateRequest {
  return {
    side: request.side,
    metrics: [...request.metrics],
    breakdowns: [...request.breakdowns],
    filters: Object.fromEntries(Object.entries(request.filters).map(([name, values]) => [name, [...values]])),
    params: { ...request.extra },
    format,
    output: output ?? null,
    ...(chunk === undefined ? {} : { chunk }),
    ...(shape ? { ...shape, columns: shape.columns ? [...shape.columns] : null } : {}),
    ...(server ? { server: { ...server } } : {}),
    ...(load ? { load: { ...load } } : {}),
    ...(outputs ? { outputs: [...outputs] } : {}),
  };
}

const list = (values: readonly string[]) => (values.length ? values.join(',') : '(none)');

function valuesOf(record: Record<string, string | string[]>): Map<string, string> {
  const map = new Map<string, string>();
  for (const [name, value] of Object.entries(record)) {
    // filter values select rows, their order does not matter
    map.set(name, [...(Array.isArray(value) ? value : [value])].sort().join(','));
  }
  return map;
}

/** How `wanted` differs from the request a state file was written for, one phrase per difference. */
export function requestDifferences(stored: StateRequest, wanted: StateRequest): string[] {
  const differences: string[] = [];
  const scalar = (name: string, a: string | null, b: string | null) => {
    if (a !== b) differences.push(`${name} is ${b ?? '(stdout)'} here, ${a ?? '(stdout)'} in the state file`);
  };
  const ordered = (name: string, a: readonly string[], b: readonly string[]) => {
    // metrics and breakdowns order the columns: a different order is a different file
    if (a.join(',') !== b.join(',')) differences.push(`${name} are ${list(b)} here, ${list(a)} in the state file`);
  };
  const keyed = (name: string, a: Record<string, string | string[]>, b: Record<string, string | string[]>) => {
    const before = valuesOf(a);
    const after = valuesOf(b);
    for (const key of [...new Set([...before.keys(), ...after.keys()])].sort()) {
      if (before.get(key) !== after.get(key)) {
        differences.push(`${name} ${key} is ${after.get(key) ?? '(not set)'} here, ${before.get(key) ?? '(not set)'} in the state file`);
      }
    }
  };
  scalar('the side', stored.side, wanted.side);
  // a metric no row of the side carries (buyer's `requests`) changes nothing in the files: a state
  // written when buyer's default still asked for it goes on
  const carried = (metrics: readonly string[]) => metrics.filter((metric) => metricsWithField(wanted.side).includes(metric));
  ordered('metrics', carried(stored.metrics), carried(wanted.metrics));
  ordered('breakdowns', stored.breakdowns, wanted.breakdowns);
  keyed('filter', stored.filters, wanted.filters);
  keyed('--param', stored.params, wanted.params);
  scalar('the format', stored.format, wanted.format);
  // -o repeated: the same outputs, in the same order (one -o records none)
  const outputs = (request: StateRequest) => (request.outputs ?? [request.output]).map((output) => output ?? '(stdout)').join(', ');
  if (!stored.outputs && !wanted.outputs) scalar('the output', stored.output, wanted.output);
  else if (outputs(stored) !== outputs(wanted)) differences.push(`the outputs are ${outputs(wanted)} here, ${outputs(stored)} in the state file`);
  // the requested columns follow from the metrics and breakdowns: another list of them is another
  // set of columns already said
  const derived = carried(stored.metrics).join(',') !== carried(wanted.metrics).join(',') || stored.breakdowns.join(',') !== wanted.breakdowns.join(',');
  outputShape(derived ? { ...stored, columns: undefined } : stored, wanted, differences);
  if ((stored.load ?? null) !== null || (wanted.load ?? null) !== null) {
    const a = stored.load ? `${stored.load.table} in ${stored.load.target}` : null;
    const b = wanted.load ? `${wanted.load.table} in ${wanted.load.target}` : null;
    if (a !== b) differences.push(`--load is ${b ?? '(none)'} here, ${a ?? '(none)'} in the state file`);
  }
  // windows of another size would overlap the ones recorded (a week's file and a day's)
  if (stored.chunk !== undefined && wanted.chunk !== undefined && stored.chunk !== wanted.chunk) {
    differences.push(`--chunk is ${wanted.chunk ?? '(none)'} here, ${stored.chunk ?? '(none)'} in the state file`);
  }
  return differences;
}

/** Another column set, CSV dialect or server would mix two kinds of file, or two servers' numbers,
 * in one export: compared where both are recorded. */
function outputShape(stored: StateRequest, wanted: StateRequest, differences: string[]): void {
  const both = <K extends keyof StateRequest>(key: K) => stored[key] !== undefined && wanted[key] !== undefined;
  const columns = (value: string[] | null | undefined) => (value ? value.join(',') : 'every column');
  if (both('columns') && columns(stored.columns) !== columns(wanted.columns)) differences.push(`--columns are ${columns(wanted.columns)} here, ${columns(stored.columns)} in the state file`);
  if (both('delimiter') && stored.delimiter !== wanted.delimiter) differences.push(`the CSV delimiter is ${JSON.stringify(wanted.delimiter)} here, ${JSON.stringify(stored.delimiter)} in the state file`);
  const flag = (name: 'bom' | 'excel') => {
    if (both(name) && stored[name] !== wanted[name]) differences.push(`--${name} is ${wanted[name] ? 'on' : 'off'} here, ${stored[name] ? 'on' : 'off'} in the state file`);
  };
  flag('bom');
  flag('excel');
  if (both('columnCase') && stored.columnCase !== wanted.columnCase) differences.push(`--column-case is ${wanted.columnCase} here, ${stored.columnCase} in the state file`);
  if (stored.server && wanted.server) {
    if (stored.server.baseUrl !== wanted.server.baseUrl) differences.push(`the server is ${wanted.server.baseUrl} here, ${stored.server.baseUrl} in the state file`);
    if (stored.server.profile !== wanted.server.profile) differences.push(`the profile is ${wanted.server.profile} here, ${stored.server.profile} in the state file`);
  }
}

/** --columns as the command line says them (null: every field). */
const columnsFlag = (columns: readonly string[] | null) => `--columns ${columns ? columns.join(',') : 'all'}`;

function checkRequest(path: string, stored: StateRequest, wanted: StateRequest, version: number): void {
  const differences = requestDifferences(stored, wanted);
  if (!differences.length) return;
  const columns = (value: string[] | null | undefined) => (value ? value.join(',') : null);
  const columnsDiffer = stored.columns !== undefined && wanted.columns !== undefined && columns(stored.columns) !== columns(wanted.columns);
  if (!columnsDiffer) throw new UsageError(`the state file ${path} was written for another request: ${differences.join('; ')}`, REFRESH_HINT);
  // the columns: most often a file written with every field before the requested columns became
  // the tabular formats' default (version 1 always recorded every field)
  const keep = `add ${columnsFlag(stored.columns ?? null)} to keep this file's shape`;
  const anew = `--full-refresh to start it anew${wanted.columns ? ` with ${columnsFlag(wanted.columns)}` : ''}`;
  const why = stored.columns === null && wanted.columns !== null
    ? `; it ${version === 1 ? 'is of format version 1, which always wrote' : 'records'} every field of every row (--columns all), and the default is now the requested columns`
    : '';
  throw new UsageError(`the state file ${path} was written for another request: ${differences.join('; ')}${why}`,
    differences.length === 1 ? `${keep}, or ${anew}` : `${REFRESH_HINT}; or, for the columns, ${keep}`);
}

// ---------------------------------------------------------------------------------------------
// Planning a run: where it starts (--since auto, --lookback), and what to do with each window

export { parseLookback } from './limits.js';

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
      'add --start DATE for the first run (--since auto --start 2026-11-01: one command line for every night), or give the first day once as --since',
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
function covered(entries: readonly StateEntry[], window: Window): boolean {
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

// ---------------------------------------------------------------------------------------------
// The state of a run in progress: locked, updated window by window, each change written atomically

export interface OpenOptions {
  now: () => number;
  /** the process holding the lock (the Context's host): a local file's */
  host?: LockHost;
  fullRefresh?: boolean;
  /** a local file's lock (tests pose as another process) */
  lock?: LockOptions;
  /** --lock-wait: how long to wait for a lock another run holds */
  lockWaitMs?: number;
}

/** The store a RunState is opened on: a store, or the path of a local file (tests, tools). */
function storeOf(target: StateStore | string, options: Pick<OpenOptions, 'now' | 'host' | 'lock'>): StateStore {
  if (typeof target !== 'string') return target;
  // (peek takes no lock)
  const host: LockHost = options.host ?? { pid: 0, isAlive: () => true, atExit: () => () => {} };
  return new FileStore(target, { cwd: '/', host, now: options.lock?.now ?? options.now, lock: options.lock });
}

export type EntryPatch = Partial<Pick<StateEntry, 'status' | 'reportId' | 'submittedAt' | 'attempts' | 'rows' | 'bytes' | 'sha256' | 'file' | 'etag' | 'finishedAt' | 'error' | 'submitting' | 'loaded' | 'unchanged' | 'outputs'>>;

function newEntry(window: Window): StateEntry {
  return {
    since: parisIso(window.since),
    until: parisIso(window.until),
    sinceUnix: window.since,
    untilUnix: window.until,
    status: 'pending',
    reportId: null,
    submittedAt: null,
    attempts: 0,
    rows: null,
    bytes: null,
    sha256: null,
    file: null,
    finishedAt: null,
    error: null,
    submitting: null,
    loaded: null,
  };
}

/** What the pieces of a split window say of the whole: its last report, the earliest submission
 * (the whole is complete only if every piece was fetched after its period), the most attempts. */
function fromPieces(pieces: readonly StateEntry[]): EntryPatch {
  if (pieces.length === 0) return {};
  const times = pieces.map((piece) => piece.submittedAt);
  const submittedAt = times.some((time) => time === null) ? null : (times as string[]).reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b));
  return {
    reportId: [...pieces].reverse().find((piece) => piece.reportId !== null)?.reportId ?? null,
    submittedAt,
    attempts: Math.max(...pieces.map((piece) => piece.attempts)),
  };
}

/** What the log (state-log.ts) knows of a window's record. */
const ENTRY_SHAPE: EntryShape<StateEntry> = {
  create: (since, until) => newEntry({ since, until }),
  fields: ['status', 'reportId', 'submittedAt', 'attempts', 'rows', 'bytes', 'sha256', 'file', 'etag', 'finishedAt', 'error', 'submitting', 'loaded', 'unchanged', 'outputs'] satisfies (keyof EntryPatch)[],
  invalid: (entry) => {
    const parsed = entrySchema.safeParse(entry);
    if (parsed.success) return undefined;
    const issue = parsed.error.issues[0];
    return `${issue?.path.join('.') || 'a window'}: ${issue?.message ?? 'unexpected shape'}`;
  },
};

const keyOf = (entry: StateEntry): [number, number] => [entry.sinceUnix, entry.untilUnix];

/** The fields of `patch` that change `entry` (a logged change carries only those). */
function changed(entry: StateEntry, patch: EntryPatch): EntryPatch {
  return Object.fromEntries(Object.entries(patch).filter(([name, value]) => entry[name as keyof EntryPatch] !== value)) as EntryPatch;
}

export class RunState {
  private readonly writer: StateWrites;

  private constructor(
    private readonly store: StateStore,
    private current: StateDoc,
    private readonly lock: StoreLock,
    private readonly now: () => number,
    readonly fullRefresh: boolean,
    /** the file existed when the run began */
    private readonly existed: boolean,
    start: Omit<WriterStart, 'opening'>,
  ) {
    const opened = current;
    this.writer = store.writes(() => this.current, { ...start, opening: () => `${JSON.stringify(opened, null, 2)}\n` });
  }

  /** The state as messages name it: a real path, or s3://BUCKET/KEY. */
  get path(): string {
    return this.store.name;
  }

  /**
   * Locks the state (LockedError, exit 2, when another live run holds it), reads it (with the log a
   * stopped run left), and checks it was written for `request` (a usage error saying what differs,
   * unless --full-refresh, which starts the file over).
   */
  static async open(target: StateStore | string, request: StateRequest, options: OpenOptions): Promise<RunState> {
    const store = storeOf(target, options);
    const lock = await store.lock(options.lockWaitMs ?? 0);
    try {
      const loaded = options.fullRefresh ? undefined : withLog(store.name, await store.read());
      const read = loaded?.doc;
      if (read && loaded) checkRequest(store.name, read.request, request, loaded.version);
      // a file from before --chunk (or the server) was recorded learns it now
      const existing = read && { ...read, request: { ...read.request, chunk: read.request.chunk === undefined ? request.chunk : read.request.chunk, server: read.request.server ?? request.server } };
      const at = instant(options.now());
      const doc: StateDoc = existing ?? { version: STATE_VERSION, createdAt: at, updatedAt: at, request, windows: [] };
      // this run's changes can be logged against the file as it is if it is the document opened
      const text = existing === read ? loaded?.text : undefined;
      const replayed = loaded !== undefined && loaded.text === undefined;
      return new RunState(store, doc, lock, options.now, Boolean(options.fullRefresh), existing !== undefined, { text, replayed });
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /**
   * Reads the state as `open` does, without taking its lock or writing anything: what a run would
   * find there (`run --plan`, `jobs plan`). A file written for another request is the same usage
   * error. Its writes are never called: nothing is recorded.
   */
  static async peek(target: StateStore | string, request: StateRequest, options: Pick<OpenOptions, 'now' | 'fullRefresh'>): Promise<RunState> {
    const store = storeOf(target, options);
    const loaded = options.fullRefresh ? undefined : withLog(store.name, await store.read());
    const read = loaded?.doc;
    if (loaded) checkRequest(store.name, loaded.doc.request, request, loaded.version);
    const at = instant(options.now());
    const doc: StateDoc = read ?? { version: STATE_VERSION, createdAt: at, updatedAt: at, request, windows: [] };
    const noLock: StoreLock = { release: async () => {} };
    return new RunState(store, doc, noLock, options.now, Boolean(options.fullRefresh), read !== undefined, { text: undefined, replayed: false });
  }

  get doc(): StateDoc {
    return this.current;
  }

  /** See resolveStart: with --full-refresh, the state's windows are not consulted. */
  start(since: number | 'auto', until: number, lookbackDays: number, first?: number): Start {
    return resolveStart(since, until, this.existed ? this.current : undefined, { lookbackDays, fullRefresh: this.fullRefresh, start: first });
  }

  plan(windows: readonly Window[], options: Omit<PlanOptions, 'fullRefresh'> = {}): Step[] {
    return planSteps(this.current, windows, { ...options, fullRefresh: this.fullRefresh });
  }

  /** The start of the recorded window holding `second` (not a pending one), or `second` itself. */
  windowStartOf(second: number): number {
    const holding = this.current.windows.find((entry) => entry.status !== 'pending' && entry.sinceUnix < second && second <= entry.untilUnix);
    return holding ? holding.sinceUnix : second;
  }

  entry(window: Window): StateEntry | undefined {
    return this.current.windows[indexOfWindow(this.current.windows, window.since, window.until)];
  }

  /**
   * Changes one window's record and writes it. A window not recorded yet is added; the records it
   * covers (pieces of an earlier split, another --chunk) are superseded and dropped. Writes are
   * serialised: callers running windows concurrently may call it at any time.
   */
  update(window: Window, patch: EntryPatch): Promise<void> {
    const found = this.entry(window);
    if (found) return this.change({ set: [[window.since, window.until, changed(found, patch)]] });
    const covered = this.current.windows.filter((entry) => entry.sinceUnix >= window.since && entry.untilUnix <= window.until);
    // a window whose pieces were recorded (it was split) keeps what they say of its reports
    return this.change({ drop: covered.map(keyOf), set: [[window.since, window.until, { ...fromPieces(covered), ...patch }]] });
  }

  /**
   * One output was rewritten whole with `kept` in it: the other windows recorded with that file are
   * not in it any more, so their records go (the state says what the files hold).
   */
  rewritten(file: string, kept: readonly Window[]): Promise<void> {
    const inFile = (entry: StateEntry) => kept.some((window) => window.since === entry.sinceUnix && window.until === entry.untilUnix);
    const gone = this.current.windows.filter((entry) => entry.file === file && !inFile(entry));
    return gone.length ? this.change({ drop: gone.map(keyOf) }) : this.writer.write();
  }

  /** Records the windows of this run that have no record yet, as pending, and the period it
   * planned (before the first submit): one change. */
  pending(windows: readonly Window[], period?: Window): Promise<void> {
    const missing = windows.filter((window) => !covered(this.current.windows, window));
    const planned = period && { since: parisIso(period.since), until: parisIso(period.until), sinceUnix: period.since, untilUnix: period.until, at: instant(this.now()) };
    if (!missing.length && !planned) return this.writer.write();
    return this.change({ ...(missing.length ? { add: missing.map((window): [number, number] => [window.since, window.until]) } : {}), ...(planned ? { planned } : {}) });
  }

  /** The intent, recorded before the submit: if the run dies before its answer is recorded, the
   * next run can say that a report of unknown ID may be running for the window. */
  submitting(window: Window): Promise<void> {
    return this.update(window, { submitting: instant(this.now()) });
  }

  submitted(window: Window, reportId: string): Promise<void> {
    const attempts = (this.entry(window)?.attempts ?? 0) + 1;
    return this.update(window, {
      status: 'submitted', reportId, submittedAt: instant(this.now()), attempts, error: null, finishedAt: null, submitting: null,
    });
  }

  done(window: Window, result: { rows: number; bytes: number | null; sha256: string | null; file: string | null; etag?: string; outputs?: StateEntry['outputs'] }, unchanged = false): Promise<void> {
    return this.update(window, { status: 'done', ...result, finishedAt: instant(this.now()), error: null, ...this.unchangedPatch(window, unchanged) });
  }

  /** A window's rows are in a table: done, with what was loaded (a file written beside it keeps its record). */
  loaded(window: Window, result: { table: string; rows: number; sha256: string; reportIds?: string[] }, unchanged = false): Promise<void> {
    const at = instant(this.now());
    return this.update(window, { status: 'done', rows: result.rows, loaded: { ...result, at }, finishedAt: at, error: null, ...this.unchangedPatch(window, unchanged) });
  }

  /** `unchanged` recorded when true, and cleared only where it was true: the records of windows
   * that changed keep their shape of before (no field) */
  private unchangedPatch(window: Window, unchanged: boolean): EntryPatch {
    return unchanged ? { unchanged: true } : this.entry(window)?.unchanged ? { unchanged: false } : {};
  }

  /** What `loaded` will record for the window, without recording it (a table state writes it in
   * the window's own transaction, with its rows): its record, and those it supersedes. */
  loadedRecord(window: Window, result: { table: string; rows: number; sha256: string; reportIds?: string[] }): { since: number; until: number; entry: StateEntry; drop: [number, number][] } {
    const at = instant(this.now());
    const patch: EntryPatch = { status: 'done', rows: result.rows, loaded: { ...result, at }, finishedAt: at, error: null };
    const found = this.entry(window);
    if (found) return { since: window.since, until: window.until, entry: { ...found, ...patch }, drop: [] };
    const covered = this.current.windows.filter((entry) => entry.sinceUnix >= window.since && entry.untilUnix <= window.until);
    return { since: window.since, until: window.until, entry: { ...newEntry(window), ...fromPieces(covered), ...patch }, drop: covered.map(keyOf) };
  }

  /** The store the state is kept in. */
  get where(): StateStore {
    return this.store;
  }

  failed(window: Window, message: string): Promise<void> {
    return this.update(window, { status: 'failed', finishedAt: instant(this.now()), error: message });
  }

  /**
   * Forgets what was recorded for these windows (recorded ones, matched exactly): each goes back to
   * pending, as if planned and never submitted, so that the next run fetches it again (also with
   * `--since auto`, which starts at the first window not done). One write, whatever their number.
   */
  forget(windows: readonly Window[]): Promise<void> {
    const forgotten = this.current.windows
      .filter((entry) => windows.some((window) => window.since === entry.sinceUnix && window.until === entry.untilUnix))
      .map((entry): [number, number] => [entry.sinceUnix, entry.untilUnix]);
    // dropped, then added back as pending: one change, whatever their number
    return forgotten.length ? this.change({ drop: forgotten, add: forgotten }) : this.writer.write();
  }

  /** A window split in two (self-splitting runs): its halves replace it, pending. */
  split(window: Window, halves: readonly [Window, Window]): Promise<void> {
    return this.change({ drop: [[window.since, window.until]], add: halves.map((half) => [half.since, half.until]) });
  }

  /** The uploads in flight that a run recorded (a killed one's, when read at the start of a run). */
  get uploads(): readonly Upload[] {
    return this.current.uploads ?? [];
  }

  /** A multipart upload begins to send parts: recorded before the first. */
  uploadStarted(upload: Upload): Promise<void> {
    return this.change({ uploads: [...this.uploads.filter((u) => u.uploadId !== upload.uploadId), { ...upload }] });
  }

  /** Uploads completed or aborted: no longer recorded. */
  uploadsEnded(uploadIds: readonly string[]): Promise<void> {
    if (!this.uploads.some((u) => uploadIds.includes(u.uploadId))) return this.writer.write();
    return this.change({ uploads: this.uploads.filter((u) => !uploadIds.includes(u.uploadId)) });
  }

  /** Applies a change to the state in memory and hands it to the writer (whole file or log). */
  private change(change: Omit<Change<StateEntry>, 'at'>): Promise<void> {
    const logged: Change<StateEntry> = { at: instant(this.now()), ...change };
    if (!logged.drop?.length) delete logged.drop;
    const planned = logged.planned ?? this.current.planned;
    const { uploads: _previous, ...rest } = this.current;
    const uploads = logged.uploads ?? this.current.uploads;
    this.current = { ...rest, updatedAt: logged.at, ...(planned ? { planned } : {}), ...(uploads?.length ? { uploads } : {}), windows: applyChange(this.current.windows, logged, ENTRY_SHAPE.create) };
    return this.writer.write(JSON.stringify(logged));
  }

  /** Waits for pending writes, folds the log into the file, and releases the lock. A failed write
   * was reported to its caller already; close() never throws, so a `finally` does not hide the
   * error that stopped the run. */
  async close(): Promise<void> {
    await this.writer.close();
    await this.lock.release();
  }
}
