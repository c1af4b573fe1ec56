// Where a run's state lives: one interface (read, lock, write, release), one file per kind.
// The engine (state.ts RunState) reads, checks and changes the document; a store only keeps its
// text: a local file (file.ts, the default), an object in a bucket (bucket.ts, `--state s3://`).
// A new kind of store is one new file and one line in kinds.ts.

import { InterruptedError } from '../../errors.js';
import { LockedError, type Holder, type LockOptions } from '../../fs/lock.js';
import { formatDuration } from '../../duration.js';
import type { Host } from '../../host.js';
import type { EntryShape, Keyed, Planned, Upload, WriterStart } from '../state-log.js';
import type { LoadConnection } from '../../load/load.js';
import type { Engine } from '../../load/target.js';
import { backoffDelay, POLICY, sleepFor, STORE_LOCK_LEAST_MS, type Sleep } from '../../retry.js';

/** a wait no signal cuts short */
const NEVER = new AbortController().signal;

/** A document's windows with the changes logged beside it since it was written. */
export interface Replayed<E> {
  windows: E[];
  at?: string;
  planned?: Planned;
  uploads?: Upload[];
}

/** What a store holds: the document's text, and (a local file) the changes logged beside it. */
export interface StoredState {
  text: string;
  replay?<E extends Keyed>(windows: readonly E[], shape: EntryShape<E>): Replayed<E> | undefined;
}

/** A run's writes: serialised; a change (a JSON line) or, with none, "make sure the document
 * exists". close() waits for them and never throws. */
export interface StateWrites {
  /** Records one change (a JSON line), or with none, makes sure the document exists. `light`: a
   * change that a power loss may take back (the machine's, never the process's: a killed run's
   * change is there for the next one), where the store can make it cheaper so (a file: its folder
   * not synced after the rename, the next change's sync covering it) */
  write(line?: string, light?: boolean): Promise<void>;
  close(): Promise<void>;
}

/** The store's lock, held by one run at a time. release() is idempotent and never throws. */
export interface StoreLock {
  release(): Promise<void>;
}

/** A lock as found (`state show`, `state unlock`), judged by the rules a taker applies. */
export interface LockView {
  /** the lock as messages name it (FILE.lock, s3://BUCKET/KEY.lock) */
  path: string;
  /** undefined: a lock this tool did not write, or cannot read */
  holder: Holder | undefined;
  /** the holder is a process of this machine (its liveness can be asked) */
  local: boolean;
  /** a taker would take it over */
  stale: boolean;
  /** since its holder last showed it lives */
  ageMs: number;
  /** a live holder shows it lives this often (touches a file, renews a lease) */
  renewEveryMs: number;
  /** a lease: when it runs out unless renewed (ms since the epoch) */
  expiresAt?: number;
  /** a database session's lock (`--state table`): the server frees it when the session ends, and
   * nobody else can remove it */
  session?: boolean;
  /** what removal must match (not a lock taken meanwhile) */
  readonly seen: unknown;
}

export interface StateStore {
  /** the state as messages name it: a real path, or s3://BUCKET/KEY */
  readonly name: string;
  /** a change may wait to be written with the next one (RunState.pending's `withNext`): not in a
   * table, whose run's loads write the same rows in their own transactions (a change written late
   * would conflict with one of them) */
  readonly deferrable?: boolean;
  /** the document, or undefined when there is none yet */
  read(): Promise<StoredState | undefined>;
  /** takes the lock for a run, waiting up to `waitMs` for one held by another run to be released
   * or to run out; then LockedError (exit 2) naming its holder */
  lock(waitMs?: number): Promise<StoreLock>;
  /** the writer of a run holding the lock; `document` is the state as it is now */
  writes(document: () => { windows: readonly unknown[] }, start: WriterStart): StateWrites;
  inspectLock(): Promise<LockView | undefined>;
  /** removes the lock found (true), unless it changed meanwhile (false) */
  removeLock(found: LockView): Promise<boolean>;
}

