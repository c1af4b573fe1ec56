// What loading into a table needs of a database engine (duckdb.ts, postgres.ts), and what the two
// share: the table's columns (the export's, typed as `reporting schema --as duckdb|postgres`, plus
// the metadata columns), the scope's canonical form, the comparison of a table with the export
// (schema drift), and the per-window replace rule's statements.

import type { Host } from '../host.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import type { RowLayout } from '../export/typed.js';
import { LOAD_METADATA, createTable, fieldType, sqlType, type Column, type ColumnType, type Dialect } from '../report/schema.js';
import type { ReportRequest } from '../report/request.js';
import { snakeCase } from '../report/column-case.js';
import { qualified, quoteIdent, type Engine, type LoadTarget } from './target.js';

export const ON_SCHEMA_CHANGE = ['fail', 'add-columns', 'allow-missing'] as const;
export type OnSchemaChange = (typeof ON_SCHEMA_CHANGE)[number];

/** The metadata of a window's rows: report ID, window since and until (Unix seconds), scope, and
 * when they were loaded (milliseconds). */
export type Metadata = readonly [string, number, number, string, number];

/** Rows going into a table inside the open transaction. */
export interface TableAppender {
  /** one row: the export's columns, read typed from the layout (an error if a value does not fit
   * its type), then the metadata */
  row(layout: RowLayout, metadata: Metadata): void;
  /** hands what the rows filled to the database, waiting for it when it is behind */
  drain(): Promise<void>;
  /** every row is in (still inside the transaction) */
  finish(): Promise<void>;
  /** the rows are given up (the transaction is then rolled back): a COPY in progress is failed */
  cancel(): Promise<void>;
}

/** A connection to one database, as the table destination uses it. */
export interface LoadConnection {
  readonly engine: Engine;
  readonly dialect: Dialect;
  /** the table's columns, name -> type as the database names it (lower case); undefined: no table */
  columns(table: readonly string[]): Promise<Map<string, string> | undefined>;
  /** a statement; `$1`, `$2`... are the parameters */
  execute(sql: string, params?: readonly (string | number)[]): Promise<void>;
  /** the rows a window replaces deleted (a DELETE statement and its parameters), inside the
   * transaction; `columns`: the table's width (DuckDB sizes its memory by both) */
  deleteRows(sql: string, params: readonly (string | number)[], columns: number): Promise<void>;
  /** a query's rows, every value as text */
  query(sql: string, params?: readonly (string | number)[]): Promise<string[][]>;
  /** rows appended in bulk (DuckDB's appender, Postgres's COPY) inside the transaction; `order`
   * is the table's columns in their order (a column added later comes last; one the export does
   * not write is NULL) */
  appender(table: readonly string[], columns: readonly Column[], order: readonly string[]): Promise<TableAppender>;
  /** Inside a transaction: waits until no other process holds the table's lock for `scope`
   * (`undefined`: the table itself, while it is created or altered), then holds it until the
   * transaction ends (Postgres: an advisory lock; DuckDB: nothing, its file lock already lets one
   * process write at a time). Two loaders of one window then replace in turn, never side by side. */
  lock(table: readonly string[], scope?: string): Promise<void>;
  /** `--state table`: takes a run's hold on a state key, kept until unlockState or the
   * connection's end (false: another holds it). Postgres: a session advisory lock, which the
   * server frees when the session ends, a killed process's included; DuckDB: the file's own lock
   * keeps other processes out, and one connection of this process holds a key at a time. */
  tryLockState(key: string): Promise<boolean>;
  unlockState(key: string): Promise<void>;
  /** the other session holding a state key (Postgres), as far as the server says */
  stateHolder(key: string): Promise<StateHolder | undefined>;
  close(): Promise<void>;
}

/** What the rest of the tool asks of a database engine of --load; engines.ts holds the table of
 * them, each defined beside its connection (duckdb.ts, postgres.ts). */
