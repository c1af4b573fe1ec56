// Loading into an embedded DuckDB file through its appender (@duckdb/node-api, loaded only when
// --load names a DuckDB file). DuckDB lets one process write a file: a second one waits for it,
// up to --max-wait, then fails naming the file; the file is never shared half-written, since each
// window is one transaction. Within one process (`jobs run`), the runs loading one file share its
// database, each with its own connection and transactions.

import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { resolve } from 'node:path';
import { CliError, EXIT } from '../errors.js';
import { boundYoungGeneration } from '../io/young-generation.js';
import { loadDuckDb, loadDuckDbBindings } from '../lazy.js';
import type { Column } from '../report/schema.js';
import { DuckDbChunkAppender } from './duckdb-chunks.js';
import type { LoadConnection, TableAppender } from './load.js';
import { qualified } from './target.js';

/** What DuckDB may use while it opens the file and checks the table; loading sets its memory_limit
 * by the table's width (loadMemoryLimit). DuckDB's own allocator settings
 * (allocator_flush_threshold, write_buffer_row_group_count) and glibc's malloc tunables changed
 * nothing measurable (test/bench/RESULTS.md, "Loading"). */
const DUCKDB_OPTIONS = { memory_limit: '64MB', threads: '1' };

/**
 * DuckDB's memory_limit while loading a window, in MB (measured with `node test/bench/duckdb-width.mjs`):
 * - the buffer pool holds a block or so of each column of the row group being filled, so a fixed
 *   limit fails a wide table ("could not allocate block") while a generous one is RSS for nothing.
 *   The least that passed: 10 MB for 15 columns of numbers (8 failed), 24 MB for 36 columns of
 *   distinct text (20 failed); 66 columns failed at 32 MB and 106 at 48 MB. 8 MB and 0.6 a column;
 * - the rows the window replaces are held as delete versions (8 bytes a row) until the commit:
 *   replacing 1,000,000 rows of 14 columns failed at 16 MB and passed at 20 MB. 12 bytes a row;
 * - a commit that replaces rows pins more: replacing 100,000 rows of 36 columns of text failed at
 *   36 MB and passed at 54 MB; of 66 columns, failed at 84 MB and passed at 101 MB. A megabyte a
 *   column more, for the commit only (36 columns: 68 MB, 66: 116 MB; both passed).
 */
export const loadMemoryLimit = (columns: number, replacedRows = 0, committing = false) =>
  Math.ceil(8 + 0.6 * columns) + Math.ceil((replacedRows * 12) / 2 ** 20) + (committing ? columns : 0);

/**
 * memory_limit is the database's, not a connection's, and the runs of one process loading one file
 * (`jobs run`) share its database: the limit is the sum of loadMemoryLimit over the windows being
 * loaded into it, each counted from the delete of the rows it replaces to the end of its
 * transaction (its rows are in the buffer pool until then). The sum, not the widest times their
 * number: each table fills its own row group, whose blocks are what the limit is sized by. With
 * none, the opening setting.
 */
interface Share { columns: number; replacedRows: number; committing: boolean }

class SharedLimit {
  private static readonly byFile = new Map<string, SharedLimit>();
  private readonly shares = new Map<object, Share>();
  private setting: Promise<void> = Promise.resolve();

  static of(file: string): SharedLimit {
    let limit = SharedLimit.byFile.get(file);
    if (!limit) SharedLimit.byFile.set(file, limit = new SharedLimit());
    return limit;
  }

  /** `holder` loads a window of a table of `columns` columns that replaces `replacedRows` rows (again:
   * its share replaces the one it had) */
  hold(holder: object, columns: number, replacedRows: number, set: (sql: string) => Promise<void>): Promise<void> {
    this.shares.set(holder, { columns, replacedRows, committing: false });
    return this.apply(set);
  }

  /** `holder`'s window commits: its share grows by what the commit pins (loadMemoryLimit) */
  committing(holder: object, set: (sql: string) => Promise<void>): Promise<void> {
    const share = this.shares.get(holder);
    if (!share || share.replacedRows === 0) return Promise.resolve();
    share.committing = true;
    return this.apply(set);
  }

  release(holder: object, set: (sql: string) => Promise<void>): Promise<void> {
    return this.shares.delete(holder) ? this.apply(set) : Promise.resolve();
  }

