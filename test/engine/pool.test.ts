import { describe, expect, it } from 'vitest';
import { ApiRejectedError, NetworkError, ReportError, ReportFailedError, ThrottledError, UsageError } from '../../src/errors.js';
import { parseTime } from '../../src/report/time.js';
import {
  WindowFailure, classifyFailure, describeFailure, interruptedHint, isLastPiece, parseConcurrency, runWindows,
  type PoolEvent, type PoolOptions, type TaskContext,
} from '../../src/engine/pool.js';
import { describeWindow, parseChunk, planWindows, splitWindow, type Window } from '../../src/report/windows.js';
import { FakeClock } from '../helpers/clock.js';

const NOW = Date.parse('2026-11-21T11:00:00Z');
const days = (from: string, to: string, chunk = 'day') =>
  planWindows(parseTime(from, 'since', NOW), parseTime(to, 'until', NOW), parseChunk(chunk));
const label = (window: Window) => describeWindow(window);

interface Harness {
  clock: FakeClock;
  controller: AbortController;
  events: PoolEvent[];
  delivered: { window: Window; origin: Window; at: number }[];
  starts: { window: Window; at: number; running: number }[];
  maxRunning: number;
  signals: AbortSignal[];
}

/**
 * Runs the pool over `windows` with a fake task: `behave` decides, after the task's simulated
 * submit (10 ms), what the window does; by default it takes `duration` ms and succeeds.
 */
async function simulate(
  windows: Window[],
  options: Partial<PoolOptions<string>> & { duration?: (window: Window, index: number) => number },
  behave?: (window: Window, context: TaskContext, h: Harness) => void | Promise<void>,
) {
  const h: Harness = { clock: new FakeClock(), controller: new AbortController(), events: [], delivered: [], starts: [], maxRunning: 0, signals: [] };
  let running = 0;
  const index = new Map(windows.map((window, i) => [window.since, i]));
  const outcome = await runWindows<string>(windows, async (window, context) => {
    running++;
    h.maxRunning = Math.max(h.maxRunning, running);
    h.starts.push({ window, at: h.clock.now(), running });
    h.signals.push(context.signal);
    try {
      await h.clock.sleep(10, context.signal);
      await behave?.(window, context, h);
      await h.clock.sleep(options.duration?.(window, index.get(window.since) ?? 0) ?? 1000, context.signal);
      return label(window);
    } finally {
      running--;
    }
  }, {
    concurrency: 4,
    delivery: 'per-window',
    failFast: false,
    signal: h.controller.signal,
    now: h.clock.now,
    sleep: h.clock.sleep,
    random: () => 0.5,
    deliver: (window, result, origin) => {
      expect(result).toBe(label(window));
      h.delivered.push({ window, origin, at: h.clock.now() });
    },
    onEvent: (event) => h.events.push(event),
    ...options,
  });
  return { outcome, ...h };
}

/** a duration that varies from window to window, repeatably */
const varied = (_window: Window, i: number) => 500 + ((i * 7919) % 13) * 400;

describe('concurrency', () => {
  for (const n of [1, 3, 5, 16]) {
    it(`never runs more than ${n} windows at once, and does run ${n} when there is work`, async () => {
      const windows = days('2026-10-01', '2026-11-09');
      const { outcome, maxRunning, delivered } = await simulate(windows, { concurrency: n, duration: varied });
      expect(maxRunning).toBe(n);
      expect(outcome.peak).toBe(n);
      expect(delivered).toHaveLength(40);
      expect(outcome.failures).toEqual([]);
    });
  }

  it('refuses --concurrency outside 1..16 with a usage error', () => {
    expect(parseConcurrency('8')).toBe(8);
    for (const bad of ['0', '17', '2.5', 'four', '']) expect(() => parseConcurrency(bad)).toThrow(UsageError);
  });
});

