// Loading into an embedded DuckDB file through its appender (@duckdb/node-api, loaded only when
// --load names a DuckDB file). DuckDB lets one process write a file: a second one waits for it,
// up to --max-wait, then fails naming the file; the file is never shared half-written, since each
// window is one transaction. Within one process (`jobs run`), the runs loading one file share its
// database, each with its own connection and transactions.

import type { DuckDBAppender, DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { resolve } from 'node:path';
import { CliError, EXIT } from '../errors.js';
import type { RowLayout } from '../export/typed.js';
import { loadDuckDb } from '../lazy.js';
import type { Column } from '../report/schema.js';
import { METADATA_NAMES, type LoadConnection, type Metadata, type TableAppender } from './load.js';

/** What DuckDB may use while it opens the file and checks the table; loading sets its memory_limit
 * by the table's width (loadMemoryLimit). DuckDB's own allocator settings
 * (allocator_flush_threshold, write_buffer_row_group_count) and glibc's malloc tunables changed
 * nothing measurable (test/bench/RESULTS.md, "Loading"). */
const DUCKDB_OPTIONS = { memory_limit: '64MB', threads: '1' };

/** Rows the appender gathers before handing them to the table (still inside the transaction).
 * Left to itself it gathers 204,800 rows (100 chunks of 2,048) in memory outside DuckDB's buffer
 * pool: with about 30 text columns, 200 MB more at the peak (1,000,000 rows of every field: 373 MiB
 * peak with 64 MB and the appender's own flushing; 233 MiB flushing every 10,240 rows; 204 MiB
 * every 2,048 rows with 32 MB). */
const FLUSH_ROWS = 2048;

/** DuckDB's memory_limit while loading, in MB: the buffer pool holds a block or so of each column
 * of the row group being filled, so a fixed limit fails a wide table ("could not allocate block":
 * 30 text columns of distinct values failed at 16 MB and 24 MB passed; 60 failed at 32 MB, 100 at
 * 48 MB) while a generous one is RSS for nothing. 16 MB plus half a megabyte per column passed
 * 30, 60 and 100 columns of distinct text. */
export const loadMemoryLimit = (columns: number) => 16 + Math.ceil(columns / 2);

/**
 * memory_limit is the database's, not a connection's, and the runs of one process loading one file
 * (`jobs run`) share its database: the limit is the sum of loadMemoryLimit over the windows being
 * loaded into it, each counted from its appender's opening to the end of its transaction (its rows
 * are in the buffer pool until then). The sum, not the widest times their number: each table fills
 * its own row group, whose blocks are what the limit is sized by. With none, the opening setting.
 */
class SharedLimit {
  private static readonly byFile = new Map<string, SharedLimit>();
  private readonly widths = new Map<object, number>();
  private setting: Promise<void> = Promise.resolve();

  static of(file: string): SharedLimit {
    let limit = SharedLimit.byFile.get(file);
    if (!limit) SharedLimit.byFile.set(file, limit = new SharedLimit());
    return limit;
  }

  /** `holder` loads a table of `columns` columns (again: its width replaces the one it had) */
  hold(holder: object, columns: number, set: (sql: string) => Promise<void>): Promise<void> {
    this.widths.set(holder, columns);
    return this.apply(set);
  }

  release(holder: object, set: (sql: string) => Promise<void>): Promise<void> {
    return this.widths.delete(holder) ? this.apply(set) : Promise.resolve();
  }

  /** one SET at a time, each with the sum as it is when it runs: the last one set is the current sum */
  private apply(set: (sql: string) => Promise<void>): Promise<void> {
    const run = this.setting.then(() => {
      const sum = [...this.widths.values()].reduce((total, columns) => total + loadMemoryLimit(columns), 0);
      return set(`SET memory_limit = '${sum ? `${sum}MB` : DUCKDB_OPTIONS.memory_limit}'`);
    });
    this.setting = run.catch(() => undefined);
    return run;
  }
}

const lockedMessage = (error: unknown) => error instanceof Error && /lock|Conflicting lock|being used by another process/i.test(error.message);

export async function openDuckDb(path: string, shown: string, waitMs: number, sleep: (ms: number, signal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<LoadConnection> {
  const duckdb = await loadDuckDb();
  const deadline = Date.now() + waitMs;
  let instance: DuckDBInstance | undefined;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      // one database per file in the process, shared: two runs of one process (`jobs run`) that
      // each opened the file would each write it, and one's rows would be lost
      instance = await duckdb.DuckDBInstance.fromCache(resolve(path), DUCKDB_OPTIONS);
      break;
    } catch (error) {
      if (!lockedMessage(error)) {
        throw new CliError(`cannot open the DuckDB database ${shown}: ${firstLine(error)}`, EXIT.usage, 'check the path, and that it is a DuckDB database file');
      }
      if (Date.now() + delay > deadline || signal.aborted) {
        throw new CliError(`the DuckDB database ${shown} is held by another process (DuckDB allows one writer per file)`, EXIT.usage,
          'wait for the other run to end, or give --max-wait to wait for the file');
      }
      await sleep(delay, signal);
    }
  }
  const connection = await instance.connect();
  return new DuckDbConnection(duckdb, instance, connection, shown, SharedLimit.of(resolve(path)));
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';

type DuckDb = Awaited<ReturnType<typeof loadDuckDb>>;

class DuckDbConnection implements LoadConnection {
  readonly engine = 'duckdb' as const;
  readonly dialect = 'duckdb' as const;

  constructor(private readonly duckdb: DuckDb, private readonly instance: DuckDBInstance, private readonly connection: DuckDBConnection, private readonly shown: string, private readonly limit: SharedLimit) {}

  private failed(error: unknown): CliError {
    return error instanceof CliError ? error : new CliError(`DuckDB (${this.shown}) refused: ${firstLine(error)}`, EXIT.usage, 'check the table, or load into another --table');
  }

  async columns(table: readonly string[]): Promise<Map<string, string> | undefined> {
    const name = table[table.length - 1] as string;
    const rows = await this.query(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position`, [name, table.length > 1 ? table[0] as string : 'main']);
    return rows.length ? new Map(rows.map(([column, type]) => [column as string, (type as string).toLowerCase()])) : undefined;
  }

  async execute(sql: string, params: readonly (string | number)[] = []): Promise<void> {
    try {
      await this.connection.run(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    } finally {
      // the window's rows are committed or gone: its share of the memory limit goes back
      if (sql === 'COMMIT' || sql === 'ROLLBACK') await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
    }
  }

  async query(sql: string, params: readonly (string | number)[] = []): Promise<string[][]> {
    const reader = await this.connection.runAndReadAll(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    return reader.getRows().map((row) => row.map((value) => (value === null ? '' : String(value))));
  }

  async appender(table: readonly string[], columns: readonly Column[], order: readonly string[]): Promise<TableAppender> {
    const name = table[table.length - 1] as string;
    await this.limit.hold(this, order.length, (set) => this.execute(set));
    const appender = await this.connection.createAppender(name, table.length > 1 ? table[0] : null).catch((error: unknown) => { throw this.failed(error); });
    return new DuckDbAppender(this.duckdb, appender, columns, order);
  }

  async close(): Promise<void> {
    await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
    this.connection.closeSync();
    this.instance.closeSync();
  }
}

/** Rows into DuckDB's appender, in the table's column order: each value as its column's type. */
class DuckDbAppender implements TableAppender {
  private readonly appendCell: ((layout: RowLayout, metadata: Metadata) => void)[];

  constructor(duckdb: DuckDb, private readonly appender: DuckDBAppender, columns: readonly Column[], order: readonly string[]) {
    const a = appender;
    // appendTimestampTZ goes through a DuckDB value made per call (createValue: 1.7 s of 1,000,000
    // rows' profile); appendTimestamp into a TIMESTAMPTZ column stores the same microseconds,
    // whatever the session's TimeZone. The metadata's values are made once per window.
    const { DuckDBDateValue, DuckDBTimestampValue } = duckdb;
    const micros = (value: number) => new DuckDBTimestampValue(BigInt(value) * 1000n);
    let made: Metadata | undefined;
    let since = micros(0);
    let until = since;
    let loadedAt = since;
    const of = (m: Metadata) => {
      if (m !== made) {
        made = m;
        since = micros(m[1] * 1000);
        until = micros(m[2] * 1000);
        loadedAt = micros(m[4]);
      }
    };
    this.appendCell = order.map((name): ((layout: RowLayout, metadata: Metadata) => void) => {
      const meta = (METADATA_NAMES as readonly string[]).indexOf(name);
      if (meta === 0) return (_l, m) => a.appendVarchar(m[0]);
      if (meta === 1) return (_l, m) => { of(m); a.appendTimestamp(since); };
      if (meta === 2) return (_l, m) => { of(m); a.appendTimestamp(until); };
      if (meta === 3) return (_l, m) => a.appendVarchar(m[3]);
      if (meta === 4) return (_l, m) => { of(m); a.appendTimestamp(loadedAt); };
      const i = columns.findIndex((column) => column.name === name);
      if (i < 0) return () => a.appendNull();
      switch ((columns[i] as Column).type) {
        case 'int64': return (l) => { const v = l.integer(i); if (v === null) a.appendNull(); else a.appendBigInt(BigInt(v)); };
        case 'double': return (l) => { const v = l.number(i); if (v === null) a.appendNull(); else a.appendDouble(v); };
        case 'date': return (l) => { const v = l.day(i); if (v === null) a.appendNull(); else a.appendDate(new DuckDBDateValue(v)); };
        case 'timestamp': return (l) => { const v = l.instant(i); if (v === null) a.appendNull(); else a.appendTimestamp(micros(v)); };
        default: return (l) => { const v = l.text(i); if (v === null) a.appendNull(); else a.appendVarchar(v); };
      }
    });
  }

  private pending = 0;

  row(layout: RowLayout, metadata: Metadata): void {
    const cells = this.appendCell;
    for (let i = 0; i < cells.length; i++) (cells[i] as (l: RowLayout, m: Metadata) => void)(layout, metadata);
    this.appender.endRow();
    if (++this.pending === FLUSH_ROWS) {
      // into the transaction's storage (a ROLLBACK still drops them), which DuckDB bounds
      this.pending = 0;
      this.appender.flushSync();
    }
  }

  async drain(): Promise<void> {
    // row() flushes every FLUSH_ROWS rows
  }

  async finish(): Promise<void> {
    this.closed = true;
    this.appender.flushSync();
    this.appender.closeSync();
  }

  private closed = false;

  async cancel(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.appender.clear();
    this.appender.closeSync();
  }
}

