// The state in the destination database (`--load ... --state table`): for pods with no disk of
// their own, beside the rows it describes. The same document as a local file, kept in the table
// _reporting_state of the database's default schema: one row per state key and window (the
// window's record, as JSON), and the key's header row (window -1..-1: the request, the period
// planned, the uploads in flight). One row per window lets a window's done-record be written in
// the same transaction as its rows (recordInTransaction, called by the table destination before
// its COMMIT): the window is loaded and recorded at once, or neither; the run's other writes,
// on the store's own connection meanwhile, touch other rows.
//
// The key: the load table and the scope (load/load.ts scopeOf: base URL, side, breakdowns,
// filters, account), so that each set of rows a run replaces has its own state. The lock: the
// database's. Postgres: a session advisory lock on the key, freed by the server when the session
// ends (a killed pod's connection included); DuckDB: the file's lock (one process at a time).

import { hostname } from 'node:os';
import { CliError, EXIT, UsageError } from '../../errors.js';
import { LockedError } from '../../fs/lock.js';
import type { LoadConnection } from '../../load/load.js';
import { quoteIdent } from '../../load/target.js';
import { Serialised, type WriterStart } from '../state-log.js';
import { waitForStoreLock, type LockView, type StateStore, type StateWrites, type StoredState, type StoreLock, type TableStateDeps } from './store.js';

export const STATE_TABLE = '_reporting_state';
const TABLE = quoteIdent(STATE_TABLE);
/** the window of a key's header row */
const HEADER = -1;

/** A window's record as the destination commits it with its rows: the entry, and the records it
 * supersedes (the pieces of a window that was split). */
export interface WindowRecord {
  since: number;
  until: number;
  entry: unknown;
  drop: readonly (readonly [number, number])[];
}

const CREATE = (dialect: string) => `CREATE TABLE IF NOT EXISTS ${TABLE} (state_key ${dialect === 'duckdb' ? 'VARCHAR' : 'TEXT'} NOT NULL, window_since BIGINT NOT NULL, window_until BIGINT NOT NULL, body ${dialect === 'duckdb' ? 'VARCHAR' : 'TEXT'} NOT NULL, PRIMARY KEY (state_key, window_since, window_until))`;
const UPSERT = `INSERT INTO ${TABLE} (state_key, window_since, window_until, body) VALUES ($1, $2, $3, $4) ON CONFLICT (state_key, window_since, window_until) DO UPDATE SET body = excluded.body`;
const DELETE_ONE = `DELETE FROM ${TABLE} WHERE state_key = $1 AND window_since = $2 AND window_until = $3`;

/** The table's name shown in messages: the database, the table, the key. */
const nameOf = (shown: string, key: string | undefined) => `${shown} ${STATE_TABLE}${key === undefined ? '' : ` "${key}"`}`;

export class TableStore implements StateStore {
  name: string;
  private key: string | undefined;
  /** the connection of the run holding the lock (its writes go through it) */
  private held: LoadConnection | undefined;

  /** the key is still to be found among the table's (--key's words) */
  private pick: boolean;

  constructor(private readonly deps: TableStateDeps) {
    this.key = deps.key;
    this.pick = Boolean(deps.pick);
    this.name = nameOf(deps.shown, deps.key);
  }

  get stateKey(): string | undefined {
    return this.key;
  }

  /** A connection for a look (no lock): `state show`, `run --plan`. */
  private async withConnection<T>(use: (connection: LoadConnection) => Promise<T>): Promise<T> {
    if (this.held) return use(this.held);
    // (a look, not a wait: a held DuckDB file's hint names no flag)
    const connection = await this.deps.connect(0, null);
    try {
      return await use(connection);
    } finally {
      await connection.close();
    }
  }

