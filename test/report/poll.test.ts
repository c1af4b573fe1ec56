// Waiting for a report with the expected readiness (issue 32, item 1): polls aimed at the time
// reports of the kind became ready, learned from the waits before, on a fake clock.

import { describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../src/api/client.js';
import { Readiness, boundedDelayMs, waitUntilReady, type PollOptions } from '../../src/report/poll.js';

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
  it('knows nothing before a report is seen; then the median of the intervals\' middles, per kind', () => {
    const readiness = new Readiness();
    const kind = readiness.of('buyer DAILY 86399');
    expect(kind.expectedMs()).toBeUndefined();
    kind.observe(1750, 3750); // 2750
    kind.observe(2850, 3050); // 2950
    kind.observe(2950, 3050); // 3000
    expect(kind.expectedMs()).toBe(2950);
    expect(readiness.of('seller DAILY 86399').expectedMs()).toBeUndefined();
    expect(readiness.of('buyer DAILY 86399').expectedMs()).toBe(2950);
  });

  it('follows the recent reports: the last 32 only', () => {
    const kind = new Readiness().of('k');
    for (let i = 0; i < 32; i++) kind.observe(900, 1100);
    expect(kind.expectedMs()).toBe(1000);
    for (let i = 0; i < 17; i++) kind.observe(4900, 5100);
    expect(kind.expectedMs()).toBe(5000);
  });

  it('ignores an interval that says nothing (upper before lower)', () => {
    const kind = new Readiness().of('k');
    kind.observe(3000, 1000);
    expect(kind.expectedMs()).toBeUndefined();
  });
});

describe('boundedDelayMs: the backoff bounded by the expected time', () => {
  it('is the backoff when nothing is expected', () => {
    expect(boundedDelayMs(2000, 1750, undefined, 0)).toBe(2000);
  });
  it('before the expected time: aims at it, spread over +-5% (at most 100 ms), never later than the backoff', () => {
    expect(boundedDelayMs(2000, 1750, 3000, 0, () => 0.5)).toBe(1250);
    expect(boundedDelayMs(2000, 1750, 3000, 0, () => 0)).toBe(1150);
    expect(boundedDelayMs(2000, 1750, 3000, 0, () => 1)).toBe(1350);
    expect(boundedDelayMs(1000, 750, 3000, 0, () => 0.5)).toBe(1000);
    expect(boundedDelayMs(2000, 0, 1000, 0, () => 1)).toBe(1050);
  });
  it('past it: 100 ms, then doubling, never more than the backoff', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => boundedDelayMs(7500, 3100, 3000, n))).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 7500]);
    expect(boundedDelayMs(250, 3100, 3000, 3)).toBe(250);
  });
});

describe('waitUntilReady with an expectation', () => {
  it('without one: the backoff, a 3 s report noticed at 3.75 s (window backoff from 250 ms); the interval is learned', async () => {
    const { client, options, now, asked } = fakeReport(3000);
    const readiness = new Readiness();
    await waitUntilReady(client, 'r1', options({ firstMs: 250, expected: readiness.of('k') }));
    expect(now()).toBe(3750);
    expect(asked).toEqual([0, 250, 750, 1750, 3750]);
    expect(readiness.of('k').expectedMs()).toBe(2750);
  });

  it('with one: polled at the expected time, then 100 ms later; noticed at 3.05 s, not 3.75 s', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(1750, 3750);
    const { client, options, now, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r2', options({ firstMs: 250, expected: readiness.of('k') }));
    expect(asked).toEqual([0, 250, 750, 1750, 2750, 2850, 3050]);
    expect(now()).toBe(3050);
    // the wait told its interval (2850, 3050]: one more such report and 2.95 s is expected
    readiness.of('k').observe(2850, 3050);
    expect(readiness.of('k').expectedMs()).toBe(2950);
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
    // 1 s expected: 1000, then +100, +200, +400, +800, +1600, +3200, +6400, then the 7.5 s cap
    expect(asked.slice(0, 10)).toEqual([0, 1000, 1100, 1300, 1700, 2500, 4100, 7300, 13_700, 21_200]);
    expect(asked.length).toBeLessThanOrEqual(16);
  });

  it('a fixed --poll-interval is kept: the expectation does not move it', async () => {
    const readiness = new Readiness();
    readiness.of('k').observe(2900, 3100);
    const { client, options, asked } = fakeReport(3000);
    await waitUntilReady(client, 'r4', options({ intervalMs: 2000, expected: readiness.of('k') }));
    expect(asked).toEqual([0, 2000, 4000]);
  });
});
