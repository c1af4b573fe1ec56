// A database table (`run --load`): each planned window is one transaction that replaces every row
// of the same scope whose window lies inside it, then appends the window's rows (DuckDB's
// appender, Postgres's COPY), with the metadata columns. The pieces of a split window go into the
// one transaction of their window. With a state file, a window whose rows are those loaded last
// time (same sha256) is rolled back rather than rewritten: `unchanged`.

import { createHash, type Hash } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeNetworkError } from '../api/http.js';
import type { Summary } from '../api/schemas.js';
import { CliError, EXIT, UnexpectedResponseError } from '../errors.js';
import { BodyBrokenError, type Progress } from '../export/export.js';
import { RowLayout } from '../export/typed.js';
import { SnakeKeys } from '../export/case.js';
import type { ColumnCase } from '../report/column-case.js';
import { ReportFormatError, ReportScanner, fromBytes, sameKeys, type Kind } from '../export/scanner.js';
import {
  addColumnsSql, caseDriftError, deleteOverlappingSql, deleteSql, heldSql, scopesSql, driftError, driftOf, leftEmpty, loadDdl, loadedWindowsSql, partialSql, tableOnlyColumns,
  type LoadConnection, type Metadata, type OnSchemaChange, type TableAppender,
} from '../load/load.js';
import { LOAD_METADATA, fieldType, type Column } from '../report/schema.js';
import { describeWindow, type Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';

export interface TableSpec {
  /** opens the connection (the engine's client loads then) */
  connect(): Promise<LoadConnection>;
  /** the table's name, parts (schema, table) as given */
  table: readonly string[];
  /** the export's columns, typed, named in `columnCase` */
  columns: readonly Column[];
  /** --column-case: the name a row's field has in the table */
  columnCase?: ColumnCase;
  /** the columns were chosen (the requested ones by default, or --columns): other fields of a row
   * are left out, as in a file */
  selected: boolean;
  /** where the fields left out that held a value are named (the run's warning at its end) */
  dropped?: Set<string>;
  scope: string;
  /** the scope as earlier versions wrote it (load/load.ts legacyScopeOf): where it differs, rows
   * under it in the period are named at the end (they may be this request's, or another's) */
  legacyScope?: string;
  onSchemaChange: OnSchemaChange;
  /** --full-refresh: the run's period is replaced whole */
  fullRefresh: boolean;
  period: Window;
  /** the windows this run loads: one that an earlier load's window overlaps only partly is refused
   * before any request (each window's transaction checks again, for a load made meanwhile) */
  windows?: readonly Window[];
  /** what the state file says was loaded for this window (with --state) */
  loadedBefore?(window: Window): { table: string; sha256: string; rows: number; reportIds?: readonly string[] } | undefined;
  now(): number;
  /** `--state table` with the table alone: the window's done-record, written on the connection
   * inside the window's transaction, before its COMMIT (loaded and recorded at once, or neither) */
  recordWindow?(connection: LoadConnection, loaded: { window: Window; table: string; rows: number; sha256: string; reportIds: string[] }): Promise<void>;
  /** a line for the run's end (a warning): what the load did that the user should know */
  warn?(message: string): void;
  /** removes a temporary folder even when the process is made to exit; answers the undo */
  atExit(cleanup: () => void): () => void;
}

interface Open {
  origin: Window;
  appender: TableAppender;
  hash: RowHash;
  rows: number;
  reportIds: string[];
  pieces: Window[];
  summary?: Summary;
  /** --columns all with add-columns: the pieces' report bodies as received, kept on disk until the
   * window commits, so that a field first seen in the middle of the window can add its column and
   * the window be loaded again from its start */
  copies?: { dir: string; pieces: { path: string; metadata: Metadata }[]; forget: () => void };
}

export class TableDestination implements Destination {
  private connection?: LoadConnection;
  /** the table's columns in their order, once checked */
  private order: string[] = [];
  private ready?: Promise<LoadConnection>;
  private open?: Open;
  readonly shownTable: string;
  /** the export's columns, and those added since by fields the rows brought (add-columns) */
  private columns: readonly Column[];
  /** fields a row brought that the columns lack: the window is loaded again once they are added */
  private growing?: Set<string>;
  /** what the table held for the open window before its delete (with a state's record of it) */
  private held?: { rows: number; reportIds: string[] };

  constructor(private readonly spec: TableSpec) {
    this.shownTable = spec.table.join('.');
    this.columns = spec.columns;
  }

  /** whether a field first seen mid-window can be added (its window then loaded again from a copy) */
  private get grows(): boolean {
    return !this.spec.selected && this.spec.onSchemaChange === 'add-columns';
  }

  /** Connects, creates the table or checks its columns, and (--full-refresh) refuses rows that
   * straddle the period's edges: all before the first row is written. */
  async prepare(): Promise<void> {
    await this.connected();
  }

  private connected(): Promise<LoadConnection> {
    this.ready ??= this.connectAndCheck();
    return this.ready;
  }

  private async connectAndCheck(): Promise<LoadConnection> {
    const { spec } = this;
    const connection = await spec.connect();
    this.connection = connection;
    // created or altered under the table's lock: another run creating it or adding the same column
    // at the same moment waits, then finds it made
    await connection.execute('BEGIN');
    try {
      await connection.lock(spec.table);
      await this.createOrCheck(connection);
      await connection.execute('COMMIT');
    } catch (error) {
      await connection.execute('ROLLBACK').catch(() => undefined);
      throw error;
    }
    this.order = [...(await connection.columns(spec.table))?.keys() ?? []];
    await this.otherScopes(connection);
    if (spec.fullRefresh) {
      // rows of this scope that lie partly outside the period cannot be replaced by it
      const edges = await connection.query(partialSql(spec.table), [spec.scope, spec.period.since, spec.period.until]);
      if (edges.length) throw new CliError(`--full-refresh replaces ${describeWindow(spec.period)} in ${this.shownTable}, but rows of this scope were loaded for ${listWindows(edges)}, which straddle its edges; nothing was changed`, EXIT.usage,
        'widen --since/--until to whole windows of the earlier load');
    } else if (spec.windows?.length) {
      // the windows loaded before within the period, against this run's: one straddling a window
      // of this run is refused now, before any report is requested
      const loaded = await connection.query(loadedWindowsSql(spec.table), [spec.scope, spec.period.since, spec.period.until]);
      for (const window of spec.windows) {
        // partialSql's test: overlapping the window, not inside it
        const partial = loaded.filter(([since, until]) => Number(since) <= window.until && Number(until) >= window.since && !(Number(since) >= window.since && Number(until) <= window.until));
        if (partial.length) throw this.partialError(partial, window, 'nothing was changed');
      }
    }
    return connection;
  }

  /** The table created with the export's columns, or its columns checked against them (and those
   * it lacks added, with add-columns). */
  private async createOrCheck(connection: LoadConnection): Promise<void> {
    const { spec } = this;
    const current = await connection.columns(spec.table);
    if (!current) {
      await connection.execute(loadDdl(spec.columns, connection.dialect, spec.table, true));
      return;
    }
    const drift = driftOf(current, [...spec.columns, ...LOAD_METADATA], connection.dialect);
    // --columns all: the table's columns beyond the export's are known fields, not left empty
    const refused = caseDriftError(this.shownTable, drift) ?? driftError(this.shownTable, spec.selected ? drift : { ...drift, missing: [] }, spec.onSchemaChange);
    if (refused) throw refused;
    const empty = spec.selected ? leftEmpty(drift) : [];
    if (empty.length) spec.warn?.(`the table ${this.shownTable} has columns this load does not write, left NULL in its rows (--on-schema-change ${spec.onSchemaChange}): ${empty.join(', ')}`);
    for (const sql of addColumnsSql(spec.table, drift.added, connection.dialect)) await connection.execute(sql);
    // --columns all: a column the table has beyond the export's (an earlier add-columns) is
    // known, so its field in the rows is neither a new field nor left out
    if (!spec.selected) this.columns = [...this.columns, ...tableOnlyColumns(current, spec.columns, connection.dialect)];
  }

  /** Rows of this scope loaded for windows that overlap `window` only partly: refused. */
  private partialError(partial: readonly string[][], window: Window, changed: string): CliError {
    // the earlier windows and this one, whole: the period a --full-refresh can replace
    const whole = partial.reduce((span, [since, until]) => ({ since: Math.min(span.since, Number(since)), until: Math.max(span.until, Number(until)) }), window);
    return new CliError(`${this.shownTable} holds rows of this scope loaded for ${listWindows(partial)}, which ${partial.length > 1 ? 'overlap' : 'overlaps'} the window ${describeWindow(window)} only partly (loaded with another --chunk); ${changed}`, EXIT.usage,
      `reload their whole period with --full-refresh and --since/--until covering ${describeWindow(whole)}, or load whole windows of the earlier --chunk`);
  }

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    const connection = await this.connected();
    if (!this.open || this.open.origin.since !== origin.since) {
      // a window starts at its first piece: a later one finding it not open (rolled back) would
      // load that piece alone in place of the whole window
      if (piece.since !== origin.since) throw new Error(`the table got a piece of ${describeWindow(origin)} without its first piece`);
      this.open = await this.startWindow(connection, origin);
    }
    const open = this.open;
    open.reportIds.push(reportId);
    open.pieces.push(piece);
    const metadata: Metadata = [reportId, origin.since, origin.until, this.spec.scope, this.spec.now()];
    return {
      take: async (body, progress) => this.take(open, metadata, body, progress),
      // a broken download starts the window again (its transaction rolled back by abort) when this
      // piece is its first; a later piece's rows would lose the earlier pieces'
      restartable: piece.since === origin.since,
      abort: async () => this.rollback(),
      commit: async () => (piece.until === origin.until ? [await this.commitWindow(open)] : []),
    };
  }

  private async startWindow(connection: LoadConnection, origin: Window): Promise<Open> {
    this.growing = undefined;
    const appender = await this.openTransaction(connection, origin);
    return { origin, appender, hash: new RowHash(), rows: 0, reportIds: [], pieces: [] };
  }

  /** BEGIN, the rows the window replaces deleted, and its appender. */
  private async openTransaction(connection: LoadConnection, origin: Window): Promise<TableAppender> {
    const { spec } = this;
    await connection.execute('BEGIN');
    try {
      // a second loader of this window (another process) waits here until this one commits, then
      // replaces its rows: the window holds one report's rows, whichever order they come in
      await connection.lock(spec.table, spec.scope);
      // what the table holds for this window now (before the delete): unchanged is decided
      // against it, not against the state's record alone (rows deleted meanwhile are loaded again)
      this.held = undefined;
      if (spec.loadedBefore?.(origin)) {
        const [[rows, ids] = []] = await connection.query(heldSql(spec.table), [spec.scope, origin.since, origin.until]);
        this.held = { rows: Number(rows ?? 0), reportIds: ids ? ids.split(',') : [] };
      }
      if (spec.fullRefresh) await connection.deleteRows(deleteOverlappingSql(spec.table), [spec.scope, origin.since, origin.until], this.order.length);
      else {
        const partial = await connection.query(partialSql(spec.table), [spec.scope, origin.since, origin.until]);
        if (partial.length) throw this.partialError(partial, origin, 'nothing of this window was changed');
        await connection.deleteRows(deleteSql(spec.table), [spec.scope, origin.since, origin.until], this.order.length);
      }
      return await connection.appender(spec.table, this.columns, this.order);
    } catch (error) {
      await connection.execute('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** A piece's report body, scanned, each row appended (and hashed: what was loaded). */
  private async take(open: Open, metadata: Metadata, body: AsyncIterable<Uint8Array>, progress?: Progress): Promise<{ rows: number; bytes: number; summary?: Summary }> {
    const before = open.rows;
    let bytes = 0;
    const copy = this.grows ? await this.copyOf(open, metadata) : undefined;
    try {
      let scanner = this.scannerFor(open, metadata);
      try {
        for await (const chunk of body) {
          const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
          bytes += buffer.length;
          await copy?.write(buffer);
          guarded(() => scanner.push(buffer));
          if (this.growing) scanner = await this.regrow(open);
          await open.appender.drain();
          progress?.(open.rows - before, bytes);
        }
      } catch (error) {
        // a download streamed in (no spool) that broke off: retried from the window's start when
        // this piece is its first (restartable), as a file's is
        const network = error instanceof CliError ? undefined : describeNetworkError(error);
        if (network) throw new BodyBrokenError(`the download broke off after ${bytes} bytes: ${network}`);
        throw error;
      }
      guarded(() => scanner.end());
      while (this.growing) {
        scanner = await this.regrow(open);
        guarded(() => scanner.end());
      }
      await open.appender.drain();
      open.summary = scanner.members.summary as Summary | undefined;
    } finally {
      await copy?.close();
    }
    return { rows: open.rows - before, bytes, summary: open.summary };
  }

  /** The scanner of a piece's body: each row placed in the columns and appended. The body is read
   * in bytes mode (its UTF-8 not decoded, ReportScanner): the numbers and dates are read as they
   * are, a text value is decoded only when it is not ASCII, and the rows are hashed as received. */
  private scannerFor(open: Open, metadata: Metadata): ReportScanner {
    const columns = this.columns;
    const layout = new RowLayout(columns.map((column) => column.name), columns, this.spec.dropped, true);
    layout.startEmpty('table');
    const known = new Set(columns.map((column) => column.name));
    // the keys handed on (bytes) and the same keys as text, named as the table's columns are
    // (--column-case): a new array only when the keys change
    let byteKeys: string[] = [];
    let keys: string[] = [];
    const { selected } = this.spec;
    const named = this.spec.columnCase === 'snake' ? new SnakeKeys() : undefined;
    return new ReportScanner({
      row: (rowKeys: string[], values: string[], kinds: Kind[], raw: string) => {
        // the columns are being added: this row and the rest are loaded again from the copy
        if (this.growing) return;
        if (!sameKeys(rowKeys, byteKeys)) {
          const text = named ? named.of(rowKeys.map(fromBytes)) : rowKeys.map(fromBytes);
          const extra = selected ? [] : text.filter((key) => !known.has(key));
          if (extra.length) {
            if (!this.grows) throw this.newFieldError(open.origin, extra);
            this.growing = new Set(extra);
            return;
          }
          byteKeys = rowKeys;
          keys = text;
        }
        layout.place(keys, values, kinds);
        open.appender.row(layout, metadata);
        open.hash.row(raw);
        open.rows++;
      },
    }, undefined, true);
  }

  /** A field the table has no column for, under --on-schema-change fail: the difference, printed. */
  private newFieldError(origin: Window, extra: readonly string[]): CliError {
    const has = this.order.filter((name) => extra.includes(name));
    const missing = extra.filter((name) => !has.includes(name));
    const where = `the rows of ${describeWindow(origin)}`;
    const parts = [
      ...(missing.length ? [`new in ${where}: ${missing.join(', ')}`] : []),
      ...(has.length ? [`in ${where} and in the table but not in the export's columns: ${has.join(', ')}`] : []),
    ];
    return new CliError(`the table ${this.shownTable} does not have the export's columns: ${parts.join('; ')}; nothing of this window was loaded`, EXIT.usage,
      'add the new columns with --on-schema-change add-columns, or choose the columns with --columns');
  }

  /** Where a piece's body is copied as it comes (add-columns): a file of the window's own folder. */
  private async copyOf(open: Open, metadata: Metadata): Promise<{ write(chunk: Buffer): Promise<void>; close(): Promise<void> }> {
    if (!open.copies) {
      const dir = mkdtempSync(join(tmpdir(), 'reporting-load-'));
      open.copies = { dir, pieces: [], forget: this.spec.atExit(() => rmSync(dir, { recursive: true, force: true })) };
    }
    const path = join(open.copies.dir, `${open.copies.pieces.length}.json`);
    open.copies.pieces.push({ path, metadata });
    const handle = await openFile(path, 'w');
    let closed = false;
    return {
      write: async (chunk) => { await handle.write(chunk); },
      close: async () => {
        if (closed) return;
        closed = true;
        await handle.close();
      },
    };
  }

  /**
   * Rows brought fields the table lacks (add-columns): the window's transaction is rolled back (a
   * DuckDB table cannot be altered after rows were deleted in the same transaction), the columns
   * are added, and the window is loaded again from the copies of its pieces, in a new transaction.
   * Answers the scanner of the last piece, fed with what was received of it so far.
   */
  private async regrow(open: Open): Promise<ReportScanner> {
    const connection = this.connection as LoadConnection;
    const { table } = this.spec;
    for (;;) {
      const fields = [...(this.growing ?? [])];
      this.growing = undefined;
      await open.appender.cancel().catch(() => undefined);
      await connection.execute('ROLLBACK');
      const added = fields.map((name): Column => ({ name, type: fieldType(name, undefined), nullable: true, key: false }));
      const missing = added.filter((column) => !this.order.includes(column.name));
      for (const sql of addColumnsSql(table, missing, connection.dialect)) {
        // another run may add it at the same moment: then it is there
        await connection.execute(sql).catch(async (error: unknown) => {
          const now = await connection.columns(table);
          if (!missing.every((column) => now?.has(column.name))) throw error;
        });
      }
      this.columns = [...this.columns, ...added];
      this.order = [...(await connection.columns(table))?.keys() ?? []];
      open.appender = await this.openTransaction(connection, open.origin);
      open.hash = new RowHash();
      open.rows = 0;
      const pieces = open.copies?.pieces ?? [];
      let scanner: ReportScanner | undefined;
      for (const [i, piece] of pieces.entries()) {
        scanner = this.scannerFor(open, piece.metadata);
        for await (const chunk of createReadStream(piece.path)) {
          guarded(() => (scanner as ReportScanner).push(chunk as Buffer));
          if (this.growing) break;
          await open.appender.drain();
        }
        if (this.growing) break;
        // the earlier pieces are whole; the last one goes on with the rest of its body
        if (i < pieces.length - 1) guarded(() => (scanner as ReportScanner).end());
        if (this.growing) break;
      }
      if (!this.growing) return scanner as ReportScanner;
    }
  }

  /** The other scopes of the period's rows (one query), said at the end of the run: this
   * account's rows for other breakdowns (each a full count, so a sum across `_scope` counts them
   * twice), and rows under this scope's old text (legacyScopeOf: never replaced). */
  private async otherScopes(connection: LoadConnection): Promise<void> {
    const { spec } = this;
    const rest = (scope: string) => scope.replace(/;breakdowns=[^;]*;/, ';');
    const breakdowns = (scope: string) => /;breakdowns=([^;]*);/.exec(scope)?.[1] ?? '';
    const scopes = await connection.query(scopesSql(spec.table), [spec.period.since, spec.period.until]);
    const others = scopes.map(([scope]) => scope ?? '').filter((scope) => scope !== spec.scope && rest(scope) === rest(spec.scope)).map(breakdowns);
    if (others.length) spec.warn?.(`${this.shownTable} also holds this account's rows of the period for other breakdowns (${others.join('; ')}): each is a full count, so a sum across _scope counts it twice; sum within one _scope`);
    const legacy = spec.legacyScope !== spec.scope ? scopes.find(([scope]) => scope === spec.legacyScope) : undefined;
    if (legacy && spec.legacyScope) {
      const filters = /;(filters=.*);account=/.exec(spec.legacyScope)?.[1] ?? spec.legacyScope;
      spec.warn?.(`${this.shownTable} holds ${legacy[1]} rows of this period under the old scope text ${filters}, which these filters split at their commas share: not replaced (docs/CHANGES.md)`);
    }
  }

  /** The table holds the rows the state recorded for the open window: as many, of the same
   * reports (when the state named them). Rows deleted since, or a table made anew, are not. */
  private stillHolds(before: { rows: number; reportIds?: readonly string[] }): boolean {
    const held = this.held;
    if (!held || held.rows !== before.rows) return false;
    return !before.reportIds || (held.reportIds.length === new Set(before.reportIds).size && held.reportIds.every((id) => before.reportIds?.includes(id)));
  }

  private async commitWindow(open: Open): Promise<Committed> {
    const connection = this.connection as LoadConnection;
    this.open = undefined;
    dropCopies(open);
    const sha256 = open.hash.digest();
    let outcome: Committed['outcome'] = 'written';
    try {
      await open.appender.finish();
      const before = this.spec.loadedBefore?.(open.origin);
      if (before && before.table === this.shownTable && before.sha256 === sha256 && this.stillHolds(before)) {
        // the same rows as last time: the table is left as it was
        await connection.execute('ROLLBACK');
        outcome = 'unchanged';
      } else {
        await this.spec.recordWindow?.(connection, { window: open.origin, table: this.shownTable, rows: open.rows, sha256, reportIds: open.reportIds });
        await connection.execute('COMMIT');
      }
    } catch (error) {
      await open.appender.cancel().catch(() => undefined);
      await connection.execute('ROLLBACK').catch(() => undefined);
      throw error;
    }
    return {
      window: open.origin, covered: [{ window: open.origin, rows: open.rows }], pieces: open.pieces, holdsOnly: false,
      table: this.shownTable, rows: open.rows, sha256, outcome, reportIds: open.reportIds, summary: open.summary,
    };
  }

  private async rollback(): Promise<void> {
    const open = this.open;
    this.growing = undefined;
    if (!open) return;
    this.open = undefined;
    dropCopies(open);
    await open.appender.cancel().catch(() => undefined);
    await this.connection?.execute('ROLLBACK').catch(() => undefined);
  }

  async finish(): Promise<Committed[]> {
    // every window was committed or rolled back; one left open is given up, never left to the
    // connection's close
    await this.rollback();
    await this.close();
    return [];
  }

  async abort(): Promise<void> {
    await this.rollback();
    await this.close();
  }

  private async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.ready = undefined;
    await connection?.close();
  }
}

/**
 * The sha256 of a window's rows (each row's JSON as received, then a newline): what the state file
 * records as loaded. The rows come in bytes mode (one char a byte of UTF-8) and are hashed by the
 * 64 KiB: an update per row (two million for 1M rows) cost 11% of a DuckDB load's CPU.
 */
class RowHash {
  private readonly hash: Hash = createHash('sha256');
  private pending: string[] = [];
  private length = 0;

  row(raw: string): void {
    this.pending.push(raw);
    this.length += raw.length + 1;
    if (this.length >= 65_536) this.flush();
  }

  private flush(): void {
    if (this.pending.length) this.hash.update(`${this.pending.join('\n')}\n`, 'latin1');
    this.pending = [];
    this.length = 0;
  }

  digest(): string {
    this.flush();
    return this.hash.digest('hex');
  }
}

/** A scanner's error that is the report's, not ours: the server's answer broke the contract. */
function guarded(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    if (error instanceof ReportFormatError) throw new UnexpectedResponseError(`the downloaded report is not what the contract describes: ${error.message}`);
    throw error;
  }
}

const dropCopies = (open: Open) => {
  if (open.copies) {
    rmSync(open.copies.dir, { recursive: true, force: true });
    open.copies.forget();
  }
  open.copies = undefined;
};

const listWindows = (rows: readonly string[][]) =>
  rows.map(([since, until]) => describeWindow({ since: Number(since), until: Number(until) })).join(', ');
