// The kinds of state store, by the --state target they serve (store.ts: the interface).

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
