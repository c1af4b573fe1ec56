// Waiting for a report with the expected readiness (issue 32, item 1): polls aimed at the time
// reports of the kind became ready, learned from the waits before, on a fake clock.

import { describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../src/api/client.js';
import { Readiness, aimIn, boundedDelayMs, mostOverlapped, waitUntilReady, type PollOptions } from '../../src/report/poll.js';

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

describe('Readiness: when reports of a kind become ready', () => {
  it('knows nothing before a report is seen; then the span where the most intervals overlap, per kind', () => {
    const readiness = new Readiness();
    const kind = readiness.of('buyer DAILY 86399');
    expect(kind.expected()).toBeUndefined();
    kind.observe(1750, 3750);
    expect(kind.expected()).toEqual({ fromMs: 1750, byMs: 3750 });
    kind.observe(2850, 3050);
    kind.observe(2950, 3050);
    expect(kind.expected()).toEqual({ fromMs: 2950, byMs: 3050 });
    expect(readiness.of('seller DAILY 86399').expected()).toBeUndefined();
    expect(readiness.of('buyer DAILY 86399').expected()).toEqual({ fromMs: 2950, byMs: 3050 });
  });

  it('follows the recent reports: the last 32 only; on a tie, the latest span', () => {
    const kind = new Readiness().of('k');
    for (let i = 0; i < 32; i++) kind.observe(900, 1100);
    expect(kind.expected()).toEqual({ fromMs: 900, byMs: 1100 });
    for (let i = 0; i < 17; i++) kind.observe(4900, 5100);
    expect(kind.expected()).toEqual({ fromMs: 4900, byMs: 5100 });
    expect(mostOverlapped([[900, 1100], [4900, 5100]])).toEqual({ fromMs: 4900, byMs: 5100 });
    expect(mostOverlapped([[900, 1100], [1100, 1300]])).toEqual({ fromMs: 900, byMs: 1300 });
  });

  it('ignores an interval that says nothing (upper before lower)', () => {
    const kind = new Readiness().of('k');
    kind.observe(3000, 1000);
    expect(kind.expected()).toBeUndefined();
  });

  it('gives the waits of a kind phases spread over [0, 1): the first 0, then by the golden ratio', () => {
    const kind = new Readiness().of('k');
    const phases = Array.from({ length: 10 }, () => kind.phase());
    expect(phases[0]).toBe(0);
    const sorted = [...phases].sort((a, b) => a - b);
    const gaps = sorted.map((p, i) => (i + 1 < sorted.length ? sorted[i + 1]! : 1) - p);
    expect(Math.max(...gaps)).toBeLessThan(0.15);
  });

  it('tells the listeners of a kind when one of its reports was seen ready', () => {
    const readiness = new Readiness();
    const heard: string[] = [];
    const stop = readiness.of('a').onChange(() => heard.push('a'));
    readiness.of('b').onChange(() => heard.push('b'));
    readiness.of('a').observe(1000, 2000);
    stop();
    readiness.of('a').observe(1000, 2000);
    readiness.of('b').observe(1000, 2000);
    expect(heard).toEqual(['a', 'b']);
  });
});

describe('boundedDelayMs: the backoff bounded by the wait\'s aim in the span', () => {
  it('is the backoff when nothing is expected', () => {
    expect(boundedDelayMs(2000, 1750, undefined, 0)).toBe(2000);
  });
  it('draws the aim in the span, over at least its last 40 ms', () => {
    expect(aimIn({ fromMs: 2000, byMs: 3000 }, () => 0.5)).toEqual({ aimMs: 2500, byMs: 3000 });
    expect(aimIn({ fromMs: 2000, byMs: 3000 }, () => 0)).toEqual({ aimMs: 3000, byMs: 3000 });
    expect(aimIn({ fromMs: 2990, byMs: 3000 }, () => 1)).toEqual({ aimMs: 2960, byMs: 3000 });
  });
  it('before the aim: the aim, never later than the backoff', () => {
    const aim = { aimMs: 3000, byMs: 3100 };
    expect(boundedDelayMs(2000, 1750, aim, 0)).toBe(1250);
    expect(boundedDelayMs(1000, 750, aim, 0)).toBe(1000);
  });
  it('past the aim: 50 ms, then doubling, no later than the span\'s end before it, never more than the backoff', () => {
    const aim = { aimMs: 3000, byMs: 3100 };
    expect([0, 1, 2].map((n) => boundedDelayMs(7500, 3000, aim, n))).toEqual([50, 100, 100]);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((n) => boundedDelayMs(7500, 3100, aim, n))).toEqual([50, 100, 200, 400, 800, 1600, 3200, 6400, 7500]);
    expect(boundedDelayMs(250, 3100, aim, 3)).toBe(250);
  });
});

