// FanOut: one body read once by several outputs; what one output's failure does to the others.

import { describe, expect, it } from 'vitest';
import type { Committed, Destination, WindowOutput } from '../../src/destinations/destination.js';
import { FanOut, tee } from '../../src/destinations/fanout.js';

const window = { since: 1, until: 2 };

/** An output that keeps what it read; `failAt`: throws after reading that many chunks. */
function fake(name: string, log: string[], options: { failAt?: number; failCommit?: boolean } = {}): Destination & { read: string[] } {
  const read: string[] = [];
  return {
    read,
    async begin(): Promise<WindowOutput> {
      return {
        take: async (body) => {
          for await (const chunk of body) {
            if (options.failAt !== undefined && read.length === options.failAt) throw new Error(`${name} failed`);
            read.push(Buffer.from(chunk).toString());
          }
          return { rows: read.length, bytes: 0 };
        },
        restartable: true,
        abort: async () => { log.push(`abort ${name}`); },
        commit: async () => {
          if (options.failCommit) throw new Error(`${name} commit failed`);
          log.push(`commit ${name}`);
          return [{ window, covered: [{ window, rows: read.length }], pieces: [window], holdsOnly: true, file: name, rows: read.length, outcome: 'written', reportIds: ['r'] } satisfies Committed];
        },
      };
    },
    finish: async () => [],
    abort: async () => { log.push(`abort all ${name}`); },
  };
}

async function* chunks(n: number): AsyncIterable<Uint8Array> {
  for (let i = 0; i < n; i++) yield Buffer.from(`c${i}`);
}

describe('FanOut', () => {
  it('every output reads the whole body; one record, the others in `others`', async () => {
    const log: string[] = [];
    const [a, b, c] = [fake('a', log), fake('b', log), fake('c', log)];
    const output = await new FanOut(a, b, c).begin(window, window, 'r');
    await output.take(chunks(50));
    expect([a.read.length, b.read.length, c.read.length]).toEqual([50, 50, 50]);
    const committed = await output.commit();
    expect(committed).toHaveLength(1);
    expect([committed[0]?.file, ...committed[0]?.others?.map((o) => o.file) ?? []]).toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['commit a', 'commit b', 'commit c']);
  });

  it('one output failing mid-body: the take fails with its error, none is committed', async () => {
    const log: string[] = [];
    const output = await new FanOut(fake('a', log), fake('b', log, { failAt: 10 }), fake('c', log)).begin(window, window, 'r');
    await expect(output.take(chunks(50))).rejects.toThrow('b failed');
    await output.abort();
    expect(log.filter((line) => line.startsWith('commit'))).toEqual([]);
    expect(log.sort()).toEqual(['abort a', 'abort b', 'abort c']);
  });

  it('a commit that fails: those before it stay, those after it are aborted, the error is the run\'s', async () => {
    const log: string[] = [];
    const output = await new FanOut(fake('a', log), fake('b', log, { failCommit: true }), fake('c', log)).begin(window, window, 'r');
    await output.take(chunks(3));
    await expect(output.commit()).rejects.toThrow('b commit failed');
    expect(log).toEqual(['commit a', 'abort c']);
  });

  it('tee: no reader more than two chunks ahead of the slowest', async () => {
    let pulled = 0;
    async function* counted(): AsyncIterable<number> {
      for (let i = 0; i < 100; i++) { pulled++; yield i; }
    }
    const [fast, slow] = tee(counted(), 2).map((reader) => reader[Symbol.asyncIterator]()) as [AsyncIterator<number>, AsyncIterator<number>];
    const ahead = Array.from({ length: 5 }, () => fast.next());
    await new Promise((resolve) => setTimeout(resolve, 20));
    // the fast reader waits for the slow one two chunks ahead
    expect(pulled).toBe(2);
    for (let i = 0; i < 3; i++) expect((await slow.next()).value).toBe(i);
    expect((await Promise.all(ahead)).map((result) => result.value)).toEqual([0, 1, 2, 3, 4]);
    expect(pulled).toBe(5);
  });
});
