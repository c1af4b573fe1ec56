// Jobs start a few at a time (fleet/budget.ts, Starts): a turn ends when the job gets a slot of the
// budget, finds its profile busy, or ends; or when its patience runs out before it asked for one.

import { describe, expect, it } from 'vitest';
import { Budget, Starts, type Turn } from '../../src/fleet/budget.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
const never = new AbortController().signal;

describe('Starts', () => {
  it('gives `size` turns at once; the next job starts when one ends, in order; ending twice frees one turn', async () => {
    const starts = new Starts(2, 60_000);
    const order: number[] = [];
    const turns: Turn[] = [];
    const taking = [1, 2, 3, 4].map((n) => starts.turn().then((turn) => { order.push(n); turns[n] = turn; }));
    await tick();
    expect(order).toEqual([1, 2]);
    turns[2]?.end();
    turns[2]?.end();
    await tick();
    expect(order).toEqual([1, 2, 3]);
    turns[1]?.end();
    await Promise.all(taking);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('a job that has not asked for a slot within its patience (a lock it waits for) lets the next one start', async () => {
    const starts = new Starts(1, 30);
    await starts.turn();
    let second = false;
    const taking = starts.turn().then(() => { second = true; });
    await tick();
    expect(second).toBe(false);
    await taking;
    expect(second).toBe(true);
  });

  it('a job waiting for the budget keeps its turn past the patience: prepared jobs waiting stay few', async () => {
    const starts = new Starts(1, 20);
    const turn = await starts.turn();
    turn.reached();
    let second = false;
    void starts.turn().then(() => { second = true; });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(second).toBe(false);
    turn.end();
    await tick();
    expect(second).toBe(true);
  });
});

describe('Budget.gateFor: busy', () => {
  it('is told when the profile has no slot free, not when only the whole budget is full', async () => {
    const budget = new Budget(2, 1);
    const busy: string[] = [];
    const a = await budget.gateFor('acme', () => busy.push('acme')).acquire(never);
    await budget.gateFor('globex', () => busy.push('globex')).acquire(never);
    expect(busy).toEqual([]);
    // acme's one slot is taken: told at once; initech waits for the budget only: not told
    const waitingAcme = budget.gateFor('acme', () => busy.push('acme')).acquire(never);
    const waitingInitech = budget.gateFor('initech', () => busy.push('initech')).acquire(never);
    expect(busy).toEqual(['acme']);
    a();
    await waitingInitech;
    expect(budget.peak).toBe(2);
    void waitingAcme;
  });
});

describe('Budget.gateFor: readying', () => {
  it('tells the first waiting job, once, that a slot is about to be freed; a job given a slot at once is never told', async () => {
    const budget = new Budget(1, 5);
    const told: string[] = [];
    const first = budget.gateFor('acme');
    const release = await first.acquire(never, () => told.push('first'));
    const second = budget.gateFor('globex').acquire(never, () => told.push('second'));
    const third = budget.gateFor('initech').acquire(never, () => told.push('third'));
    await tick();
    expect(told).toEqual([]);
    // the holder's report is ready: the next in line may record its intent while the download runs
    expect(first.readying?.()).toBe(true);
    expect(told).toEqual(['second']);
    expect(first.readying?.()).toBe(true);
    expect(told).toEqual(['second', 'third']);
    // no one left to tell: said so (the holder tells again when its report is ready)
    expect(first.readying?.()).toBe(false);
    expect(told).toEqual(['second', 'third']);
    release();
    const releaseSecond = await second;
    releaseSecond();
    await third;
    expect(told).toEqual(['second', 'third']);
  });

  it('a waiting job that gave up (its signal aborted) is not told', async () => {
    const budget = new Budget(1, 5);
    const gate = budget.gateFor('acme');
    await gate.acquire(never);
    const stop = new AbortController();
    const told: string[] = [];
    const gaveUp = gate.acquire(stop.signal, () => told.push('gave up')).catch((error: Error) => error.name);
    const waiting = gate.acquire(never, () => told.push('waiting'));
    await tick();
    stop.abort();
    expect(await gaveUp).toBe('InterruptedError');
    gate.readying?.();
    expect(told).toEqual(['waiting']);
    void waiting;
  });
});