describe('delivery', () => {
  const windows = days('2026-11-01', '2026-11-12');
  /** the first windows take longest: they finish last */
  const decreasing = (_window: Window, i: number) => 10_000 - i * 500;

  it('per-window outputs get each window as soon as it is done', async () => {
    const { delivered } = await simulate(windows, { delivery: 'per-window', duration: decreasing });
    expect(delivered.map((d) => label(d.window))).not.toEqual(windows.map(label));
    expect(new Set(delivered.map((d) => d.window.since)).size).toBe(12);
  });

  it('a merged output gets the windows in chronological order, however they finish', async () => {
    const { delivered } = await simulate(windows, { delivery: 'merged', duration: decreasing });
    expect(delivered.map((d) => label(d.window))).toEqual(windows.map(label));
  });

  it('holds at most maxAhead - 1 finished windows while an early one is slow', async () => {
    const month = days('2026-11-01', '2026-11-30');
    const { delivered, starts } = await simulate(month, {
      delivery: 'merged', concurrency: 4, maxAhead: 6, duration: (_w, i) => (i === 0 ? 100_000 : 1000),
    });
    // before the first window is delivered, only 6 windows were started: 1 slow, 5 done and waiting
    const firstDelivery = delivered[0]?.at ?? 0;
    expect(starts.filter((s) => s.at < firstDelivery)).toHaveLength(6);
    expect(delivered.map((d) => label(d.window))).toEqual(month.map(label));
  });

  it('a failing output stops the run and its error comes out', async () => {
    const windows = days('2026-11-01', '2026-11-20');
    const h = { clock: new FakeClock() };
    const run = runWindows(windows, async (window, context) => {
      await h.clock.sleep(1000, context.signal);
      return window;
    }, {
      concurrency: 4, delivery: 'merged', failFast: true, signal: new AbortController().signal,
      now: h.clock.now, sleep: h.clock.sleep, random: Math.random,
      deliver: (window) => { if (window.since === windows[5]?.since) throw new Error('ENOSPC: no space left on device'); },
    });
    await expect(run).rejects.toThrow(/ENOSPC/);
  });

  it('a bug in an injected function stops the run with its error instead of hanging', async () => {
    const run = simulate(days('2026-11-01', '2026-11-10', 'week'), { split: () => { throw new Error('split broke'); } }, () => {
      throw new ReportFailedError('report r ended in status "failed"', 'r');
    });
    await expect(run).rejects.toThrow('split broke');
  });
});

