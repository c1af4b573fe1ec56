// The state in a local file (the default `--state FILE`): read with the log a stopped run left
// beside it (state-log.ts), locked by FILE.lock (fs/lock.ts: a dead holder's lock is taken over),
// written whole or logged (StateWriter), each write atomic.

import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { HEARTBEAT_MS, inspectLock, lockFile, removeLock, type LockHost, type LockOptions, type LockState } from '../../fs/lock.js';
import { listedAbsent, realTarget } from '../../paths.js';
import { replayLog, StateWriter, type WriterStart } from '../state-log.js';
import { waitForStoreLock, type LockView, type StateStore, type StateWrites, type StoredState, type StoreLock } from './store.js';
import type { Sleep } from '../../retry.js';

/** The text of the state file at `path`, or undefined when there is none; a file that cannot be
 * read is a usage error. */
export function readStateText(path: string): StoredState | undefined {
  // (a pass over a job file's states, `jobs plan`: a missing one is known from its folder's listing)
  if (listedAbsent(path)) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`cannot read the state file ${path}: ${(error as Error).message}`, 'give --state the path of a file (it is created on the first run)');
  }
  return { text, replay: (windows, shape) => replayLog(path, text, windows, shape) };
}

export class FileStore implements StateStore {
  readonly deferrable = true;
  /** a symbolic link is followed: the file it names is read, locked and replaced; the link stays */
  readonly name: string;

  constructor(target: string, private readonly deps: { cwd: string; host: LockHost; now: () => number; sleep?: Sleep; lock?: LockOptions; signal?: AbortSignal }) {
    this.name = realTarget(target, deps.cwd);
  }

  async read(): Promise<StoredState | undefined> {
    return readStateText(this.name);
  }

  async lock(waitMs = 0): Promise<StoreLock> {
    const lock = await waitForStoreLock(async () => lockFile(this.name, this.deps.host, { now: this.deps.now, ...this.deps.lock }), waitMs, this.deps);
    return { release: async () => lock.release() };
  }

  writes(document: () => { windows: readonly unknown[] }, start: WriterStart): StateWrites {
    return new StateWriter(this.name, document, start);
  }

  async inspectLock(): Promise<LockView | undefined> {
    const lock = inspectLock(this.name, this.deps.host, { now: this.deps.now });
    return lock && { path: lock.path, holder: lock.holder, local: lock.local, stale: lock.stale, ageMs: lock.ageMs, renewEveryMs: HEARTBEAT_MS, seen: lock };
  }

  async removeLock(found: LockView): Promise<boolean> {
    return removeLock(found.seen as LockState, this.deps.host, { now: this.deps.now });
  }
}
