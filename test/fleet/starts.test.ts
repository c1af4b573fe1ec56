// Jobs start a few at a time (fleet/budget.ts, Starts): a turn ends when the job first asks the
// budget for a slot, when it ends, or when its patience runs out.

import { describe, expect, it } from 'vitest';
import { Starts } from '../../src/fleet/budget.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('Starts', () => {
  it('gives `size` turns at once; the next job starts when one ends, in order; ending twice frees one turn', async () => {
    const starts = new Starts(2, 60_000);
    const order: number[] = [];
    const ends: (() => void)[] = [];
    const taking = [1, 2, 3, 4].map((n) => starts.turn().then((end) => { order.push(n); ends[n] = end; }));
    await tick();
    expect(order).toEqual([1, 2]);
    ends[2]?.();
    ends[2]?.();
    await tick();
    expect(order).toEqual([1, 2, 3]);
    ends[1]?.();
    await Promise.all(taking);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('a job that takes longer than its patience (a lock it waits for) lets the next one start', async () => {
    const starts = new Starts(1, 30);
    await starts.turn();
    let second = false;
    const taking = starts.turn().then(() => { second = true; });
    await tick();
    expect(second).toBe(false);
    await taking;
    expect(second).toBe(true);
  });
});
