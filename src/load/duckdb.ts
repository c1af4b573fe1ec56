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

/** What DuckDB may use. Its buffer pool is bounded by memory_limit (16 MB is too little for one
 * row group of a wide report: "could not allocate block"), but the process's peak RSS is not:
 * measured on 1,000,000 rows of every field (about 30 columns), 128 MB and 2 threads peaked at
 * 450-620 MB, 64 MB and 1 thread at 380-410 MB (test/bench/RESULTS.md, "Loading"); DuckDB's own
 * allocator settings (allocator_flush_threshold, write_buffer_row_group_count) changed nothing. */
const DUCKDB_OPTIONS = { memory_limit: '64MB', threads: '1' };

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
  return new DuckDbConnection(duckdb, instance, connection, shown);
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';

type DuckDb = Awaited<ReturnType<typeof loadDuckDb>>;

class DuckDbConnection implements LoadConnection {
  readonly engine = 'duckdb' as const;
  readonly dialect = 'duckdb' as const;

  constructor(private readonly duckdb: DuckDb, private readonly instance: DuckDBInstance, private readonly connection: DuckDBConnection, private readonly shown: string) {}

  private failed(error: unknown): CliError {
    return error instanceof CliError ? error : new CliError(`DuckDB (${this.shown}) refused: ${firstLine(error)}`, EXIT.usage, 'check the table, or load into another --table');
  }

  async columns(table: readonly string[]): Promise<Map<string, string> | undefined> {
    const name = table[table.length - 1] as string;
    const rows = await this.query(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position`, [name, table.length > 1 ? table[0] as string : 'main']);
    return rows.length ? new Map(rows.map(([column, type]) => [column as string, (type as string).toLowerCase()])) : undefined;
  }

  async execute(sql: string, params: readonly (string | number)[] = []): Promise<void> {
    await this.connection.run(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
  }

  async query(sql: string, params: readonly (string | number)[] = []): Promise<string[][]> {
    const reader = await this.connection.runAndReadAll(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    return reader.getRows().map((row) => row.map((value) => (value === null ? '' : String(value))));
  }

  async appender(table: readonly string[], columns: readonly Column[], order: readonly string[]): Promise<TableAppender> {
    const name = table[table.length - 1] as string;
    const appender = await this.connection.createAppender(name, table.length > 1 ? table[0] : null).catch((error: unknown) => { throw this.failed(error); });
    return new DuckDbAppender(this.duckdb, appender, columns, order);
  }

  async close(): Promise<void> {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}

/** Rows into DuckDB's appender, in the table's column order: each value as its column's type. */
class DuckDbAppender implements TableAppender {
  private readonly appendCell: ((layout: RowLayout, metadata: Metadata) => void)[];

  constructor(duckdb: DuckDb, private readonly appender: DuckDBAppender, columns: readonly Column[], order: readonly string[]) {
    const a = appender;
    const { DuckDBDateValue, DuckDBTimestampTZValue } = duckdb;
    const seconds = (value: number) => new DuckDBTimestampTZValue(BigInt(value) * 1_000_000n);
    this.appendCell = order.map((name): ((layout: RowLayout, metadata: Metadata) => void) => {
      const meta = (METADATA_NAMES as readonly string[]).indexOf(name);
      if (meta === 0) return (_l, m) => a.appendVarchar(m[0]);
      if (meta === 1) return (_l, m) => a.appendTimestampTZ(seconds(m[1]));
      if (meta === 2) return (_l, m) => a.appendTimestampTZ(seconds(m[2]));
      if (meta === 3) return (_l, m) => a.appendVarchar(m[3]);
      if (meta === 4) return (_l, m) => a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(m[4]) * 1000n));
      const i = columns.findIndex((column) => column.name === name);
      if (i < 0) return () => a.appendNull();
      switch ((columns[i] as Column).type) {
        case 'int64': return (l) => { const v = l.integer(i); if (v === null) a.appendNull(); else a.appendBigInt(BigInt(v)); };
        case 'double': return (l) => { const v = l.number(i); if (v === null) a.appendNull(); else a.appendDouble(v); };
        case 'date': return (l) => { const v = l.day(i); if (v === null) a.appendNull(); else a.appendDate(new DuckDBDateValue(v)); };
        case 'timestamp': return (l) => { const v = l.instant(i); if (v === null) a.appendNull(); else a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(v) * 1000n)); };
        default: return (l) => { const v = l.text(i); if (v === null) a.appendNull(); else a.appendVarchar(v); };
      }
    });
  }

  row(layout: RowLayout, metadata: Metadata): void {
    const cells = this.appendCell;
    for (let i = 0; i < cells.length; i++) (cells[i] as (l: RowLayout, m: Metadata) => void)(layout, metadata);
    this.appender.endRow();
  }

  async drain(): Promise<void> {
    // the appender flushes its own chunks (2,048 rows) as they fill
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