  /** The key: given, or the only one the table holds (`state show DATABASE`). */
  private async keyIn(connection: LoadConnection): Promise<string | undefined> {
    if (this.key !== undefined && !this.pick) return this.key;
    const keys = (await connection.query(`SELECT DISTINCT state_key FROM ${TABLE} ORDER BY state_key`)).map(([key]) => key ?? '');
    const listed = (among: readonly string[]) => `${among.slice(0, 5).map((key) => `"${key}"`).join(', ')}${among.length > 5 ? ', ...' : ''}`;
    // --key: the whole key, or its table (the key's first word), or a part of it found in one key only
    const given = this.key;
    const matching = given === undefined ? keys
      : keys.includes(given) ? [given]
        : keys.filter((key) => key.startsWith(`${given} `)).length ? keys.filter((key) => key.startsWith(`${given} `))
          : keys.filter((key) => key.includes(given));
    if (given !== undefined && matching.length === 0 && keys.length) {
      throw new UsageError(`${this.deps.shown} holds no state "${given}" in ${STATE_TABLE}; it holds ${listed(keys)}`, 'give --key one of them, its table alone, or a part only one of them has');
    }
    if (matching.length > 1) {
      throw new UsageError(`${this.deps.shown} holds ${matching.length} states${given === undefined ? '' : ` matching "${given}"`} in ${STATE_TABLE}: ${listed(matching)}`, 'name one with --key KEY (the whole key, or a part only it has, e.g. its account=)');
    }
    this.pick = false;
    this.key = matching[0] ?? given;
    this.name = nameOf(this.deps.shown, this.key);
    return this.key;
  }

  async read(): Promise<StoredState | undefined> {
    return this.withConnection(async (connection) => {
      if (!await connection.columns([STATE_TABLE])) return undefined;
      const key = await this.keyIn(connection);
      if (key === undefined) return undefined;
      const rows = await connection.query(`SELECT window_since, window_until, body FROM ${TABLE} WHERE state_key = $1 ORDER BY window_since, window_until`, [key]);
      const header = rows.find(([since, until]) => Number(since) === HEADER && Number(until) === HEADER);
      if (!header) return undefined;
      // the document as a file holds it: the header's fields, then the windows
      const windows = rows.filter((row) => row !== header).map(([, , body]) => body ?? 'null');
      const head = (header[2] ?? '{}').trim();
      if (!head.startsWith('{') || !head.endsWith('}')) throw new UsageError(`the state ${this.name} is not a reporting state: its header row is not a JSON object`, 'remove its rows, or run with --full-refresh');
      const text = `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"windows":[${windows.join(',')}]}`;
      return { text };
    });
  }

  async lock(waitMs = 0): Promise<StoreLock> {
    const { deps } = this;
    if (this.key === undefined) throw new UsageError(`${this.name}: no state key`, 'name one with --key KEY');
    const key = this.key;
    const started = deps.now();
    // DuckDB: the file's lock is the lock; the wait for it is --lock-wait's
    const connection = await deps.connect(waitMs);
    try {
      await this.createTable(connection);
      await waitForStoreLock(async () => {
        if (await connection.tryLockState(key)) return;
        const holder = await connection.stateHolder(key);
        throw new LockedError(this.name, holder && { ...holder, nonce: '' }, holder
          ? `let it finish, or do not start runs on one state at the same time; the database frees the lock when that session ends (a killed process's too)`
          : 'another run of this process holds it', 'state');
      }, Math.max(0, waitMs - (deps.now() - started)), deps);
    } catch (error) {
      await connection.close();
      throw error;
    }
    this.held = connection;
    return {
      release: async () => {
        if (this.held !== connection) return;
        this.held = undefined;
        await connection.unlockState(key).catch(() => undefined);
        await connection.close();
      },
    };
  }