export interface LoadEngine {
  readonly name: Engine;
  /** --load's text names this engine (by its prefix) */
  matches(text: string): boolean;
  /** the target, checked (a usage error says what is wrong) */
  parse(text: string, cwd: string): LoadTarget;
  /** the database as one string, so that two spellings of one database are one */
  identity(target: LoadTarget, cwd: string, platform: NodeJS.Platform): string;
  /** a table (in parts) as the engine names it: the default schema is no part of it */
  tableIdentity(parts: readonly string[]): string;
  /** the hint for a --table this engine does not take (undefined: it takes it) */
  tableHint(parts: readonly string[]): string | undefined;
  connect(target: LoadTarget, deps: ConnectDeps): Promise<LoadConnection>;
  /** every secret its connection may use: masked wherever text leaves the process */
  secrets(target: LoadTarget, env: Readonly<Record<string, string | undefined>>): readonly (string | undefined)[];
  /** the database is gone (a DuckDB file removed): every window of the period is a fresh load */
  gone(target: LoadTarget, cwd: string): boolean;
  /** a job file's value, its path made relative to the job file's folder */
  inFolder(text: string, folder: string): string;
}

/** What opening a connection needs of the run. */
export interface ConnectDeps {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** how long a database held by another process is waited for (DuckDB's file) */
  waitMs: number;
  /** the flag that sets waitMs, named in the hint of a database held: --max-wait unless said
   * (a state's: --lock-wait); null: a command that does not wait (`state show`) */
  waitFlag?: string | null;
  /** told once, as a wait for a database another process holds begins (DuckDB's file) */
  onWait?: (message: string) => void;
  signal: AbortSignal;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** the process, named to another run that finds a state's lock held (Postgres's application_name) */
  holder?: { pid: number; host: string };
  /** this process, to name the drafts of a new DuckDB file by its pid and remove those of a
   * process no longer alive (fs/atomic.ts cleanStaleTemps); without it, drafts are never taken for
   * stale ones */
  host?: Pick<Host, 'pid' | 'isAlive'>;
}

/** Who holds a state key: the process (from the session's application_name) and since when. */
export interface StateHolder {
  pid: number;
  host: string;
  since: string;
}

export const METADATA_NAMES = ['_report_id', '_window_since', '_window_until', '_scope', '_loaded_at'] as const;

/** The columns of the table: the export's, then the metadata's. */
export function tableColumns(exported: readonly Column[]): Column[] {
  return [...exported.map((column) => ({ ...column, nullable: true })), ...LOAD_METADATA];
}

/** The export's columns, from the output plan: those chosen by --columns, typed by the request's
 * schema (a name the contract does not know, under --no-validate, is text). */
export function exportedColumns(schema: readonly { name: string; type: ColumnType }[] | undefined, selected: readonly string[] | undefined, time: Parameters<typeof fieldType>[1]): Column[] {
  const types = new Map(schema?.map((column) => [column.name, column.type]));
  const names = selected ?? schema?.map((column) => column.name) ?? [];
  const metadata = new Set(LOAD_METADATA.map((column) => column.name));
  const clash = names.find((name) => metadata.has(name));
  if (clash) throw new UsageError(`the export has a column "${clash}", which --load keeps for its own metadata`, 'leave it out with --columns');
  return names.map((name) => ({ name, type: types.get(name) ?? fieldType(name, time), nullable: true, key: false }));
}

/** The CREATE TABLE that --load runs (and `schema --for-load` prints). */
export function loadDdl(exported: readonly Column[], dialect: Dialect, table: readonly string[], ifNotExists = false): string {
  return createTable(tableColumns(exported), dialect, table.join('.'), { ifNotExists });
}

/**
 * The scope: what tells one run's rows from another's in the same table. Canonical: fields in this
 * order, separated by `;`: base URL, side, breakdowns (sorted), filters (by name, values sorted,
 * `name=v1,v2` joined by `&`; `-` for none), account (the profile's name, `env` with
 * REPORTING_TOKEN, or --scope's value).
 */
export function scopeOf(request: Pick<ReportRequest, 'side' | 'breakdowns' | 'filters'>, baseUrl: string, account: string): string {
  return scopeText(request, baseUrl, account, escapeScope);
}

/** The scope as versions before issue 30 wrote it, values unescaped: the same text as scopeOf's
 * unless a value holds `,&;=%`. Then it is also another request's scope (`--carrier 'a,b'` was
 * `--carrier a --carrier b`'s): rows under it are named, never replaced (docs/CHANGES.md). */
