// The kinds of state store, by the --state target they serve (store.ts: the interface).

import { hostname } from 'node:os';
import { configDir } from '../../auth/store.js';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { LoadTarget } from '../../load/target.js';
import { connectTo, parseLoadTarget } from '../../load/engines.js';
import { isObjectUrl } from '../../destinations/object-url.js';
import { sleepFor } from '../../retry.js';
import { BucketStore } from './bucket.js';
import { FileStore } from './file.js';
import type { StateStore, StoreDeps, TableStateDeps } from './store.js';
import { TableStore } from './table.js';
import { TABLE_STATE, isDatabaseUrl } from './targets.js';

export interface StoreKind {
  matches(target: string): boolean;
  open(target: string, deps: StoreDeps): StateStore;
}

/** A path of this machine: the state file, its lock and log. */
const FILE_STORE: StoreKind = { matches: () => true, open: (target, deps) => new FileStore(target, deps) };

/** The kinds of store, the first that matches a --state target wins. */
const STORES: StoreKind[] = [
  { matches: isObjectUrl, open: (target, deps) => new BucketStore(target, deps) },
  {
    matches: (target) => target === TABLE_STATE,
    open: (_target, deps) => {
      // (a run without --load is refused before: engine/prepare.ts; here, `state show table`)
      if (!deps.table) throw new UsageError('"table" is the state a run keeps in its --load database: name that database here', 'e.g. reporting state show duckdb:warehouse.duckdb (or postgres://USER@HOST/DB)');
      return new TableStore(deps.table);
    },
  },
  { matches: isDatabaseUrl, open: (target, deps) => new TableStore({ ...databaseOf(parseLoadTarget(target, deps.cwd), deps, null), key: deps.stateKey, pick: true }) },
  FILE_STORE,
];

/** A kind of store added before the others (a test's: one file, and this one call). */
export function registerStateStore(kind: StoreKind): () => void {
  STORES.unshift(kind);
  return () => {
    const at = STORES.indexOf(kind);
    if (at >= 0) STORES.splice(at, 1);
  };
}

const storeKindOf = (target: string) => STORES.find((kind) => kind.matches(target)) as StoreKind;

/** The store a `--state` target names. */
export function stateStoreOf(target: string, deps: StoreDeps): StateStore {
  return storeKindOf(target).open(target, deps);
}

/** Whether a --state target is a path of this machine (a file, with its lock and log beside it):
 * one of the run's files, which no other may be. */
export const isStatePath = (target: string) => storeKindOf(target) === FILE_STORE;

/** A database (as --load names it) as a table state's home, its key aside; `waitFlag`: what sets
 * the wait for a DuckDB file another process holds, named in its hint (null: none, `state show`). */
export function databaseOf(target: LoadTarget, deps: Pick<StoreDeps, 'cwd' | 'env' | 'host' | 'now' | 'sleep' | 'signal' | 'onWait'>, waitFlag: string | null): Omit<TableStateDeps, 'key'> {
  const signal = deps.signal ?? new AbortController().signal;
  return {
    engine: target.engine,
    shown: target.shown,
    pid: deps.host.pid,
    now: deps.now,
    sleep: deps.sleep,
    signal: deps.signal,
    onWait: deps.onWait,
    connect: (waitMs, flag = waitFlag) => connectTo(target, { cwd: deps.cwd, env: deps.env, waitMs, sleep: deps.sleep ?? sleepFor, signal, now: deps.now, holder: { pid: deps.host.pid, host: hostname() }, host: deps.host, waitFlag: flag, onWait: deps.onWait }),
  };
}

/** What a state's store needs of the run: the process, the clock its lock is judged by, where a
 * bucket's client finds its settings. (Here, not in engine.ts: `state show` and `download
 * --state` reach a store without loading the engine.) */
export const storeDeps = (f: Pick<Context, 'cwd' | 'host' | 'env' | 'now' | 'sleep' | 'signal'> & { random?: () => number; trace?: (line: string) => void; globals?: { retries: number } }): StoreDeps => ({
  cwd: f.cwd, host: f.host, env: f.env, configDir: configDir(f.env, f.host.platform), now: f.now, sleep: f.sleep, trace: f.trace, signal: f.signal,
  retries: f.globals?.retries, random: f.random,
});
