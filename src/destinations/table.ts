// A database table (`run --load`): each planned window is one transaction that replaces every row
// of the same scope whose window lies inside it, then appends the window's rows (DuckDB's
// appender, Postgres's COPY), with the metadata columns. The pieces of a split window go into the
// one transaction of their window. With a state file, a window whose rows are those loaded last
// time (same sha256) is rolled back rather than rewritten: `unchanged`.

import { createHash, type Hash } from 'node:crypto';
import type { Summary } from '../api/schemas.js';
import { CliError, EXIT, UnexpectedResponseError } from '../errors.js';
import { RowLayout } from '../export/typed.js';
import { ReportFormatError, ReportScanner, sameKeys, type Kind } from '../export/scanner.js';
import {
  addColumnsSql, deleteOverlappingSql, deleteSql, driftError, driftOf, loadDdl, partialSql,
  type LoadConnection, type Metadata, type OnSchemaChange, type TableAppender,
} from '../load/load.js';
import { LOAD_METADATA, type Column } from '../report/schema.js';
import { describeWindow, type Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';

export interface TableSpec {
  /** opens the connection (the engine's client loads then) */
  connect(): Promise<LoadConnection>;
  /** the table's name, parts (schema, table) as given */
  table: readonly string[];
  /** the export's columns, typed */
  columns: readonly Column[];
  /** the columns were chosen (the requested ones by default, or --columns): other fields of a row
   * are left out, as in a file */
  selected: boolean;
  /** where the fields left out that held a value are named (the run's warning at its end) */
  dropped?: Set<string>;
  scope: string;
  onSchemaChange: OnSchemaChange;
  /** --full-refresh: the run's period is replaced whole */
  fullRefresh: boolean;
  period: Window;
  /** what the state file says was loaded for this window (with --state) */
  loadedBefore?(window: Window): { table: string; sha256: string } | undefined;
  now(): number;
}

interface Open {
  origin: Window;
  appender: TableAppender;
  hash: Hash;
  rows: number;
  reportIds: string[];
  pieces: Window[];
  summary?: Summary;
}

export class TableDestination implements Destination {
  private connection?: LoadConnection;
  /** the table's columns in their order, once checked */
  private order: string[] = [];
  private ready?: Promise<LoadConnection>;
  private open?: Open;
  readonly shownTable: string;

  constructor(private readonly spec: TableSpec) {
    this.shownTable = spec.table.join('.');
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
    const existing = await connection.columns(spec.table);
    const wanted = [...spec.columns, ...LOAD_METADATA];
    if (!existing) {
      // another run may create it at the same moment (Postgres): then it is there, and is checked
      await connection.execute(loadDdl(spec.columns, connection.dialect, spec.table, true)).catch(async (error: unknown) => {
        if (!await connection.columns(spec.table)) throw error;
      });
    }
    // a table made here has the columns wanted; one made by another run is checked as any other
    const current = existing ?? await connection.columns(spec.table);
    if (current) {
      const drift = driftOf(current, wanted, connection.dialect);
      const refused = driftError(this.shownTable, drift, spec.onSchemaChange);
      if (refused) throw refused;
      for (const sql of addColumnsSql(spec.table, drift.added, connection.dialect)) await connection.execute(sql);
    }
    this.order = [...(await connection.columns(spec.table))?.keys() ?? []];
    if (spec.fullRefresh) {
      // rows of this scope that lie partly outside the period cannot be replaced by it
      const edges = await connection.query(partialSql(spec.table), [spec.scope, spec.period.since, spec.period.until]);
      if (edges.length) throw new CliError(`--full-refresh replaces ${describeWindow(spec.period)} in ${this.shownTable}, but rows of this scope were loaded for ${listWindows(edges)}, which straddle its edges; nothing was changed`, EXIT.usage,
        'widen --since/--until to whole windows of the earlier load');
    }
    return connection;
  }

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    const connection = await this.connected();
    if (!this.open || this.open.origin.since !== origin.since) this.open = await this.startWindow(connection, origin);
    const open = this.open;
    open.reportIds.push(reportId);
    open.pieces.push(piece);
    const metadata: Metadata = [reportId, origin.since, origin.until, this.spec.scope, this.spec.now()];
    return {
      take: async (body) => this.take(open, metadata, body),
      restartable: false,
      abort: async () => this.rollback(),
      commit: async () => (piece.until === origin.until ? [await this.commitWindow(open)] : []),
    };
  }

  private async startWindow(connection: LoadConnection, origin: Window): Promise<Open> {
    const { spec } = this;
    await connection.execute('BEGIN');
    try {
      if (spec.fullRefresh) await connection.execute(deleteOverlappingSql(spec.table), [spec.scope, origin.since, origin.until]);
      else {
        const partial = await connection.query(partialSql(spec.table), [spec.scope, origin.since, origin.until]);
        if (partial.length) {
          throw new CliError(`${this.shownTable} holds rows of this scope loaded for ${listWindows(partial)}, which overlaps the window ${describeWindow(origin)} only partly (loaded with another --chunk); nothing of this window was changed`, EXIT.usage,
            'add --full-refresh to replace the run\'s whole period, or use the --chunk of the earlier load');
        }
        await connection.execute(deleteSql(spec.table), [spec.scope, origin.since, origin.until]);
      }
      const appender = await connection.appender(spec.table, spec.columns, this.order);
      return { origin, appender, hash: createHash('sha256'), rows: 0, reportIds: [], pieces: [] };
    } catch (error) {
      await connection.execute('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** A piece's report body, scanned, each row appended (and hashed: what was loaded). */
  private async take(open: Open, metadata: Metadata, body: AsyncIterable<Uint8Array>): Promise<{ rows: number; bytes: number; summary?: Summary }> {
    const layout = new RowLayout(this.spec.columns.map((column) => column.name), this.spec.columns, this.spec.dropped);
    layout.startEmpty('table');
    const known = new Set(this.spec.columns.map((column) => column.name));
    let lastKeys: string[] = [];
    const before = open.rows;
    const { selected } = this.spec;
    const table = this.shownTable;
    const scanner = new ReportScanner({
      row: (keys: string[], values: string[], kinds: Kind[], raw: string) => {
        if (!selected && !sameKeys(keys, lastKeys)) {
          const extra = keys.find((key) => !known.has(key));
          if (extra !== undefined) {
            throw new CliError(`the report's rows have a field "${extra}" that the table ${table} has no column for; nothing of this window was loaded`, EXIT.usage,
              'choose the columns with --columns, or add the column to the table (ALTER TABLE ... ADD COLUMN) and run again');
          }
          lastKeys = [...keys];
        }
        layout.place(keys, values, kinds);
        open.appender.row(layout, metadata);
        open.hash.update(raw);
        open.hash.update('\n');
        open.rows++;
      },
    });
    let bytes = 0;
    const guarded = (fn: () => void) => {
      try {
        fn();
      } catch (error) {
        if (error instanceof ReportFormatError) throw new UnexpectedResponseError(`the downloaded report is not what the contract describes: ${error.message}`);
        throw error;
      }
    };
    for await (const chunk of body) {
      bytes += chunk.length;
      guarded(() => scanner.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)));
      await open.appender.drain();
    }
    guarded(() => scanner.end());
    await open.appender.drain();
    open.summary = scanner.members.summary as Summary | undefined;
    return { rows: open.rows - before, bytes, summary: open.summary };
  }

  private async commitWindow(open: Open): Promise<Committed> {
    const connection = this.connection as LoadConnection;
    this.open = undefined;
    const sha256 = open.hash.digest('hex');
    let outcome: Committed['outcome'] = 'written';
    try {
      await open.appender.finish();
      const before = this.spec.loadedBefore?.(open.origin);
      if (before && before.table === this.shownTable && before.sha256 === sha256) {
        // the same rows as last time: the table is left as it was
        await connection.execute('ROLLBACK');
        outcome = 'unchanged';
      } else await connection.execute('COMMIT');
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
    if (!open) return;
    this.open = undefined;
    await open.appender.cancel().catch(() => undefined);
    await this.connection?.execute('ROLLBACK').catch(() => undefined);
  }

  async finish(): Promise<Committed[]> {
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

const listWindows = (rows: readonly string[][]) =>
  rows.map(([since, until]) => describeWindow({ since: Number(since), until: Number(until) })).join(', ');