export function legacyScopeOf(request: Pick<ReportRequest, 'side' | 'breakdowns' | 'filters'>, baseUrl: string, account: string): string {
  return scopeText(request, baseUrl, account, (value) => value);
}

/** `%`, and the separators of the scope's text (`,&;=`), as %XX: a value holding them names one value. */
const escapeScope = (value: string) => value.replace(/[%,&;=]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

function scopeText(request: Pick<ReportRequest, 'side' | 'breakdowns' | 'filters'>, baseUrl: string, account: string, escape: (value: string) => string): string {
  const breakdowns = [...request.breakdowns].sort().join(',') || '-';
  const filters = Object.keys(request.filters).sort()
    .map((name) => `${name}=${[...(request.filters[name] ?? [])].map(escape).sort().join(',')}`).join('&') || '-';
  return `base=${baseUrl};side=${request.side};breakdowns=${breakdowns};filters=${filters};account=${escape(account)}`;
}

const normalType = (type: string) => {
  const t = type.toLowerCase().trim();
  return t === 'timestamptz' ? 'timestamp with time zone' : t === 'float8' ? 'double precision' : t === 'int8' ? 'bigint' : t;
};

const COLUMN_TYPES: readonly ColumnType[] = ['int64', 'double', 'date', 'timestamp', 'string'];

/** The table's columns the export does not have (added by an earlier run's add-columns, or by
 * hand), typed back from their SQL type (text when it is none of the export's), metadata aside. */
export function tableOnlyColumns(existing: ReadonlyMap<string, string>, wanted: readonly Column[], dialect: Dialect): Column[] {
  const names = new Set([...wanted, ...LOAD_METADATA].map((column) => column.name));
  return [...existing].filter(([name]) => !names.has(name)).map(([name, have]) => ({
    name, nullable: true, key: false,
    type: COLUMN_TYPES.find((type) => normalType(sqlType(dialect, type)) === normalType(have)) ?? 'string',
  }));
}

export interface Drift {
  /** export columns the table lacks */
  added: Column[];
  /** table columns the export does not write (kept, filled with NULL) */
  missing: string[];
  /** same name, another type */
  retyped: { name: string; table: string; export: string }[];
}

/** How the table's columns differ from what this run loads. */
export function driftOf(existing: ReadonlyMap<string, string>, wanted: readonly Column[], dialect: Dialect): Drift {
  const added: Column[] = [];
  const retyped: Drift['retyped'] = [];
  for (const column of wanted) {
    const have = existing.get(column.name);
    const want = sqlType(dialect, column.type);
    if (have === undefined) added.push(column);
    else if (normalType(have) !== normalType(want)) retyped.push({ name: column.name, table: have, export: want });
  }
  const names = new Set(wanted.map((column) => column.name));
  const missing = [...existing.keys()].filter((name) => !names.has(name));
  return { added, missing, retyped };
}

/** The table's columns are the export's fields named in the other --column-case (`revenueEuro`
 * against `revenue_euro`): refused whatever the policy, since add-columns would split each field
 * over two columns. */
export function caseDriftError(table: string, drift: Drift): CliError | undefined {
  const recased = drift.added.flatMap((column) => drift.missing.filter((name) => name !== column.name && snakeCase(name) === snakeCase(column.name)).map((name) => `${name} in the table, ${column.name} in the export`));
  if (!recased.length) return undefined;
  return new CliError(`the table ${table} does not have the export's columns: its columns are named in the other --column-case (${recased.slice(0, 3).join('; ')}${recased.length > 3 ? '; ...' : ''}); nothing was loaded`, EXIT.usage,
    'load with the --column-case the table was made with, or into another --table');
}

/** A drift refused: exit 2, the difference printed, nothing written. */
export function driftError(table: string, drift: Drift, policy: OnSchemaChange): CliError | undefined {
  const parts: string[] = [];
  if (drift.retyped.length) parts.push(`type changed: ${drift.retyped.map((r) => `${r.name} (${r.table} in the table, ${r.export} in the export)`).join(', ')}`);
  if (drift.added.length && policy !== 'add-columns') parts.push(`new in the export: ${drift.added.map((c) => c.name).join(', ')}`);
  const recased = caseDriftError(table, drift);
  if (recased) return recased;
  if (parts.length) {
    return new CliError(`the table ${table} does not have the export's columns: ${parts.join('; ')}; nothing was loaded`, EXIT.usage,
      drift.retyped.length ? 'a type change is never applied: load into another --table, or change the column yourself' : 'add the new columns with --on-schema-change add-columns, or choose the columns with --columns');
  }
  const empty = leftEmpty(drift);
  if (empty.length && policy === 'fail') {
    // fewer metrics, or another breakdown: the window's rows would hold NULL in those columns
    return new CliError(`the table ${table} has columns this load does not write: ${empty.join(', ')}; its rows would hold NULL there; nothing was loaded`, EXIT.usage,
      'load the same --metrics and --breakdowns as the table holds, load into another --table, or leave them NULL with --on-schema-change allow-missing');
  }
  return undefined;
}

/** The table's columns (not the metadata's) that a load of the export would leave NULL. */
export const leftEmpty = (drift: Pick<Drift, 'missing'>) => drift.missing.filter((name) => !(METADATA_NAMES as readonly string[]).includes(name));

/** ALTER TABLE ... ADD COLUMN for each new column (nullable). */
export const addColumnsSql = (table: readonly string[], columns: readonly Column[], dialect: Dialect) =>
  columns.map((column) => `ALTER TABLE ${qualified(table)} ADD COLUMN ${quoteIdent(column.name)} ${sqlType(dialect, column.type)}`);

/** The windows of this scope that overlap [since, until] only partly (another --chunk), or, with
 * `outside`, that straddle the edges of a period being replaced whole. */
export const partialSql = (table: readonly string[]) =>
  `SELECT DISTINCT CAST(EXTRACT(EPOCH FROM _window_since) AS BIGINT), CAST(EXTRACT(EPOCH FROM _window_until) AS BIGINT) FROM ${qualified(table)} WHERE _scope = $1 AND _window_since <= to_timestamp($3) AND _window_until >= to_timestamp($2) AND NOT (_window_since >= to_timestamp($2) AND _window_until <= to_timestamp($3)) ORDER BY 1 LIMIT 5`;

/** The windows rows of this scope were loaded for that overlap [since, until]. */
export const loadedWindowsSql = (table: readonly string[]) =>
  `SELECT DISTINCT CAST(EXTRACT(EPOCH FROM _window_since) AS BIGINT), CAST(EXTRACT(EPOCH FROM _window_until) AS BIGINT) FROM ${qualified(table)} WHERE _scope = $1 AND _window_since <= to_timestamp($3) AND _window_until >= to_timestamp($2) ORDER BY 1`;

/** The rows of this scope whose window lies inside [since, until]: their number, and their report
 * IDs (comma-separated; IDs are safe: api/schemas.ts) */
export const heldSql = (table: readonly string[]) =>
  `SELECT count(*), string_agg(DISTINCT _report_id, ',') FROM ${qualified(table)} WHERE _scope = $1 AND _window_since >= to_timestamp($2) AND _window_until <= to_timestamp($3)`;

/** The scopes of the rows whose window overlaps [since, until], with their number of rows (a few
 * scopes: one per account and request). */
export const scopesSql = (table: readonly string[]) =>
  `SELECT _scope, count(*) FROM ${qualified(table)} WHERE _window_since <= to_timestamp($2) AND _window_until >= to_timestamp($1) GROUP BY 1 ORDER BY 1 LIMIT 1000`;

/** The replace rule: every row of this scope whose window lies inside [since, until]. */
export const deleteSql = (table: readonly string[]) =>
  `DELETE FROM ${qualified(table)} WHERE _scope = $1 AND _window_since >= to_timestamp($2) AND _window_until <= to_timestamp($3)`;

/** --full-refresh: every row of this scope whose window overlaps [since, until]. */
export const deleteOverlappingSql = (table: readonly string[]) =>
  `DELETE FROM ${qualified(table)} WHERE _scope = $1 AND _window_since <= to_timestamp($3) AND _window_until >= to_timestamp($2)`;
