// Loading into an embedded DuckDB file through its appender (@duckdb/node-api, loaded only when
// --load names a DuckDB file). DuckDB lets one process write a file: a second one waits for it,
// up to --max-wait, then fails naming the file; the file is never shared half-written, since each
// window is one transaction. Within one process (`jobs run`), the runs loading one file share its
// database, each with its own connection and transactions.

import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { resolve } from 'node:path';
import { CliError, EXIT } from '../errors.js';
import { loadDuckDb, loadDuckDbBindings } from '../lazy.js';
import type { Column } from '../report/schema.js';
import { DuckDbChunkAppender } from './duckdb-chunks.js';
import type { LoadConnection, TableAppender } from './load.js';

/** What DuckDB may use while it opens the file and checks the table; loading sets its memory_limit
 * by the table's width (loadMemoryLimit). DuckDB's own allocator settings
 * (allocator_flush_threshold, write_buffer_row_group_count) and glibc's malloc tunables changed
 * nothing measurable (test/bench/RESULTS.md, "Loading"). */
const DUCKDB_OPTIONS = { memory_limit: '64MB', threads: '1' };

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
    return new DuckDbChunkAppender(this.duckdb, await loadDuckDbBindings(), appender, columns, order);
  }

  async close(): Promise<void> {
    await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
