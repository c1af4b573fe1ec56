// The kinds of state store, by the --state target they serve (store.ts: the interface).

import { configDir } from '../../auth/store.js';
import type { Context } from '../../context.js';
import { isObjectUrl } from '../../paths.js';
import { BucketStore } from './bucket.js';
import { FileStore } from './file.js';
import type { StateStore, StoreDeps } from './store.js';

interface StoreKind {
  matches(target: string): boolean;
  open(target: string, deps: StoreDeps): StateStore;
}

/** The kinds of store, the first that matches a --state target wins. */
const STORES: readonly StoreKind[] = [
  { matches: isObjectUrl, open: (target, deps) => new BucketStore(target, deps) },
  { matches: () => true, open: (target, deps) => new FileStore(target, deps) },
];

/** The store a `--state` target names. */
export function stateStoreOf(target: string, deps: StoreDeps): StateStore {
  return (STORES.find((kind) => kind.matches(target)) as StoreKind).open(target, deps);
}

/** What a state's store needs of the run: the process, the clock its lock is judged by, where a
 * bucket's client finds its settings. (Here, not in engine.ts: `state show` and `download
 * --state` reach a store without loading the engine.) */
export const storeDeps = (f: Pick<Context, 'cwd' | 'host' | 'env' | 'now' | 'signal'> & { trace?: (line: string) => void }): StoreDeps => ({
  cwd: f.cwd, host: f.host, env: f.env, configDir: configDir(f.env, f.host.platform), now: f.now, trace: f.trace, signal: f.signal,
});
