// Issue 34, item 6: a new kind of state store is one file and one registration. This test's
// store (state kept in memory, under `mem://NAME`) is defined here and registered here, and
// nothing else changes: RunState reads, locks, writes and reopens it as it does a file.

import { describe, expect, it } from 'vitest';
import { LockedError } from '../../src/fs/lock.js';
import { RunState, readStateOf, type StateRequest } from '../../src/engine/state.js';
import { registerStateStore, stateStoreOf, storeDeps } from '../../src/engine/stores/kinds.js';
import { Serialised } from '../../src/engine/state-log.js';
import type { LockView, StateStore, StateWrites, StoredState, StoreLock } from '../../src/engine/stores/store.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST } from '../helpers/host.js';
import { tempDir } from '../helpers/tmp.js';

const REQUEST: StateRequest = { side: 'buyer', metrics: ['displays'], breakdowns: ['DAILY'], filters: {}, params: {}, format: 'csv', output: '/data/{since}.csv', chunk: 'day' };
const DAY = 86_400;
const D1 = Date.parse('2026-11-01T00:00:00+01:00') / 1000;
const day = (n: number) => ({ since: D1 + n * DAY, until: D1 + (n + 1) * DAY - 1 });

/** The documents and locks of every mem:// store, by name. */
const memory = new Map<string, { text?: string; holder?: number }>();

class MemoryStore implements StateStore {
  constructor(readonly name: string) {}

  private get slot() {
    let slot = memory.get(this.name);
    if (!slot) memory.set(this.name, (slot = {}));
    return slot;
  }

  async read(): Promise<StoredState | undefined> {
    return this.slot.text === undefined ? undefined : { text: this.slot.text };
  }

  async lock(): Promise<StoreLock> {
    if (this.slot.holder !== undefined) throw new LockedError(this.name, { pid: this.slot.holder, host: 'memory', nonce: '', since: '' });
    this.slot.holder = 4242;
    return { release: async () => { this.slot.holder = undefined; } };
  }

  writes(document: () => { windows: readonly unknown[] }): StateWrites {
    const writes = new Serialised(async () => { this.slot.text = JSON.stringify(document()); });
    return { write: () => writes.ask(), close: () => writes.settled() };
  }

  async inspectLock(): Promise<LockView | undefined> {
    return undefined;
  }

  async removeLock(): Promise<boolean> {
    return false;
  }
}

describe('a state store registered by a test alone', () => {
  it('RunState records windows in it, another run is refused its lock, and the next run reads what the first wrote', async () => {
    const unregister = registerStateStore({ matches: (target) => target.startsWith('mem://'), open: (target) => new MemoryStore(target) });
    try {
      const deps = storeDeps({ cwd: '/', host: HOST, env: {}, now: () => Date.now(), signal: new AbortController().signal });
      const now = () => Date.parse('2026-11-05T06:00:00Z');
      const first = await RunState.open(stateStoreOf('mem://nightly', deps), REQUEST, { now });
      await expect(RunState.open(stateStoreOf('mem://nightly', deps), REQUEST, { now })).rejects.toThrow(LockedError);
      await first.pending([day(0), day(1)]);
      await first.submitted(day(0), 'r0');
      // the file the window was written to (a done window whose file is gone is fetched again)
      const file = join(tempDir(), '2026-11-01.csv');
      writeFileSync(file, 'date,displays\n');
      await first.done(day(0), { rows: 7, bytes: 100, sha256: 'a'.repeat(64), file });
      await first.close();

      const doc = await readStateOf(stateStoreOf('mem://nightly', deps));
      expect(doc?.windows.map((w) => [w.since.slice(0, 10), w.status, w.reportId])).toEqual([['2026-11-01', 'done', 'r0'], ['2026-11-02', 'pending', null]]);
      const second = await RunState.open(stateStoreOf('mem://nightly', deps), REQUEST, { now });
      expect(second.plan([day(0), day(1)]).map((step) => [step.action, 'reason' in step ? step.reason : undefined])).toEqual([['skip', undefined], ['submit', 'new']]);
      await second.close();
      // another name is another state; a path is still a file
      expect(await readStateOf(stateStoreOf('mem://other', deps))).toBeUndefined();
      expect(stateStoreOf('/tmp/x.state.json', deps).constructor.name).toBe('FileStore');
    } finally {
      unregister();
    }
    expect(stateStoreOf('mem://nightly', storeDeps({ cwd: '/', host: HOST, env: {}, now: () => Date.now(), signal: new AbortController().signal })).constructor.name).toBe('FileStore');
  });
});