describe('slowing down when the API says too many reports are running', () => {
  /** a server that lets `capacity(now)` reports run at once and answers the others 429 */
  function server(capacity: (now: number) => number, retryAfterMs?: number) {
    let running = 0;
    let refused = 0;
    let most = 0;
    const behave = async (_window: Window, context: TaskContext, h: Harness) => {
      if (running >= capacity(h.clock.now())) {
        refused++;
        throw new WindowFailure({ kind: 'throttled', ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }, 'HTTP 429: too many reports running');
      }
      running++;
      most = Math.max(most, running);
      context.signal.addEventListener('abort', () => running--, { once: true });
      await h.clock.sleep(990, context.signal);
      running--;
    };
    return { behave, stats: () => ({ refused, most }) };
  }

  it('halves the concurrency once per burst, waits the Retry-After, then raises it one step at a time', async () => {
    // room for 2 reports for the first 5 seconds, then for everything
    const api = server((now) => (now < 5000 ? 2 : 100), 5000);
    const windows = days('2026-10-01', '2026-11-09');
    const { outcome, events, starts, delivered } = await simulate(windows, { concurrency: 8, duration: () => 0 }, api.behave);
    expect(outcome.failures).toEqual([]);
    expect(delivered).toHaveLength(40);
    // 6 of the first 8 were refused, all in one burst: one halving, 8 -> 4, then +1 steps back to 8
    expect(api.stats().refused).toBe(6);
    expect(events.filter((e) => e.type === 'limit').map((e) => (e as { limit: number }).limit)).toEqual([4, 5, 6, 7, 8]);
    // nothing started while the Retry-After ran
    const throttledAt = 10;
    expect(starts.filter((s) => s.at > throttledAt && s.at < throttledAt + 5000)).toEqual([]);
    expect(starts.some((s) => s.at === throttledAt + 5000)).toBe(true);
    // after the halving, never more than 4 at once until the limit was raised
    const firstRaise = events.findIndex((e) => e.type === 'limit' && e.limit === 5);
    expect(firstRaise).toBeGreaterThan(0);
    expect(starts.filter((s) => s.at >= throttledAt + 5000).slice(0, 4).every((s) => s.running <= 4)).toBe(true);
  });

  it('settles near what the server allows, without failing a window', async () => {
    const api = server(() => 3, 1000);
    const windows = days('2026-09-01', '2026-11-09');
    const { outcome, delivered } = await simulate(windows, { concurrency: 16, duration: () => 0, delivery: 'merged' }, api.behave);
    expect(outcome.failures).toEqual([]);
    expect(delivered.map((d) => label(d.window))).toEqual(windows.map(label));
    expect(api.stats().most).toBe(3);
    // AIMD probes above 3 now and then, but most submits get through
    expect(api.stats().refused).toBeLessThan(windows.length / 2);
  });

  it('without Retry-After, waits a jittered backoff', async () => {
    const api = server((now) => (now < 100 ? 1 : 100));
    const { starts, events } = await simulate(days('2026-11-01', '2026-11-06'), { concurrency: 4, duration: () => 0 }, api.behave);
    // three refusals in one burst: one wait, full jitter of the first 500 ms step (random() = 0.5)
    expect(events.filter((e) => e.type === 'throttled').map((e) => (e as { waitMs: number }).waitMs)).toEqual([250, 250, 250]);
    expect(starts[4]?.at).toBe(10 + 250);
  });

  it('a 429 the HTTP client retried by itself (throttled()) slows the pool without failing the window', async () => {
    const { outcome, events, delivered, starts } = await simulate(days('2026-11-01', '2026-11-10'), { concurrency: 4, duration: () => 1000 }, (window, context) => {
      if (label(window) === '2026-11-02') context.throttled(3000);
    });
    expect(outcome.failures).toEqual([]);
    expect(delivered).toHaveLength(10);
    expect(starts).toHaveLength(10); // no window ran twice
    expect(events.find((e) => e.type === 'limit')).toEqual({ type: 'limit', limit: 2 });
    expect(starts.filter((s) => s.at > 10 && s.at < 3010)).toEqual([]);
  });

  it('fails a window the API keeps refusing, after maxThrottles tries', async () => {
    const { outcome } = await simulate(days('2026-11-01', '2026-11-01'), { maxThrottles: 3 }, () => {
      throw new WindowFailure({ kind: 'throttled', retryAfterMs: 1000 }, 'too many reports running');
    });
    expect(outcome.failures).toHaveLength(1);
    expect(String(outcome.failures[0]?.error)).toContain('too many reports');
  });
});

