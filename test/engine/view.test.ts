// The live view's counts (src/engine/view.ts): what a run with windows done already shows.

import { describe, expect, it } from 'vitest';
import { Tally } from '../../src/engine/view.js';

const day = (n: number) => ({ since: n * 86_400, until: n * 86_400 + 86_399 });

describe('the windows view counts', () => {
  it('windows skipped as done already count as done, never as running, and the counts add up', () => {
    const tally = new Tally(5);
    const seen: number[][] = [];
    const look = () => seen.push([tally.done, tally.running, tally.waiting]);
    for (let i = 0; i < 4; i++) { tally.skip(); look(); }
    tally.pool({ type: 'start', window: day(4) }); look();
    tally.pool({ type: 'done', window: day(4) }); look();
    for (const [done, running, waiting] of seen) {
      expect(Math.min(done as number, running as number, waiting as number)).toBeGreaterThanOrEqual(0);
      expect((done as number) + (running as number) + (waiting as number)).toBe(5);
    }
    expect(seen.at(-1)).toEqual([5, 0, 0]);
  });

  it('a split window becomes two waiting pieces, a throttled one waits again', () => {
    const tally = new Tally(2);
    tally.pool({ type: 'start', window: day(0) });
    tally.pool({ type: 'split', window: day(0), origin: day(0), into: [day(0), day(0)], error: new Error('too much data') });
    expect([tally.done, tally.running, tally.waiting, tally.total]).toEqual([0, 0, 3, 3]);
    tally.pool({ type: 'start', window: day(1) });
    tally.pool({ type: 'throttled', window: day(1), limit: 1, waitMs: 1000 });
    expect([tally.running, tally.waiting]).toEqual([0, 3]);
  });
});