  /** one SET at a time, each with the sum as it is when it runs: the last one set is the current sum */
  private apply(set: (sql: string) => Promise<void>): Promise<void> {
    const run = this.setting.then(() => {
      const sum = [...this.shares.values()].reduce((total, share) => total + loadMemoryLimit(share.columns, share.replacedRows, share.committing), 0);
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

/** The tables being created or altered in this process, each the promise its next holder awaits. */
const tableHolds = new Map<string, Promise<void>>();

/** Waits until no other connection of this process holds `key`; answers the release. */
async function holdTable(key: string): Promise<() => void> {
  const previous = tableHolds.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => { release = resolve; });
  const chained = previous.then(() => mine);
  tableHolds.set(key, chained);
  await previous;
  return () => {
    release();
    if (tableHolds.get(key) === chained) tableHolds.delete(key);
  };
}

class DuckDbConnection implements LoadConnection {
  readonly engine = 'duckdb' as const;
  readonly dialect = 'duckdb' as const;

  /** V8's young generation is bounded while DuckDB shares the process (io/young-generation.ts) */
  private readonly unbound = boundYoungGeneration();

  constructor(private readonly duckdb: DuckDb, private readonly instance: DuckDBInstance, private readonly connection: DuckDBConnection, private readonly shown: string, private readonly limit: SharedLimit) {}

  private failed(error: unknown): CliError {
    if (error instanceof CliError) return error;
    const message = firstLine(error);
    // the memory_limit set by loadMemoryLimit was too small for this table: nothing was committed
    const memory = /could not allocate|failed to pin|out of memory/i.test(message);
    return new CliError(`DuckDB (${this.shown}) refused: ${message}`, EXIT.usage, memory
      ? 'DuckDB ran out of the memory reporting gives it for this table (its memory_limit); nothing of this window was committed: please report it with the number of columns and rows'
      : 'check the table, or load into another --table');
  }

  async columns(table: readonly string[]): Promise<Map<string, string> | undefined> {
    const name = table[table.length - 1] as string;
    const rows = await this.query(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position`, [name, table.length > 1 ? table[0] as string : 'main']);
    return rows.length ? new Map(rows.map(([column, type]) => [column as string, (type as string).toLowerCase()])) : undefined;
  }

  async execute(sql: string, params: readonly (string | number)[] = []): Promise<void> {
    try {
      if (sql === 'COMMIT') await this.limit.committing(this, (set) => this.execute(set));
      await this.connection.run(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    } finally {
      // the window's rows are committed or gone: its share of the memory limit goes back
      if (sql === 'COMMIT' || sql === 'ROLLBACK') {
        this.held?.();
        this.held = undefined;
        await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
      }
    }
  }

  /** The file's lock already lets one process write at a time. Within the process, a table is
   * created or altered by one job at a time (two transactions creating it would conflict); the
   * windows of several scopes load side by side. */
  async lock(table: readonly string[], scope?: string): Promise<void> {
    if (scope !== undefined) return;
    this.held?.();
    this.held = await holdTable(`${this.shown}\n${qualified(table)}`);
  }

  private held?: () => void;

  async query(sql: string, params: readonly (string | number)[] = []): Promise<string[][]> {
    const reader = await this.connection.runAndReadAll(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    return reader.getRows().map((row) => row.map((value) => (value === null ? '' : String(value))));
  }

  async deleteRows(sql: string, params: readonly (string | number)[], columns: number): Promise<void> {
    // the limit first: the delete versions of the rows are held from the delete to the commit
    const [count] = await this.query(sql.replace(/^DELETE FROM /, 'SELECT count(*) FROM '), params);
    await this.limit.hold(this, columns, Number(count?.[0] ?? 0), (set) => this.execute(set));
    await this.execute(sql, params);
  }

  async appender(table: readonly string[], columns: readonly Column[], order: readonly string[]): Promise<TableAppender> {
    const name = table[table.length - 1] as string;
    const appender = await this.connection.createAppender(name, table.length > 1 ? table[0] : null).catch((error: unknown) => { throw this.failed(error); });
    return new DuckDbChunkAppender(this.duckdb, await loadDuckDbBindings(), appender, columns, order, (error) => this.failed(error));
  }

  async close(): Promise<void> {
    await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
    try {
      this.connection.closeSync();
      this.instance.closeSync();
    } finally {
      this.unbound();
    }
  }
}
