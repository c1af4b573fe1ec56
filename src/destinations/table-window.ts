// The window transaction of a database table (`run --load`, table.ts): BEGIN, the rows the window
// replaces deleted under the scope's lock, its appender; the COMMIT (or the ROLLBACK of a window
// whose rows are those loaded last time: `unchanged`), and the rows' sha256 the state records.

import { createHash, type Hash } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Summary } from '../api/schemas.js';
import { CliError, EXIT, UnexpectedResponseError } from '../errors.js';
import type { ColumnCase } from '../report/column-case.js';
import { ReportFormatError } from '../export/scanner.js';
import {
  deleteOverlappingSql, deleteSql, heldSql, partialSql,
  type LoadConnection, type Metadata, type OnSchemaChange, type TableAppender,
} from '../load/load.js';
import type { Column } from '../report/schema.js';
import { describeWindow, type Window } from '../report/windows.js';
import type { Committed } from './destination.js';

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

export interface Open {
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

/** The table's connection, its columns, and the window open on it: BEGIN, COMMIT, ROLLBACK. */
export abstract class TableTransaction {
  protected connection?: LoadConnection;
  /** the table's columns in their order, once checked */
  protected order: string[] = [];
  protected open?: Open;
  readonly shownTable: string;
  /** the export's columns, and those added since by fields the rows brought (add-columns) */
  protected columns: readonly Column[];
  /** fields a row brought that the columns lack: the window is loaded again once they are added */
  protected growing?: Set<string>;
  /** what the table held for the open window before its delete (with a state's record of it) */
  protected held?: { rows: number; reportIds: string[] };

  constructor(protected readonly spec: TableSpec) {
    this.shownTable = spec.table.join('.');
    this.columns = spec.columns;
  }

  /** Rows of this scope loaded for windows that overlap `window` only partly: refused. */
  protected partialError(partial: readonly string[][], window: Window, changed: string): CliError {
    // the earlier windows and this one, whole: the period a --full-refresh can replace
    const whole = partial.reduce((span, [since, until]) => ({ since: Math.min(span.since, Number(since)), until: Math.max(span.until, Number(until)) }), window);
    return new CliError(`${this.shownTable} holds rows of this scope loaded for ${listWindows(partial)}, which ${partial.length > 1 ? 'overlap' : 'overlaps'} the window ${describeWindow(window)} only partly (loaded with another --chunk); ${changed}`, EXIT.usage,
      `reload their whole period with --full-refresh and --since/--until covering ${describeWindow(whole)}, or load whole windows of the earlier --chunk`);
  }

  /** BEGIN, the rows the window replaces deleted, and its appender. */
  protected async openTransaction(connection: LoadConnection, origin: Window): Promise<TableAppender> {
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

  /** The table holds the rows the state recorded for the open window: as many, of the same
   * reports (when the state named them). Rows deleted since, or a table made anew, are not. */
  protected stillHolds(before: { rows: number; reportIds?: readonly string[] }): boolean {
    const held = this.held;
    if (!held || held.rows !== before.rows) return false;
    return !before.reportIds || (held.reportIds.length === new Set(before.reportIds).size && held.reportIds.every((id) => before.reportIds?.includes(id)));
  }

  protected async commitWindow(open: Open): Promise<Committed> {
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

  protected async rollback(): Promise<void> {
    const open = this.open;
    this.growing = undefined;
    if (!open) return;
    this.open = undefined;
    dropCopies(open);
    await open.appender.cancel().catch(() => undefined);
    await this.connection?.execute('ROLLBACK').catch(() => undefined);
  }
}

/**
 * The sha256 of a window's rows (each row's JSON as received, then a newline): what the state file
 * records as loaded. The rows come in bytes mode (one char a byte of UTF-8) and are hashed by the
 * 64 KiB: an update per row (two million for 1M rows) cost 11% of a DuckDB load's CPU.
 */
export class RowHash {
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
export function guarded(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    if (error instanceof ReportFormatError) throw new UnexpectedResponseError(`the downloaded report is not what the contract describes: ${error.message}`);
    throw error;
  }
}

export const dropCopies = (open: Open) => {
  if (open.copies) {
    rmSync(open.copies.dir, { recursive: true, force: true });
    open.copies.forget();
  }
  open.copies = undefined;
};

export const listWindows = (rows: readonly string[][]) =>
  rows.map(([since, until]) => describeWindow({ since: Number(since), until: Number(until) })).join(', ');