/** What a table store needs: the database (its connection opens the engine's client), the key. */
export interface TableStateDeps {
  engine: Engine;
  /** the database as it may be shown (no password) */
  shown: string;
  /** a connection to the database; `waitMs`: how long a DuckDB file held by another process is
   * waited for, `waitFlag` the flag its hint names (null: none, a look that never waits) */
  connect(waitMs: number, waitFlag?: string | null): Promise<LoadConnection>;
  /** the state's key; undefined (`state show DATABASE`): the one key the table holds */
  key?: string;
  /** `key` is --key's words: the key they name among those the table holds */
  pick?: boolean;
  /** the run's process, named to another run that finds the key held */
  pid: number;
  now(): number;
  /** the waits for the lock (--lock-wait); unset: a timer */
  sleep?: Sleep;
  signal?: AbortSignal;
  /** --lock-wait: told once, as a wait for a key (or a DuckDB file) another run holds begins */
  onWait?: StoreDeps['onWait'];
}

/** What a store needs from the run. */
export interface StoreDeps {
  cwd: string;
  host: Host;
  env: Readonly<Record<string, string | undefined>>;
  /** the configuration folder (the object store's records) */
  configDir: string;
  /** the clock locks are judged by */
  now: () => number;
  /** the waits for a lock (--lock-wait); unset: a timer */
  sleep?: Sleep;
  /** a bucket's client: --retries, and the jitter of its waits */
  retries?: number;
  random?: () => number;
  /** tests pose as another process, shorten heartbeats */
  lock?: LockOptions;
  /** -v: a line per request to a bucket */
  trace?: (line: string) => void;
  /** a wait for a lock is cut short by it (Ctrl-C) */
  signal?: AbortSignal;
  /** --lock-wait: told once, as a wait for a lock another run holds begins (what it waits for, how long) */
  onWait?: (message: string) => void;
  /** `--state table`: the run's --load database and the state's key there */
  table?: TableStateDeps;
  /** `state show DATABASE --key KEY` */
  stateKey?: string;
}

/** Tries `take` until it does not throw LockedError, for at most `waitMs`, sleeping between tries
 * (POLICY.storeLock: 2 s, or until `retryAt` says the lock may be free: a lease's end). */
export async function waitForStoreLock<T>(take: () => Promise<T>, waitMs: number, deps: Pick<StoreDeps, 'now' | 'sleep' | 'signal' | 'onWait'>, retryAt?: (error: LockedError) => number | undefined): Promise<T> {
  const deadline = deps.now() + waitMs;
  const sleep = deps.sleep ?? sleepFor;
  for (let attempt = 0; ; attempt++) {
    try {
      return await take();
    } catch (error) {
      if (!(error instanceof LockedError)) throw error;
      const left = deadline - deps.now();
      if (left <= 0) {
        // it waited: said, so that the same words as without --lock-wait are not taken for no wait
        if (waitMs > 0) error.message = `${error.message} (waited ${Math.round(waitMs / 1000)} s for it: --lock-wait)`;
        throw error;
      }
      // (the wait first: a JSON log's message is cut at 300 characters, a long state's name with it)
      if (attempt === 0) deps.onWait?.(`waiting up to ${formatDuration(left)} for the state's lock (--lock-wait): ${error.message}`);
      const next = retryAt?.(error);
      const every = backoffDelay(POLICY.storeLock, attempt, Math.random);
      const pause = Math.max(STORE_LOCK_LEAST_MS, Math.min(left, every, next === undefined ? every : next - deps.now() + STORE_LOCK_LEAST_MS));
      // Ctrl-C or SIGTERM while waiting: the run was interrupted (130, 143), not refused
      const interrupted = () => new InterruptedError(String(deps.signal?.reason ?? 'SIGINT'), 'no report was submitted: the state was never locked');
      if (deps.signal?.aborted) throw interrupted();
      try {
        await sleep(pause, deps.signal ?? NEVER);
      } catch (stopped) {
        if (deps.signal?.aborted) throw interrupted();
        throw stopped;
      }
    }
  }
}