  /** _reporting_state made if missing, under a lock of its own: two runs creating it at once take turns. */
  private async createTable(connection: LoadConnection): Promise<void> {
    if (await connection.columns([STATE_TABLE])) return;
    await connection.execute('BEGIN');
    try {
      await connection.lock([STATE_TABLE]);
      await connection.execute(CREATE(connection.dialect));
      await connection.execute('COMMIT');
    } catch (error) {
      await connection.execute('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  writes(document: () => { windows: readonly unknown[] }, start: WriterStart): StateWrites {
    const connection = this.held;
    // a look (RunState.peek) holds no lock, and writes nothing
    if (!connection || this.key === undefined) return { write: async () => { throw new Error('the table state is written only under its lock'); }, close: async () => {} };
    return new TableWrites(connection, this.key, document, start.text !== undefined);
  }

  /** The window's record written on the destination's connection, inside its open transaction. */
  async recordInTransaction(connection: LoadConnection, record: WindowRecord): Promise<void> {
    const key = this.key as string;
    for (const [since, until] of record.drop) await connection.execute(DELETE_ONE, [key, since, until]);
    await connection.execute(UPSERT, [key, record.since, record.until, JSON.stringify(record.entry)]);
  }

  async inspectLock(): Promise<LockView | undefined> {
    return this.withConnection(async (connection) => {
      if (!await connection.columns([STATE_TABLE])) return undefined;
      const key = await this.keyIn(connection);
      const holder = key === undefined ? undefined : await connection.stateHolder(key);
      if (!holder) return undefined;
      return {
        path: this.name, holder: { ...holder, nonce: '' }, local: holder.host === hostname(), stale: false, ageMs: 0, renewEveryMs: 0, session: true, seen: holder,
      };
    });
  }

  async removeLock(found: LockView): Promise<boolean> {
    // a session's lock is the server's: it ends with the session, never removed by another
    throw new LockedError(this.name, found.holder, `the database frees it when that session ends: stop process ${found.holder?.pid ?? '?'}${found.holder && !found.local ? ` on ${found.holder.host}` : ''}, or end its session`, 'state');
  }
}

/** Writes a run's changes as rows: the windows a change names (upserted, or deleted when gone)
 * and the header, one transaction a write; changes that wait share the next one. */
class TableWrites implements StateWrites {
  private readonly writes = new Serialised(() => this.cycle());
  /** the windows changed since the last write ("since:until"); all: every row written anew */
  private dirty = new Set<string>();
  private all: boolean;
  private failed = false;

  constructor(private readonly connection: LoadConnection, private readonly key: string, private readonly document: () => { windows: readonly unknown[] }, existed: boolean) {
    this.all = !existed;
  }

  write(line?: string): Promise<void> {
    if (line === undefined) {
      if (!this.all && !this.failed) return this.writes.pending();
    } else {
      const change = JSON.parse(line) as { drop?: number[][]; add?: number[][]; set?: [number, number, unknown][] };
      for (const [since, until] of [...change.drop ?? [], ...change.add ?? [], ...change.set ?? []]) this.dirty.add(`${since}:${until}`);
    }
    return this.writes.ask();
  }

  private async cycle(): Promise<void> {
    const all = this.all || this.failed;
    const dirty = this.dirty;
    this.dirty = new Set();
    this.all = false;
    this.failed = false;
    const { windows, ...header } = this.document() as { windows: readonly { sinceUnix: number; untilUnix: number }[] };
    const { connection, key } = this;
    try {
      await connection.execute('BEGIN');
      await connection.execute(UPSERT, [key, HEADER, HEADER, JSON.stringify(header)]);
      if (all) {
        // the document whole: rows of windows it no longer holds go (each deleted by its key: a
        // key deleted and inserted again in one transaction is refused by DuckDB's index)
        const have = new Set(windows.map((entry) => `${entry.sinceUnix}:${entry.untilUnix}`));
        const rows = await connection.query(`SELECT window_since, window_until FROM ${TABLE} WHERE state_key = $1 AND window_since <> $2`, [key, HEADER]);
        for (const [since, until] of rows) if (!have.has(`${since}:${until}`)) await connection.execute(DELETE_ONE, [key, Number(since), Number(until)]);
        for (const entry of windows) await connection.execute(UPSERT, [key, entry.sinceUnix, entry.untilUnix, JSON.stringify(entry)]);
      } else {
        const byKey = new Map(windows.filter((entry) => dirty.has(`${entry.sinceUnix}:${entry.untilUnix}`)).map((entry) => [`${entry.sinceUnix}:${entry.untilUnix}`, entry]));
        for (const id of dirty) {
          const [since, until] = id.split(':').map(Number) as [number, number];
          const entry = byKey.get(id);
          if (entry) await connection.execute(UPSERT, [key, since, until, JSON.stringify(entry)]);
          else await connection.execute(DELETE_ONE, [key, since, until]);
        }
      }
      await connection.execute('COMMIT');
    } catch (error) {
      await connection.execute('ROLLBACK').catch(() => undefined);
      // what the table holds is not known: the next write writes every row
      this.failed = true;
      throw error instanceof CliError ? error : new CliError(`the state could not be written: ${(error as Error).message}`, EXIT.internal);
    }
  }

  async close(): Promise<void> {
    await this.writes.settled();
    // a write that failed is tried once more, whole
    if (this.failed) await this.writes.ask().catch(() => undefined);
  }
}