describe('bisection', () => {
  const sick = parseTime('2026-03-29', 'since', NOW);
  /** a report covering the spring DST day fails, as a platform's "too much data" would */
  const failOn29 = (window: Window, context: TaskContext) => {
    context.reportId(`r-${label(window)}`);
    if (window.since <= sick && window.until >= sick) {
      throw new ReportFailedError(`report r-${label(window)} ended in status "failed": too much data`, `r-${label(window)}`);
    }
  };
  const split = (window: Window) => splitWindow(window, ['DAILY', 'COUNTRY']);

  it('splits a failing window down to one day, then fails naming that day, and keeps the rest', async () => {
    const weeks = days('2026-03-23', '2026-04-05', 'week');
    // the first piece of the failing week is slow: it finishes after its week has failed
    const duration = (window: Window) => (label(window) === '2026-03-23..2026-03-26' ? 50_000 : 1000);
    const { outcome, events, delivered } = await simulate(weeks, { split, concurrency: 3, duration }, failOn29);
    expect(events.filter((e) => e.type === 'split').map((e) => label((e as { window: Window }).window))).toEqual([
      '2026-03-23..2026-03-29', '2026-03-27..2026-03-29',
    ]);
    expect(outcome.failures).toHaveLength(1);
    const failure = outcome.failures[0]!;
    expect(label(failure.window)).toBe('2026-03-29');
    expect(failure.reportId).toBe('r-2026-03-29');
    expect(describeFailure(failure)).toBe('window 2026-03-29 (split down from 2026-03-23..2026-03-29), report r-2026-03-29: ended in status "failed": too much data');
    // the other week is written; of the failed week, nothing after the failure (its file cannot be whole)
    expect(delivered.map((d) => label(d.window))).toContain('2026-03-30..2026-04-05');
    const failedAt = events.findIndex((e) => e.type === 'failed');
    expect((events[failedAt] as { origin: Window }).origin).toEqual(weeks[0]);
    const done = (list: PoolEvent[]) => list.flatMap((e) => (e.type === 'done' ? [e.window] : []));
    const doneBefore = done(events.slice(0, failedAt)).map(label);
    const doneAfter = done(events.slice(failedAt)).filter((window) => window.since < (weeks[1] as Window).since);
    expect(doneAfter.map(label)).toContain('2026-03-23..2026-03-26'); // finished after the failure...
    for (const d of delivered.filter((d) => d.origin === weeks[0])) expect(doneBefore).toContain(label(d.window)); // ...and was not delivered
  });

  it('per window, the pieces of a split window arrive in chronological order, and the last one closes it', async () => {
    const week = days('2026-11-02', '2026-11-08', 'week');
    const { delivered, events } = await simulate(week, {
      split, concurrency: 4,
      // the later pieces are quicker: they finish first
      duration: (window) => 100_000 - (window.since - (week[0] as Window).since) / 10,
    }, (window) => {
      if (window.until - window.since > 2.5 * 86400) throw new ReportFailedError('report r ended in status "failed"', 'r');
    });
    expect(delivered.map((d) => label(d.window))).toEqual(['2026-11-02..2026-11-03', '2026-11-04..2026-11-05', '2026-11-06..2026-11-07', '2026-11-08']);
    expect(events.filter((e) => e.type === 'done').map((e) => label(e.window))).not.toEqual(delivered.map((d) => label(d.window)));
    expect(delivered.map((d) => isLastPiece(d.window, d.origin))).toEqual([false, false, false, true]);
  });

  it('halves a window that is too large until each piece fits, delivered in order', async () => {
    const month = days('2026-10-01', '2026-10-31', 'month');
    const { outcome, delivered } = await simulate(month, { split, delivery: 'merged', concurrency: 4 }, (window) => {
      // 4 days fit, even with the 25-hour day
      if (window.until - window.since > 4.5 * 86400) throw new ApiRejectedError('POST /buyer-reporting: HTTP 413: report too large', 413);
    });
    expect(outcome.failures).toEqual([]);
    expect(delivered.map((d) => label(d.window))).toEqual([
      '2026-10-01..2026-10-04', '2026-10-05..2026-10-08', '2026-10-09..2026-10-12', '2026-10-13..2026-10-16',
      '2026-10-17..2026-10-20', '2026-10-21..2026-10-24', '2026-10-25..2026-10-28', '2026-10-29..2026-10-31',
    ]);
  });

  it('with a merged output the first final failure stops the run and aborts what is in flight', async () => {
    const weeks = days('2026-03-23', '2026-04-19', 'week');
    const { outcome, delivered, signals } = await simulate(weeks, { split, delivery: 'merged', failFast: true, concurrency: 3 }, failOn29);
    expect(outcome.failures.map((f) => label(f.window))).toEqual(['2026-03-29']);
    expect(outcome.aborted).toBe(false);
    expect(delivered.every((d) => d.window.until < sick)).toBe(true);
    expect(signals.at(-1)?.aborted).toBe(true);
  });

  it('--no-split: the whole window fails at once', async () => {
    const weeks = days('2026-03-23', '2026-04-05', 'week');
    const { outcome, events } = await simulate(weeks, {}, failOn29);
    expect(events.some((e) => e.type === 'split')).toBe(false);
    expect(outcome.failures.map((f) => label(f.window))).toEqual(['2026-03-23..2026-03-29']);
  });
});