describe('waitUntilReady with an expectation', () => {
  it('without one: the backoff, a 3 s report noticed at 3.75 s (window backoff from 250 ms); the interval is learned', async () => {
    const { client, options, now, asked } = fakeReport(3000);
    const readiness = new Readiness();
    await waitUntilReady(client, 'r1', options({ firstMs: 250, expected: readiness.of('k') }));
    expect(now()).toBe(3750);
    expect(asked).toEqual([0, 250, 750, 1750, 3750]);
    expect(readiness.of('k').expected()).toEqual({ fromMs: 1750, byMs: 3750 });
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

  it('with one: polled in the span, then 50 ms later, doubling; noticed at 3.1 s, not 3.75 s', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(1750, 3750);
    const { client, options, now, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r2', options({ firstMs: 250, expected: readiness.of('k') }));
    // the aim drawn halfway in (1750, 3750]
    expect(asked).toEqual([0, 250, 750, 1750, 2750, 2800, 2900, 3100]);
    expect(now()).toBe(3100);
    // the wait told its interval (2900, 3100]: the span narrows to it
    expect(readiness.of('k').expected()).toEqual({ fromMs: 2900, byMs: 3100 });
  });

  it('counts the expected time from the submission, not from the wait\'s start (the records made in between)', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const submitted = fakeReport(3000);
    submitted.advance(200);
    await waitUntilReady(submitted.client, 'r5', submitted.options({ firstMs: 250, expected: readiness.of('k'), submittedAt: 0 }));
    expect(submitted.asked).toEqual([200, 450, 950, 1950, 3000]);
    // without it, the expected time is counted from the wait's start: 200 ms late
    const fresh = new Readiness();
    fresh.of('k').observe(2900, 3100);
    const unknown = fakeReport(3000);
    unknown.advance(200);
    await waitUntilReady(unknown.client, 'r6', unknown.options({ firstMs: 250, expected: fresh.of('k') }));
    expect(unknown.asked.at(-1)).toBe(3200);
  });

  it('a report much slower than expected goes back to the backoff after a few polls', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(900, 1100);
    const { client, options, asked } = fakeReport(60_000);
    await waitUntilReady(client, 'r3', options({ expected: readiness.of('k') }));
    // aimed at 1 s: then +50, +50 (the span's end), +200, +400, +800, +1600, +3200, +6400, then the 7.5 s cap
    expect(asked.slice(0, 11)).toEqual([0, 1000, 1050, 1100, 1300, 1700, 2500, 4100, 7300, 13_700, 21_200]);
    expect(asked.length).toBeLessThanOrEqual(17);
  });

  it('a fixed --poll-interval is kept: the expectation does not move it', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const { client, options, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r4', options({ intervalMs: 2000, expected: readiness.of('k') }));
    expect(asked).toEqual([0, 2000, 4000]);
  });

  it('a wait sleeping on its backoff is woken when another report of its kind is seen ready, and asks at once', async () => {
    const clock = new FakeClock();
    const readiness = new Readiness();
    const asked: Record<string, number[]> = { a: [], b: [] };
    const client = {
      status: async (id: string) => {
        asked[id]!.push(clock.now);
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
});

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
