// Waiting for a report with the expected readiness (issue 32, item 1): polls aimed at the time
// reports of the kind became ready, learned from the waits before, on a fake clock.

import { describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../src/api/client.js';
import { Readiness, aimMs, quantileMs, readinessCells, waitUntilReady, type Cell, type PollOptions } from '../../src/report/poll.js';

/** A report that becomes ready `readyAtMs` after the wait starts, on a clock moved by the sleeps. */
function fakeReport(readyAtMs: number) {
  let clock = 0;
  const asked: number[] = [];
  const client = {
    status: async (id: string) => {
      asked.push(clock);
      return { status: clock >= readyAtMs ? 'ready' : 'progress', message: null, report_id: id };
    },
  } as unknown as ReportingClient;
  const options = (extra: Partial<PollOptions> = {}): PollOptions => ({
    maxWaitMs: 600_000, signal: new AbortController().signal, now: () => clock, random: () => 0.5,
    sleep: async (ms) => { clock += ms; },
    ...extra,
  });
  return { client, options, asked, now: () => clock, advance: (ms: number) => { clock += ms; } };
}

const only = (cells: readonly Cell[]) => cells.map(({ fromMs, byMs, mass }) => [fromMs, byMs, Math.round(mass * 1000) / 1000]);

describe('Readiness: when reports of a kind become ready', () => {
  it('knows nothing before a report is seen; then Turnbull\'s cells of the intervals seen, per kind', () => {
    const readiness = new Readiness();
    const kind = readiness.of('buyer DAILY 86399');
    expect(kind.cells()).toEqual([]);
    kind.observe(1750, 3750);
    expect(only(kind.cells())).toEqual([[1750, 3750, 1]]);
    kind.observe(2850, 3050);
    kind.observe(2950, 3050);
    // every interval holds (2950, 3050]: all the reports' weight is there
    expect(only(kind.cells())).toEqual([[2950, 3050, 1]]);
    expect(readiness.of('seller DAILY 86399').cells()).toEqual([]);
    expect(only(readiness.of('buyer DAILY 86399').cells())).toEqual([[2950, 3050, 1]]);
  });

  it('spreads the weight where the reports\' times vary, and follows the last 32 only', () => {
    expect(only(readinessCells([[900, 1100], [4900, 5100]]))).toEqual([[900, 1100, 0.5], [4900, 5100, 0.5]]);
    // a wide interval holding two narrow ones adds to them, not to a span of its own
    expect(only(readinessCells([[1000, 1100], [2000, 2100], [500, 2500]]))).toEqual([[1000, 1100, 0.5], [2000, 2100, 0.5]]);
    const kind = new Readiness().of('k');
    for (let i = 0; i < 32; i++) kind.observe(900, 1100);
    for (let i = 0; i < 24; i++) kind.observe(4900, 5100);
    expect(only(kind.cells())).toEqual([[900, 1100, 0.25], [4900, 5100, 0.75]]);
  });

  it('ignores an interval that says nothing (upper not after lower)', () => {
    const kind = new Readiness().of('k');
    kind.observe(3000, 1000);
    kind.observe(2000, 2000);
    expect(kind.cells()).toEqual([]);
  });

  it('gives the waits of a kind phases spread over [0, 1): the first 0, then by the golden ratio', () => {
    const kind = new Readiness().of('k');
    const phases = Array.from({ length: 10 }, () => kind.phase());
    expect(phases[0]).toBe(0);
    const sorted = [...phases].sort((a, b) => a - b);
    const gaps = sorted.map((p, i) => (i + 1 < sorted.length ? sorted[i + 1]! : 1) - p);
    expect(Math.max(...gaps)).toBeLessThan(0.15);
  });

  it('tells the listeners of a kind once, when its first report is seen ready', () => {
    const readiness = new Readiness();
    const heard: string[] = [];
    const stop = readiness.of('a').onFirst(() => heard.push('a'));
    readiness.of('b').onFirst(() => heard.push('b'));
    readiness.of('a').observe(1000, 2000);
    readiness.of('a').observe(1000, 2000);
    stop();
    readiness.of('b').observe(1000, 2000);
    readiness.of('b').observe(1000, 2000);
    expect(heard).toEqual(['a', 'b']);
  });
});

describe('aimMs: where a wait asks, in the readiness seen', () => {
  const spread = [{ fromMs: 2000, byMs: 3000, mass: 0.5 }, { fromMs: 3000, byMs: 4000, mass: 0.5 }];
  it('first at its quantile; then a fifth of the reports later each time, at least 20 ms on; past the last cell 50 ms on, doubling', () => {
    expect(quantileMs(spread, 0.25).atMs).toBe(2500);
    expect([0, 1, 2, 3].map((made) => aimMs(spread, 0.25, made, 0, 0.5))).toEqual([2500, 2900, 3300, 3700]);
    expect(aimMs(spread, 0.25, 2, 3280, 0.5)).toBe(3300);
    expect(aimMs(spread, 0.25, 2, 3290, 0.5)).toBe(3310);
    expect([4, 5, 6, 7].map((made) => aimMs(spread, 0.25, made, 4000, 0.5))).toEqual([4050, 4100, 4200, 4400]);
  });
  it('in a cell narrower than 40 ms, draws the first aim over the cell\'s last 40 ms', () => {
    const narrow = [{ fromMs: 2990, byMs: 3000, mass: 1 }];
    expect(aimMs(narrow, 0.25, 0, 0, 0)).toBe(3000);
    expect(aimMs(narrow, 0.25, 0, 0, 1)).toBe(2960);
    expect(aimMs(narrow, 0.25, 1, 2960, 1)).toBe(2995);
  });
});

describe('waitUntilReady with an expectation', () => {
  it('without one: the backoff, a 3 s report noticed at 3.75 s (window backoff from 250 ms); the interval is learned', async () => {
    const { client, options, now, asked } = fakeReport(3000);
    const readiness = new Readiness();
    await waitUntilReady(client, 'r1', options({ firstMs: 250, expected: readiness.of('k') }));
    expect(now()).toBe(3750);
    expect(asked).toEqual([0, 250, 750, 1750, 3750]);
    expect(only(readiness.of('k').cells())).toEqual([[1750, 3750, 1]]);
  });

  it('the second wait of a kind not yet seen: the backoff scaled by 2^phase, its polls between the first\'s', async () => {
    const readiness = new Readiness();
    readiness.of('k').phase(); // the first wait's
    const { client, options, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r7', options({ firstMs: 250, expected: readiness.of('k') }));
    const scale = 2 ** ((Math.sqrt(5) - 1) / 2);
    expect(asked).toEqual([0, 384, 1151, 2686, 5756]);
    expect(asked[1]).toBe(Math.round(250 * scale));
  });

  it('with one: one early look at half the earliest readiness seen, then its quantile, then a fifth of the reports later; noticed at 3.1 s in 4 polls, not 3.75 s in 5', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(1750, 3750);
    const { client, options, now, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r2', options({ firstMs: 250, expected: readiness.of('k') }));
    // the early look at 1750 / 2 (not the backoff's 0, 250, 750, 1750); the quantile drawn:
    // 0.05 + 0.45 x 0.5 = 0.275 of (1750, 3750] is 2300; then 2700, 3100
    expect(asked).toEqual([875, 2300, 2700, 3100]);
    expect(now()).toBe(3100);
    // the wait told its interval (2700, 3100]: the weight goes there
    expect(only(readiness.of('k').cells())).toEqual([[2700, 3100, 1]]);
  });

  it('counts the expected time from the submission, not from the wait\'s start (the records made in between)', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const submitted = fakeReport(3000);
    submitted.advance(200);
    await waitUntilReady(submitted.client, 'r5', submitted.options({ firstMs: 250, expected: readiness.of('k'), submittedAt: 0 }));
    expect(submitted.asked).toEqual([1450, 2955, 2995, 3035]);
    // without it, the expected time is counted from the wait's start: 200 ms later
    const fresh = new Readiness();
    fresh.of('k').observe(2900, 3100);
    const unknown = fakeReport(3000);
    unknown.advance(200);
    await waitUntilReady(unknown.client, 'r6', unknown.options({ firstMs: 250, expected: fresh.of('k') }));
    expect(unknown.asked.at(-1)).toBe(3155);
  });

  it('a report much faster than those seen is noticed at the early look; one seen at once is asked at once', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const fast = fakeReport(300);
    await waitUntilReady(fast.client, 'r8', fast.options({ firstMs: 250, expected: readiness.of('k') }));
    expect(fast.asked).toEqual([1450]);
    // a kind whose reports were seen ready at once (a cell from 0): no rest before the first ask
    const instant = new Readiness();
    instant.of('i').observe(0, 40);
    const now = fakeReport(10);
    await waitUntilReady(now.client, 'r9', now.options({ firstMs: 250, expected: instant.of('i') }));
    expect(now.asked[0]).toBe(0);
  });

  it('the early look is never past --max-wait, and past it the aim is neared at least every 7.5 s', async () => {
    // (each wait tells what it saw: each case has its own readiness)
    const seenAt70Minutes = () => {
      const readiness = new Readiness();
      readiness.of('k').observe(70 * 60_000, 71 * 60_000);
      return readiness;
    };
    let readiness = seenAt70Minutes();
    // another job's kind seen ready at 70 min; this wait gives up at 30 min: asked before it does
    const short = fakeReport(20 * 60_000);
    await waitUntilReady(short.client, 'r10', short.options({ expected: readiness.of('k'), maxWaitMs: 30 * 60_000 }));
    expect(short.asked).toEqual([30 * 60_000]);
    readiness = seenAt70Minutes();
    const never = fakeReport(60 * 60_000);
    await expect(waitUntilReady(never.client, 'r12', never.options({ expected: readiness.of('k'), maxWaitMs: 30 * 60_000 }))).rejects.toThrow(/not ready within 30m/);
    expect(never.asked[0]).toBe(30 * 60_000);
    // one ready at 40 min: after the early look at 35 min, asked every 7.5 s, not at the aim (~70 min)
    readiness = seenAt70Minutes();
    const later = fakeReport(40 * 60_000);
    await waitUntilReady(later.client, 'r11', later.options({ expected: readiness.of('k'), maxWaitMs: 2 * 3_600_000 }));
    expect(later.asked[0]).toBe(35 * 60_000);
    expect(later.asked.at(-1)).toBeLessThanOrEqual(40 * 60_000 + 7_500);
  });

  it('a report much slower than expected goes back to the backoff after a few polls', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(900, 1100);
    const { client, options, asked } = fakeReport(60_000);
    await waitUntilReady(client, 'r3', options({ expected: readiness.of('k') }));
    // an early look at 450 ms, aimed at 955 ms, then 40 ms on thrice, then past the cell +50, +100... doubling, then the 7.5 s cap
    expect(asked.slice(0, 12)).toEqual([450, 955, 995, 1035, 1075, 1150, 1250, 1450, 1850, 2650, 4250, 7450]);
    expect(asked.length).toBeLessThanOrEqual(20);
  });

  it('a status answer that takes 100 ms: each poll still waits 20 ms at least after the last answer, not back to back', async () => {
    let clock = 0;
    const polls: { asked: number; answered: number }[] = [];
    const client = {
      status: async (id: string) => {
        const asked = clock;
        clock += 100;
        polls.push({ asked, answered: clock });
        return { status: clock >= 6000 ? 'ready' : 'progress', message: null, report_id: id };
      },
    } as unknown as ReportingClient;
    const readiness = new Readiness();
    readiness.of('k').observe(900, 1100);
    await waitUntilReady(client, 'slow', { maxWaitMs: 600_000, signal: new AbortController().signal, now: () => clock, random: () => 0.5, sleep: async (ms) => { clock += ms; }, expected: readiness.of('k') });
    const pauses = polls.slice(1).map((poll, i) => poll.asked - polls[i]!.answered);
    expect(Math.min(...pauses)).toBeGreaterThanOrEqual(20);
    // aimed at 955 ms, a fifth of the reports on (at least 20 ms after each answer), then 50 ms, 100 ms... after the answer
    expect(polls.map((poll) => poll.asked).slice(0, 9)).toEqual([450, 955, 1075, 1195, 1315, 1465, 1665, 1965, 2465]);
  });

  it('a fixed --poll-interval is kept: the expectation does not move it', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const { client, options, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r4', options({ intervalMs: 2000, expected: readiness.of('k') }));
    expect(asked).toEqual([0, 2000, 4000]);
  });

  it('a wait sleeping on its backoff is woken when the first report of its kind is seen ready, and asks at once', async () => {
    const clock = new FakeClock();
    const readiness = new Readiness();
    const asked: Record<'a' | 'b', number[]> = { a: [], b: [] };
    const client = {
      status: async (id: string) => {
        asked[id as 'a' | 'b'].push(clock.now);
        return { status: clock.now >= 3000 ? 'ready' : 'progress', message: null, report_id: id };
      },
    } as unknown as ReportingClient;
    const options = (): PollOptions => ({
      maxWaitMs: 600_000, signal: new AbortController().signal, now: () => clock.now, random: () => 0.5,
      sleep: (ms, signal) => clock.sleep(ms, signal), firstMs: 250, expected: readiness.of('k'),
    });
    const both = Promise.all([waitUntilReady(client, 'a', options()), waitUntilReady(client, 'b', options())]);
    await clock.runUntil(both);
    // a (phase 0) finds the report ready at 3.75 s; b (phase 0.618) would have asked at 5.756 s
    expect(asked.a).toEqual([0, 250, 750, 1750, 3750]);
    expect(asked.b.slice(0, 4)).toEqual([0, 384, 1151, 2686]);
    expect(asked.b.at(-1)).toBe(3760);
  });

  it('a wait of a kind not seen yet is woken when another kind\'s first report is seen ready, and asks soon if it has run as long', async () => {
    const clock = new FakeClock();
    const readiness = new Readiness();
    const asked: Record<'a' | 'b' | 'late', number[]> = { a: [], b: [], late: [] };
    const submitted: Record<'a' | 'b' | 'late', number> = { a: 0, b: 0, late: 2100 };
    const client = {
      status: async (id: string) => {
        asked[id as 'a' | 'b' | 'late'].push(clock.now);
        return { status: clock.now - submitted[id as 'a' | 'b' | 'late'] >= 3000 ? 'ready' : 'progress', message: null, report_id: id };
      },
    } as unknown as ReportingClient;
    const options = (kind: string): PollOptions => ({
      maxWaitMs: 600_000, signal: new AbortController().signal, now: () => clock.now, random: () => 0.5,
      sleep: (ms, signal) => clock.sleep(ms, signal), firstMs: 250, expected: readiness.of(kind),
    });
    const late = clock.sleep(2100, new AbortController().signal).then(() => waitUntilReady(client, 'late', options('c')));
    const all = Promise.all([waitUntilReady(client, 'a', options('a')), waitUntilReady(client, 'b', options('b')), late]);
    await clock.runUntil(all);
    // a (the first phase) finds its report ready at 3.75 s; b (another kind, phase 0.618) asks
    // 10 ms later, not at 5.756 s
    expect(asked.a).toEqual([0, 250, 750, 1750, 3750]);
    expect(asked.b.slice(0, 4)).toEqual([0, 384, 1151, 2686]);
    expect(asked.b.at(-1)).toBe(3760);
    // submitted at 2.1 s, it had run 1.65 s when a was seen (a was still in progress at 1.75 s): not asked then
    expect(asked.late.filter((at) => at > 3750 && at < 3800)).toEqual([]);
  });

  it('Ctrl-C while a wait sleeps on its backoff ends it, and leaves no listener on the signal', async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    const { signal, listeners } = counted(stop);
    const client = { status: async (id: string) => ({ status: 'progress', message: null, report_id: id }) } as unknown as ReportingClient;
    const wait = waitUntilReady(client, 'c', {
      maxWaitMs: 600_000, signal, now: () => clock.now, random: () => 0.5,
      sleep: (ms, s) => clock.sleep(ms, s), firstMs: 250, expected: new Readiness().of('k'),
    });
    const outcome = wait.then(() => 'ready', (error: Error) => error.message);
    await new Promise((resolve) => setImmediate(resolve));
    stop.abort('SIGINT');
    expect(await outcome).toMatch(/aborted|SIGINT/);
    expect(listeners()).toBe(0);
  });

  it('a wait that ends, ready (woken or not) or past --max-wait, leaves no listener on the long-lived signal', async () => {
    const { signal, listeners } = counted(new AbortController());
    const readiness = new Readiness();
    const ready = fakeReport(3000);
    await waitUntilReady(ready.client, 'r', ready.options({ signal, firstMs: 250, expected: readiness.of('k') }));
    const late = fakeReport(60_000);
    await expect(waitUntilReady(late.client, 'l', late.options({ signal, maxWaitMs: 5000, expected: readiness.of('k') }))).rejects.toThrow(/not ready within/);
    const clock = new FakeClock();
    const client = { status: async (id: string) => ({ status: clock.now >= 3000 ? 'ready' : 'progress', message: null, report_id: id }) } as unknown as ReportingClient;
    const options = (): PollOptions => ({ maxWaitMs: 600_000, signal, now: () => clock.now, random: () => 0.5, sleep: (ms, s) => clock.sleep(ms, s), firstMs: 250, expected: readiness.of('woken') });
    const both = Promise.all([waitUntilReady(client, 'a', options()), waitUntilReady(client, 'b', options())]);
    await clock.runUntil(both);
    expect(listeners()).toBe(0);
  });
});

/** `stop`'s signal, counting the listeners added to it and not removed. */
function counted(stop: AbortController): { signal: AbortSignal; listeners: () => number } {
  let listeners = 0;
  const signal = stop.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => { listeners++; add(...args); }) as typeof add;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => { listeners--; remove(...args); }) as typeof remove;
  return { signal, listeners: () => listeners };
}

/** A clock moved only by the sleeps it holds: the earliest is woken once every task has settled. */
class FakeClock {
  now = 0;
  private timers: { at: number; wake: () => void }[] = [];

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = { at: this.now + ms, wake: resolve };
      this.timers.push(timer);
      signal.addEventListener('abort', () => {
        this.timers = this.timers.filter((t) => t !== timer);
        reject(new Error('aborted'));
      }, { once: true });
    });
  }

  async runUntil(done: Promise<unknown>): Promise<void> {
    let finished = false;
    void done.then(() => { finished = true; }, () => { finished = true; });
    for (let i = 0; i < 1000 && !finished; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (finished || this.timers.length === 0) continue;
      this.timers.sort((x, y) => x.at - y.at);
      const next = this.timers.shift()!;
      this.now = Math.max(this.now, next.at);
      next.wake();
    }
    await done;
  }
}