describe('Ctrl-C', () => {
  it('starts nothing more, aborts the tasks, and lists the reports in progress with their IDs', async () => {
    const windows = days('2026-11-01', '2026-11-10');
    let startedAfterAbort = 0;
    const { outcome, starts, delivered, signals } = await simulate(windows, { concurrency: 3, duration: (_w, i) => (i === 0 ? 500 : 60_000) }, (window, context, h) => {
      if (h.controller.signal.aborted) startedAfterAbort++;
      context.reportId(`r-${label(window)}`);
      if (label(window) === '2026-11-02') void h.clock.sleep(2000).then(() => h.controller.abort('SIGINT'));
    });
    expect(outcome.aborted).toBe(true);
    expect(startedAfterAbort).toBe(0);
    expect(starts).toHaveLength(4); // three, then one more when the first finished
    expect(delivered.map((d) => label(d.window))).toEqual(['2026-11-01']);
    expect(outcome.interrupted.map((entry) => entry.reportId)).toEqual(['r-2026-11-02', 'r-2026-11-03', 'r-2026-11-04']);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
    expect(interruptedHint(outcome)).toBe('reports still in progress: r-2026-11-02 (2026-11-02), r-2026-11-03 (2026-11-03), r-2026-11-04 (2026-11-04)');
  });

  it('an already aborted signal starts nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    let started = 0;
    const outcome = await runWindows(days('2026-11-01', '2026-11-03'), async () => { started++; }, {
      concurrency: 2, delivery: 'per-window', failFast: false, signal: controller.signal,
      now: () => 0, sleep: async () => undefined, random: Math.random, deliver: () => undefined,
    });
    expect(started).toBe(0);
    expect(outcome.aborted).toBe(true);
  });
});

describe('what a task error means', () => {
  it('classifies the CLI\'s own errors', () => {
    expect(classifyFailure(new ThrottledError('POST /buyer-reporting: HTTP 429, after 5 attempts'))).toEqual({ kind: 'throttled' });
    expect(classifyFailure(new ApiRejectedError('POST /buyer-reporting: HTTP 400: too many reports running (TOO_MANY_REPORTS)', 400, 'TOO_MANY_REPORTS'))).toEqual({ kind: 'throttled' });
    expect(classifyFailure(Object.assign(new ApiRejectedError('HTTP 429', 429), { retryAfterMs: 7000 }))).toEqual({ kind: 'throttled', retryAfterMs: 7000 });
    expect(classifyFailure(new ReportFailedError('report r1 ended in status "error"', 'r1'))).toEqual({ kind: 'split' });
    expect(classifyFailure(new ApiRejectedError('HTTP 413: request too large', 413))).toEqual({ kind: 'split' });
    expect(classifyFailure(new ReportError('report r1 was not ready within 30m (--max-wait)', 'r1'))).toEqual({ kind: 'fatal' });
    expect(classifyFailure(new NetworkError('POST /status-reporting: ECONNREFUSED'))).toEqual({ kind: 'fatal' });
    expect(classifyFailure('a string')).toEqual({ kind: 'fatal' });
    // as the sandbox's --max-running and --fail-over-days word them (sandbox branch), through the client
    expect(classifyFailure(new ThrottledError('POST /buyer-reporting: HTTP 429: too many reports in progress: 8 of at most 8; retry in 2 s (TOO_MANY_REPORTS), after 5 attempts'))).toEqual({ kind: 'throttled' });
    expect(classifyFailure(new ReportFailedError('report ab12 ended in status "failed": too much data: the report covers 90 days, more than the limit of 31; request a shorter period', 'ab12'))).toEqual({ kind: 'split' });
  });
});
