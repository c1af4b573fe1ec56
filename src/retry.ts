// The one retry policy (issue 34, item 4): every wait of the tool between two tries, how long it
// is (a backoff: first wait, growth, cap, jitter) and what it is made of (the clock, the sleep and
// the randomness it is handed: the Context's in a run, a fake clock in tests, STYLE lesson 12).
// A bottom module: the API client, the report's polling, the engine, the loaders, the stores and
// the file locks all reach it downwards. Each loop keeps its own control (what is tried again, and
// until when); the numbers are here, side by side.

import { InterruptedError } from './errors.js';

/** Waits `ms`, or rejects when `signal` aborts (as the signal's reason, or an InterruptedError). */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** What a wait is made of: the real ones in a run (the Context's), fakes in tests. */
export interface Waits {
  /** ms since the epoch: a wait's deadline is measured by it */
  now(): number;
  sleep: Sleep;
  /** [0, 1): the jitter */
  random(): number;
}

/** The real sleep: a timer, cleared by an abort (then an InterruptedError naming the signal). */
export function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new InterruptedError(String(signal.reason)));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new InterruptedError(String(signal.reason)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The real clock, sleep and randomness, where a caller was handed none (a test's own call). */
export const REAL_WAITS: Waits = { now: () => Date.now(), sleep: sleepFor, random: Math.random };

/** The Waits of a Context (or any holder of a clock and randomness), its sleep if it has one. */
export function waitsOf(from: { now(): number; random(): number; sleep?: Sleep }): Waits {
  return { now: () => from.now(), random: () => from.random(), sleep: from.sleep ?? sleepFor };
}

/**
 * A backoff: the wait before try `attempt + 1` (attempt 0-based) is `firstMs * growth^attempt`,
 * at most `capMs` (the bound), then jittered:
 * - `full`: uniform in [0, bound), whole milliseconds (AWS's "full jitter");
 * - `none`: the bound;
 * - `{ spread }`: the bound times 1 ± spread, rounded;
 * - `{ plus }`: `plus` ms and a uniform part of the bound.
 */
export interface Backoff {
  firstMs: number;
  /** 2 unless said */
  growth?: number;
  capMs: number;
  jitter: 'full' | 'none' | { spread: number } | { plus: number };
}

/** The un-jittered wait before try `attempt + 1`. */
export function backoffBound(policy: Backoff, attempt: number): number {
  return Math.min(policy.capMs, policy.firstMs * (policy.growth ?? 2) ** attempt);
}

/** The wait before try `attempt + 1` (attempt 0-based). */
export function backoffDelay(policy: Backoff, attempt: number, random: () => number): number {
  const bound = backoffBound(policy, attempt);
  const jitter = policy.jitter;
  if (jitter === 'none') return bound;
  if (jitter === 'full') return Math.floor(random() * bound);
  if ('spread' in jitter) return Math.round(bound * (1 - jitter.spread + random() * 2 * jitter.spread));
  return jitter.plus + random() * bound;
}

/** The policies, one per kind of wait. Changing one changes one loop (and its test). */
export const POLICY = {
  /** SPEC section 4: an HTTP request retried (connection errors, timeouts, 408, 429, 5xx but 501),
   * a download broken off and started again, the pool closed after a throttle with no Retry-After:
   * 500 ms doubling to 30 s, full jitter */
  http: { firstMs: 500, capMs: 30_000, jitter: 'full' },
  /** a report's status, asked again while it is in progress: 1 s doubling to 7.5 s, ±5% (a
   * report is noticed at most 7.9 s after it becomes ready); --poll-interval replaces it */
  poll: { firstMs: 1000, capMs: 7500, jitter: { spread: 0.05 } },
  /** a DuckDB file another process holds (one writer a file), up to --max-wait: 100 ms doubling
   * to 2 s, no jitter (the holder's transactions end when they end) */
  duckdbLock: { firstMs: 100, capMs: 2000, jitter: 'none' },
  /** a file lock held by a live process (the token store's, a state file's): 5 ms and up to
   * 5 ms doubling to 100 ms more, so that two waiters do not retry in step */
  fileLock: { firstMs: 5, capMs: 100, jitter: { plus: 5 } },
  /** a state's lock held by another run (--lock-wait): tried every 2 s, or just after the lease
   * it found runs out (stores/store.ts waitForStoreLock), never sooner than 50 ms */
  storeLock: { firstMs: 2000, growth: 1, capMs: 2000, jitter: 'none' },
  /** the S3 client's retries (throttled or transient answers, --retries of them): 50 ms doubling
   * to 20 s, full jitter, the SDK's standard; a throttled answer starts at 1 s */
  s3: { firstMs: 50, capMs: 20_000, jitter: 'full' },
  s3Throttled: { firstMs: 1000, capMs: 20_000, jitter: 'full' },
} satisfies Record<string, Backoff>;

/** the least wait of a store lock, and how long after a lease's end it is tried again */
export const STORE_LOCK_LEAST_MS = 50;

/** A Retry-After longer than this is not waited for: the request fails instead (SPEC section 4). */
export const RETRY_AFTER_CAP_MS = 5 * 60_000;

/** The least wait before HTTP retry `attempt` when the server names a wait: half the backoff's
 * bound, so a `Retry-After: 0` or a past date cannot spend every retry at once. */
export function retryAfterFloorMs(attempt: number): number {
  return backoffBound(POLICY.http, attempt) / 2;
}

/** A step tried again at once (no wait) while it fails with `retryable`, `times` tries in all: a
 * race with another process on the file system (a folder removed between two steps). */
export async function tryAgainAtOnce<T>(times: number, retryable: (error: unknown) => boolean, step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!retryable(error) || attempt >= times) throw error;
    }
  }
}

/** How many tries of a folder step racing another process (the journal's). */
export const RACE_TRIES = 5;
