// The state file's format, and the rules that read it without touching a file: what a window's
// record is (its schema, a new one, what the pieces of a split window say of the whole), reading
// a document's text, and checking it was written for this request. The run's store is state.ts.

import { z } from 'zod';
import { UsageError } from '../errors.js';
import { sameOutput } from '../destinations/sinks.js';
import { sameLoad } from '../load/engines.js';
import { SIDES, metricsWithField } from '../report/catalog.js';
import { storedReportId } from '../api/schemas.js';
import type { ReportRequest } from '../report/request.js';
import type { EntryShape } from './state-log.js';
import { parisIso } from '../report/time.js';
import type { Window } from '../report/windows.js';
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

export function parseDocument(path: string, text: string): { doc: StateDoc; version: number } {
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
  const each = (request: StateRequest) => request.outputs ?? [request.output];
  const outputs = (request: StateRequest) => each(request).map((output) => output ?? '(stdout)').join(', ');
  const same = each(stored).length === each(wanted).length && each(stored).every((output, i) => sameOutput(output, each(wanted)[i] ?? null));
  if (!stored.outputs && !wanted.outputs) {
    if (!same) scalar('the output', stored.output, wanted.output);
  } else if (!same) differences.push(`the outputs are ${outputs(wanted)} here, ${outputs(stored)} in the state file`);
  // the requested columns follow from the metrics and breakdowns: another list of them is another
  // set of columns already said
  const derived = carried(stored.metrics).join(',') !== carried(wanted.metrics).join(',') || stored.breakdowns.join(',') !== wanted.breakdowns.join(',');
  outputShape(derived ? { ...stored, columns: undefined } : stored, wanted, differences);
  if ((stored.load ?? null) !== null || (wanted.load ?? null) !== null) {
    const a = stored.load ? `${stored.load.table} in ${stored.load.target}` : null;
    const b = wanted.load ? `${wanted.load.table} in ${wanted.load.target}` : null;
    if (a !== b && !(stored.load && wanted.load && sameLoad(stored.load, wanted.load))) differences.push(`--load is ${b ?? '(none)'} here, ${a ?? '(none)'} in the state file`);
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

export function checkRequest(path: string, stored: StateRequest, wanted: StateRequest, version: number): void {
  const differences = requestDifferences(stored, wanted);
  if (!differences.length) return;
  // the columns named as a difference (another breakdown or metric is no matter of columns: the
  // recorded columns would not make this request's rows)
  const columnsDiffer = differences.some((difference) => difference.startsWith('--columns are '));
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

export type EntryPatch = Partial<Pick<StateEntry, 'status' | 'reportId' | 'submittedAt' | 'attempts' | 'rows' | 'bytes' | 'sha256' | 'file' | 'etag' | 'finishedAt' | 'error' | 'submitting' | 'loaded' | 'unchanged' | 'outputs'>>;

export function newEntry(window: Window): StateEntry {
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
export function fromPieces(pieces: readonly StateEntry[]): EntryPatch {
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
export const ENTRY_SHAPE: EntryShape<StateEntry> = {
  create: (since, until) => newEntry({ since, until }),
  fields: ['status', 'reportId', 'submittedAt', 'attempts', 'rows', 'bytes', 'sha256', 'file', 'etag', 'finishedAt', 'error', 'submitting', 'loaded', 'unchanged', 'outputs'] satisfies (keyof EntryPatch)[],
  invalid: (entry) => {
    const parsed = entrySchema.safeParse(entry);
    if (parsed.success) return undefined;
    const issue = parsed.error.issues[0];
    return `${issue?.path.join('.') || 'a window'}: ${issue?.message ?? 'unexpected shape'}`;
  },
};
