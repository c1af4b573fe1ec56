// After the API said "too many reports", the pool must come back up slowly: one more task at once
// only after as many completions as the current limit, counting tasks started since the last
// change (AIMD's additive increase). Grown faster, a chunked run floods the server that just
// refused it; never grown, a run stays slow after one 429.
//
// Fake tasks that finish when the test says so; what is observed is how many run at once.

import { describe, expect, it } from 'vitest';
import { WindowFailure, runWindows, type PoolEvent } from '../../src/engine/pool.js';
import type { Window } from '../../src/report/windows.js';

const DAY = 86_400;
const windows: Window[] = Array.from({ length: 30 }, (_, i) => ({ since: i * DAY, until: (i + 1) * DAY - 1 }));

/** Lets the pool settle a task and start what fits. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Task {
  index: number;
  resolve(): void;
  reject(error: Error): void;
}

function startPool(concurrency: number) {
  const running: Task[] = [];
  const events: PoolEvent[] = [];
  let started = 0;
  const done = runWindows<number>(windows, (window) => new Promise<number>((resolve, reject) => {
    const task: Task = {
      index: started++,
      resolve: () => { running.splice(running.indexOf(task), 1); resolve(window.since); },
      reject: (error) => { running.splice(running.indexOf(task), 1); reject(error); },
    };
    running.push(task);
  }), {
    concurrency,
    delivery: 'per-window',
    failFast: false,
    signal: new AbortController().signal,
    now: () => 0,
    sleep: async () => undefined,
    random: () => 0.5,
    deliver: () => undefined,
    onEvent: (event) => events.push(event),
  });
  return { running, events, done, limits: () => events.flatMap((e) => (e.type === 'limit' ? [e.limit] : [])) };
}

describe('after a throttle, the limit grows by one per `limit` completions', () => {
  it('runs 2, 2, then 3 at once, then 4, as completions of tasks started since each change come in', async () => {
    const pool = startPool(4);
    await settle();
    expect(pool.running).toHaveLength(4);

    // the first task is told "too many reports" (Retry-After 0): 4 running -> limit 2
    pool.running[0]?.reject(new WindowFailure({ kind: 'throttled', retryAfterMs: 0 }, 'HTTP 429: too many reports'));
    await settle();
    expect(pool.limits()).toEqual([2]);

    // complete the oldest task, one at a time; note how many run at once after each completion
    const trace: number[] = [];
    while (trace.length < 14) {
      pool.running[0]?.resolve();
      await settle();
      trace.push(pool.running.length);
    }
    // The three tasks started before the halving end first and do not count towards growth; a
    // new task starts only when fewer than 2 run. Then 2 completions at limit 2 -> 3 at once; one
    // task started at 2 ends (not counted), then 3 completions at limit 3 -> 4, the most asked for.
    expect(trace).toEqual([
      2, 2, 2, // the old tasks end; 2 run at once
      2, 3, // 1st and 2nd completion of tasks started at limit 2: grows to 3
      3, 3, 3, 4, // a task started at 2, then 3 completions of tasks started at 3: grows to 4
      4, 4, 4, 4, 4, // at the most asked for, stays there
    ]);
    expect(pool.limits()).toEqual([2, 3, 4]);

    while (pool.running.length > 0) {
      pool.running[0]?.resolve();
      await settle();
    }
    const outcome = await pool.done;
    expect(outcome.failures).toEqual([]);
    expect(outcome.delivered).toBe(windows.length);
  });
});
