// A database table (`run --load`): each planned window is one transaction that replaces every row
// of the same scope whose window lies inside it, then appends the window's rows (DuckDB's
// appender, Postgres's COPY), with the metadata columns. The pieces of a split window go into the
// one transaction of their window. With a state file, a window whose rows are those loaded last
// time (same sha256) is rolled back rather than rewritten: `unchanged`.
//
// The window transaction is table-window.ts, add-columns table-grow.ts.

import { CliError, EXIT } from '../errors.js';
import { describeNetworkError } from '../network.js';
import type { Summary } from '../api/schemas.js';
import { BodyBrokenError, type Progress } from '../export/export.js';
import { RowLayout } from '../export/typed.js';
import { SnakeKeys } from '../export/case.js';
import { ReportScanner, fromBytes, sameKeys, type Kind } from '../export/scanner.js';
import {
  addColumnsSql, caseDriftError, scopesSql, driftError, driftOf, leftEmpty, loadDdl, loadedWindowsSql, partialSql, tableOnlyColumns,
  type LoadConnection, type Metadata,
} from '../load/load.js';
import { LOAD_METADATA } from '../report/schema.js';
import { describeWindow, type Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';
import { TableGrowth } from './table-grow.js';
import { RowHash, guarded, listWindows, type Open } from './table-window.js';

export type { TableSpec } from './table-window.js';

export class TableDestination extends TableGrowth implements Destination {
  private ready?: Promise<LoadConnection>;

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
  protected scannerFor(open: Open, metadata: Metadata): ReportScanner {
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
