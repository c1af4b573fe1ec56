// Loading into an embedded DuckDB file through its appender (@duckdb/node-api, loaded only when
// --load names a DuckDB file). DuckDB lets one process write a file: a second one waits for it,
// up to --max-wait, then fails naming the file; the file is never shared half-written, since each
// window is one transaction. Within one process (`jobs run`), the runs loading one file share its
// database, each with its own connection and transactions: one file is one database whatever the
// spelling of its path (a symlink, `sub/..`), by its real path (realFilePath).

import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { existsSync, linkSync, rmSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { cleanStaleTemps, tempPathFor } from '../fs/atomic.js';
import { UsageError } from '../errors.js';
import { CliError, EXIT } from '../errors.js';
import { boundYoungGeneration, DUCKDB_YOUNG_GENERATION } from '../io/young-generation.js';
import { loadDuckDb, loadDuckDbBindings } from '../lazy.js';
import type { Column } from '../report/schema.js';
import { ATTACHED_AS, attach, detach } from './duckdb-attach.js';
import { DuckDbChunkAppender } from './duckdb-chunks.js';
import type { ConnectDeps, LoadConnection, LoadEngine, StateHolder, TableAppender } from './load.js';
import { qualified } from './target.js';
import { realFilePath } from '../paths.js';
import { backoffDelay, POLICY, type Sleep } from '../retry.js';
import { formatDuration } from '../duration.js';

/** What DuckDB may use while it opens the file and checks the table; loading sets its memory_limit
 * by the table's width (loadMemoryLimit). DuckDB's own allocator settings
 * (allocator_flush_threshold, write_buffer_row_group_count) and glibc's malloc tunables changed
 * nothing measurable (test/bench/RESULTS.md, "Loading"). */
const DUCKDB_OPTIONS = { memory_limit: '64MB', threads: '1' };

/**
 * Set as a connection's first window loads: each time DuckDB's buffer pool takes a block (256 KiB,
 * as the appender fills the window's row groups), DuckDB gives back what its allocator (jemalloc)
 * holds freed and trims the process's malloc heaps (glibc's malloc_trim, at most every 100 ms). Left
 * at its default (512 MiB: never, for a load), the memory DuckDB freed stayed in the process for up
 * to a second, and its COMMIT added 10-12 MiB on top: 1M rows peaked at 180-196 MiB, with it 167-168
 * on Node 20 (test/bench/RESULTS.md, "Loading near CSV").
 */
const GIVE_BACK = "SET allocator_bulk_deallocation_flush_threshold = '0KB'";

/**
 * DuckDB's memory_limit while loading a window, in MB (measured with `node test/bench/duckdb-width.mjs`;
 * `--file F --day 1` after `--day 0` for a commit into a table that holds rows):
 * - the buffer pool holds a block or so of each column of the row group being filled, so a fixed
 *   limit fails a wide table ("could not allocate block") while a generous one is RSS for nothing.
 *   The least that passed: 10 MB for 15 columns of numbers (8 failed), 24 MB for 36 columns of
 *   distinct text (20 failed); 66 columns failed at 32 MB and 106 at 48 MB. 8 MB and 0.6 a column;
 * - the rows the window replaces are held as delete versions (8 bytes a row) until the commit:
 *   replacing 1,000,000 rows of 14 columns failed at 16 MB and passed at 20 MB. 12 bytes a row;
 * - a commit into a table that already holds rows (replaced or not) appends the window's rows to
 *   the table's last row group, its blocks pinned beside those of the rows it reads: 30,000 rows
 *   of 36 columns of text, the day after another 30,000, failed at 47 MB and passed at 48 MB; of
 *   16, 66 and 106 columns, passed at 21, 89 and 143 MB (the same at 100,000 rows; numbers need
 *   less); replacing 100,000 rows of 66 columns passed at 95 MB. Three quarters of a megabyte a
 *   column more, for the commit only (it also covers the checkpoint DuckDB runs at a commit);
 *   the first window of a table (its rows become the table's row groups) needs none.
 */
export const loadMemoryLimit = (columns: number, replacedRows = 0, committing = false) =>
  Math.ceil(8 + 0.6 * columns) + Math.ceil((replacedRows * 12) / 2 ** 20) + (committing ? Math.ceil(0.75 * columns) : 0);

/**
 * memory_limit is the database's, not a connection's, and the runs of one process loading one file
 * (`jobs run`) share its database: the limit is the sum of loadMemoryLimit over the windows being
 * loaded into it, each counted from the delete of the rows it replaces to the end of its
 * transaction (its rows are in the buffer pool until then). The sum, not the widest times their
 * number: each table fills its own row group, whose blocks are what the limit is sized by. With
 * none, the opening setting.
 */
interface Share { columns: number; replacedRows: number; tableRows: number; committing: boolean }

class SharedLimit {
  private static readonly byFile = new Map<string, SharedLimit>();
  private readonly shares = new Map<object, Share>();
  private setting: Promise<void> = Promise.resolve();
  /** the connections open on the file, and the largest limit a commit had: the checkpoint before the
   * last one closes gets it (DuckDB's own at closing would have the opening setting, too little for a
   * wide table: it failed, leaving its marker in the WAL) */
  private connections = 0;
  private widest = 0;

  static of(file: string): SharedLimit {
    let limit = SharedLimit.byFile.get(file);
    if (!limit) SharedLimit.byFile.set(file, limit = new SharedLimit());
    return limit;
  }

  opened(): void { this.connections++; }

  /** a connection closes: true if it was the last one on the file, with the limit its checkpoint needs */
  closing(): { last: boolean; limit: string } {
    this.connections--;
    return { last: this.connections <= 0, limit: `${Math.max(this.widest, parseInt(DUCKDB_OPTIONS.memory_limit, 10))}MB` };
  }

  /** `holder` loads a window of a table of `columns` columns that replaces `replacedRows` rows of the
   * `tableRows` it holds (again: its share replaces the one it had) */
  hold(holder: object, columns: number, replacedRows: number, tableRows: number, set: (sql: string) => Promise<void>): Promise<void> {
    this.shares.set(holder, { columns, replacedRows, tableRows, committing: false });
    return this.apply(set);
  }

  /** `holder`'s window commits: its share grows by what the commit pins (loadMemoryLimit), unless the
   * table was empty */
  committing(holder: object, set: (sql: string) => Promise<void>): Promise<void> {
    const share = this.shares.get(holder);
    if (!share || share.tableRows === 0) return Promise.resolve();
    share.committing = true;
    this.widest = Math.max(this.widest, loadMemoryLimit(share.columns, share.replacedRows, true));
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

/**
 * What a DuckDB failure is, decided here once, and by DuckDB's error type where it gives one: the
 * node client has no code (the C API's duckdb_error_type is not bound), but each message starts
 * with the exception's type ("IO Error: ", "Out of Memory Error: "), which is DuckDB's code.
 * - `locked`: an IO error naming the holder of the file's lock ("Conflicting lock is held in
 *   /usr/bin/node (PID 1234)"; on Windows, "being used by another process");
 * - `memory`: an Out of Memory error; the appender drops the type ("Failed to append: could not
 *   allocate block of size ..."): there, the buffer manager's words ("failed to pin block" too);
 * - `invalid`: an IO error on a file that is not a DuckDB database (yet: one being created);
 * - `other`.
 */
export type DuckDbFailure = { kind: 'locked'; pid?: string } | { kind: 'memory' | 'invalid' | 'other' };

export function duckDbFailure(error: unknown): DuckDbFailure {
  const message = error instanceof Error ? error.message : String(error);
  const type = /^([A-Z][A-Za-z ]*?) Error: /.exec(message)?.[1];
  if (type === 'IO') {
    if (/could not set lock on file|conflicting lock is held|being used by another process/i.test(message)) return { kind: 'locked', pid: /\(PID (\d+)\)/.exec(message)?.[1] };
    if (/not a valid DuckDB database file/i.test(message)) return { kind: 'invalid' };
  }
  // the type, or nested in a wrapper's ("Failed to commit: "), or the buffer manager's words where the
  // appender dropped it
  if (type === 'Out of Memory' || /Out of Memory Error: |could not allocate|failed to pin/i.test(message)) return { kind: 'memory' };
  return { kind: 'other' };
}

/** How long a file DuckDB finds invalid may still be one another process is creating, and how
 * long such a file is waited for (DuckDB writes its header in milliseconds). */
const CREATION_MS = 10_000;
const CREATION_GRACE_MS = 3_000;

/** A file another process is creating at this moment: DuckDB finds it "not a valid DuckDB
 * database file" while its header is not all written (seen with 3 and 8 runs loading into a new
 * file at once). Its size says nothing once the error is seen (the other process has written on
 * since: a check of the size failed one run in a few hundred), so a file written in the last ten
 * seconds is waited for as a held one; an invalid file of any other age is refused at once. */
function beingCreated(failure: DuckDbFailure, file: string, now: () => number): boolean {
  if (failure.kind !== 'invalid') return false;
  try {
    return now() - statSync(file).mtimeMs < CREATION_MS;
  } catch {
    return false;
  }
}

/** DuckDB, as the engines' table (engines.ts) knows it: `duckdb:PATH`, a file (created if missing). */
export const DUCKDB: LoadEngine = {
  name: 'duckdb',
  matches: (text) => /^duckdb:/i.test(text.trim()),
  parse: (text, cwd) => {
    const path = text.trim().slice('duckdb:'.length);
    if (!path) throw new UsageError('--load duckdb: needs the path of a database file', 'e.g. --load duckdb:warehouse.duckdb').about('--load');
    // shown (and recorded in a state file) as an absolute path: the same words run from another
    // folder name another database, which the state must not take for the one it loaded
    return { engine: 'duckdb', location: path, shown: `duckdb:${path === ':memory:' ? path : resolve(cwd, path)}` };
  },
  // by its real path (symbolic links and `..` resolved, as the loader opens it: after the link
  // before it), case folded where the file system folds it
  identity: (target, cwd, platform) => {
    if (target.location === ':memory:') return 'duckdb::memory:';
    const real = realFilePath(isAbsolute(target.location) ? target.location : `${cwd}/${target.location}`);
    return `duckdb:${platform === 'darwin' || platform === 'win32' ? real.toLowerCase() : real}`;
  },
  // names are case-insensitive (quoted or not); `main` is the default schema, the only one
  tableIdentity: (parts) => JSON.stringify((parts.length === 2 && parts[0] === 'main' ? parts.slice(1) : parts).map((part) => part.toLowerCase())),
  tableHint: (parts) => (parts.length > 2 || (parts.length > 1 && parts[0] !== 'main') ? 'give a table NAME' : undefined),
  // the path as written under the working folder: its `..` is the file system's (openDuckDb). V8's
  // young generation is bounded from before DuckDB's modules load (they grew it from 8 to 16 MiB),
  // then by the connection
  connect: async (target, deps) => {
    const unbound = boundYoungGeneration(DUCKDB_YOUNG_GENERATION);
    try {
      return await openDuckDb(isAbsolute(target.location) ? target.location : `${deps.cwd}/${target.location}`, target.shown, deps.waitMs, deps.sleep, deps.signal, deps.now, deps);
    } finally {
      unbound();
    }
  },
  secrets: () => [],
  gone: (target, cwd) => target.location !== ':memory:' && !existsSync(resolve(cwd, target.location)),
  // a job file's `load: duckdb:PATH`: PATH relative to the file's folder (`..` kept: the file
  // system resolves it after the symbolic link before it, paths.ts realFilePath)
  inFolder: (text, folder) => {
    const path = /^duckdb:(.+)$/is.exec(text.trim())?.[1];
    return path && !path.startsWith(':') && !isAbsolute(path) ? `duckdb:${folder.replace(/\/$/, '')}/${path}` : text;
  },
};

/** `path`: absolute, as written (`..` not collapsed: realFilePath resolves it); `now`: the clock
 * the wait for a held file is measured by, `sleep` its waits (POLICY.duckdbLock); `host`: this
 * process, whose pid names the drafts of a new file (createWhole) */
export async function openDuckDb(path: string, shown: string, waitMs: number, sleep: Sleep, signal: AbortSignal, now: () => number = Date.now, more: Pick<ConnectDeps, 'host' | 'waitFlag' | 'onWait'> = {}): Promise<LoadConnection> {
  const { host, onWait } = more;
  const waitFlag = more.waitFlag === undefined ? '--max-wait' : more.waitFlag;
  const duckdb = await loadDuckDb();
  let file = realFilePath(path);
  // the drafts of this file left by a process killed while it created it (createWhole): each a whole
  // empty database, which nothing else would ever remove
  if (host) cleanStaleTemps(file, host);
  const deadline = now() + waitMs;
  let instance: DuckDBInstance | undefined;
  let said = false;
  /** until when a file another process is creating is waited for */
  let createdBy: number | undefined;
  for (let attempt = 0; ; attempt++) {
    const delay = backoffDelay(POLICY.duckdbLock, attempt, Math.random);
    try {
      // one database per file in the process, shared: two runs of one process (`jobs run`) that
      // each opened the file (by two spellings of its path) would each write it, and one's rows
      // would be lost. Its real path again: a run of this process may have created it meanwhile
      file = realFilePath(path);
      if (!existsSync(file)) await createWhole(duckdb, file, host?.pid);
      // a WAL left beside the file (a process killed before its checkpoint) is replayed as the
      // file opens, which a wide table's rows may need more than the opening memory_limit for:
      // replayed once with DuckDB's own limit, as its other clients open the file, then attached
      // again (within attach: the process's other runs on the file wait for it)
      const at = file;
      instance = await attach(duckdb, file, DUCKDB_OPTIONS, async (error) => duckDbFailure(error).kind === 'memory' && replayed(duckdb, at));
      break;
    } catch (error) {
      const failure = duckDbFailure(error);
      const locked = failure.kind === 'locked';
      // a file being created is given a moment whatever --max-wait says: it is not held yet
      if (!locked && beingCreated(failure, file, now)) createdBy ??= now() + CREATION_GRACE_MS;
      if (!locked && (createdBy === undefined || !beingCreated(failure, file, now) || now() + delay > createdBy || signal.aborted)) {
        throw new CliError(`cannot open the DuckDB database ${shown}: ${firstLine(error)}`, EXIT.usage, 'check the path, and that it is a DuckDB database file');
      }
      if (locked && (now() + delay > deadline || signal.aborted)) {
        // DuckDB names the holder: "Conflicting lock is held in /usr/bin/node (PID 1234)"
        const pid = failure.pid;
        throw new CliError(`the DuckDB database ${shown} is held by another process${pid ? ` (process ${pid})` : ''}: DuckDB allows one writer per file`, EXIT.usage,
          `wait for the other run to end${!waitFlag ? '' : waitMs > 0 ? `, or give a longer ${waitFlag}` : `, or give ${waitFlag} to wait for the file`}`);
      }
      // the wait said once, as it begins (a run waiting in silence is taken for one stuck)
      if (locked && !said && waitFlag) onWait?.(`waiting up to ${formatDuration(Math.max(0, deadline - now()))} for the DuckDB database ${shown} (${waitFlag}): another process holds it${failure.pid ? ` (process ${failure.pid})` : ''}`);
      said ||= locked;
      await sleep(delay, signal);
    }
  }
  let connection: DuckDBConnection | undefined;
  try {
    connection = await instance.connect();
    await connection.run(`USE ${ATTACHED_AS}`);
    return new DuckDbConnection(duckdb, file, connection, shown, SharedLimit.of(file));
  } catch (error) {
    connection?.closeSync();
    detach(file);
    throw error;
  }
}

/**
 * A new database file, put in place whole: DuckDB creates a missing file by opening it with O_TRUNC
 * before it takes its lock, so two processes creating one file at once may empty the file the
 * other has just begun, its header gone for good ("not a valid DuckDB database file", 1 round in 40
 * of 8 processes, `test/reliability/duckdb-concurrent.test.ts`) and with it the rows committed
 * into it. It is created beside, under another name, and linked into place: a link fails where the
 * file exists, so the first one made is the one every process opens. Where the file system has no
 * links, DuckDB creates it as before. The draft is named as the tool's temporary files are, with
 * the pid of its process (`pid`), so that the next load of the file removes it if this process is
 * killed before it does (openDuckDb, cleanStaleTemps).
 */
async function createWhole(duckdb: DuckDb, file: string, pid: number | undefined): Promise<void> {
  const draft = tempPathFor(file, pid);
  try {
    (await duckdb.DuckDBInstance.create(draft, DUCKDB_OPTIONS)).closeSync();
    linkSync(draft, file);
  } catch {
    // EEXIST: another process made it first, which is the point; any other failure is DuckDB's own
    // to report, as it opens (or creates) the file itself
  } finally {
    rmSync(draft, { force: true });
    rmSync(`${draft}.wal`, { force: true });
  }
}

/** The file opened (its WAL replayed and checkpointed) and closed, without a memory limit of ours. */
async function replayed(duckdb: DuckDb, file: string): Promise<boolean> {
  try {
    const instance = await duckdb.DuckDBInstance.create(file, { threads: DUCKDB_OPTIONS.threads });
    instance.closeSync();
    return true;
  } catch {
    return false;
  }
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';

type DuckDb = Awaited<ReturnType<typeof loadDuckDb>>;

/** The state keys (`--state table`) held by a connection of this process: database, key. */
const stateHolds = new Set<string>();

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
  private readonly unbound = boundYoungGeneration(DUCKDB_YOUNG_GENERATION);

  constructor(private readonly duckdb: DuckDb, private readonly file: string, private readonly connection: DuckDBConnection, private readonly shown: string, private readonly limit: SharedLimit) {
    limit.opened();
  }

  private failed(error: unknown): CliError {
    if (error instanceof CliError) return error;
    const message = firstLine(error);
    // the memory_limit set by loadMemoryLimit was too small for this table: nothing was committed
    const memory = duckDbFailure(error).kind === 'memory';
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

  /** the state keys this connection holds (in `stateHolds`) */
  private readonly stateKeys = new Set<string>();

  async tryLockState(key: string): Promise<boolean> {
    const id = `${this.shown}\n${key}`;
    if (stateHolds.has(id)) return this.stateKeys.has(key);
    stateHolds.add(id);
    this.stateKeys.add(key);
    return true;
  }

  async unlockState(key: string): Promise<void> {
    if (this.stateKeys.delete(key)) stateHolds.delete(`${this.shown}\n${key}`);
  }

  /** another process holding the file cannot be asked: its opening fails (openDuckDb) */
  async stateHolder(): Promise<StateHolder | undefined> {
    return undefined;
  }

  async query(sql: string, params: readonly (string | number)[] = []): Promise<string[][]> {
    const reader = await this.connection.runAndReadAll(sql, [...params]).catch((error: unknown) => { throw this.failed(error); });
    return reader.getRows().map((row) => row.map((value) => (value === null ? '' : String(value))));
  }

  async deleteRows(sql: string, params: readonly (string | number)[], columns: number): Promise<void> {
    // the limit first: the delete versions of the rows are held from the delete to the commit; the
    // rows the table holds besides decide what the commit pins
    const where = sql.lastIndexOf(' WHERE ');
    const [count] = await this.query(`SELECT count(*) FILTER (${sql.slice(where + 1)}), count(*) FROM ${sql.slice('DELETE FROM '.length, where)}`, params);
    await this.limit.hold(this, columns, Number(count?.[0] ?? 0), Number(count?.[1] ?? 0), (set) => this.execute(set));
    await this.execute(sql, params);
  }

  /** GIVE_BACK was set on the database */
  private givingBack = false;

  async appender(table: readonly string[], columns: readonly Column[], order: readonly string[]): Promise<TableAppender> {
    if (!this.givingBack) {
      await this.connection.run(GIVE_BACK).catch((error: unknown) => { throw this.failed(error); });
      this.givingBack = true;
    }
    const name = table[table.length - 1] as string;
    const appender = await this.connection.createAppender(name, table.length > 1 ? table[0] : null).catch((error: unknown) => { throw this.failed(error); });
    return new DuckDbChunkAppender(this.duckdb, await loadDuckDbBindings(), appender, columns, order, (error) => this.failed(error));
  }

  /** closed once: a second close would let go of the file's instance under another connection */
  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      for (const key of this.stateKeys) await this.unlockState(key);
      // a table held for creation is let go whatever ended the transaction
      this.held?.();
      this.held = undefined;
      await this.limit.release(this, (set) => this.execute(set)).catch(() => undefined);
      const { last, limit } = this.limit.closing();
      // the last connection on the file checkpoints it with the memory its widest commit had, so
      // that DuckDB's checkpoint at closing finds nothing to do (the file then needs no WAL to be read)
      if (last) {
        await this.connection.run(`SET memory_limit = '${limit}'`).catch(() => undefined);
        await this.connection.run('CHECKPOINT').catch(() => undefined);
      }
    } finally {
      try {
        this.connection.closeSync();
        // let go only once closed: a connection left open keeps the file's database, which a new
        // instance must not open beside it (the entry stays, the instance with it)
        detach(this.file);
      } finally {
        this.unbound();
      }
    }
  }
}
