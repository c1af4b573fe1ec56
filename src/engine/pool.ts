// Running a chunked run's windows (issue 13): at most N reports in progress, slowing down when the
// API says too many are running, halving windows the platform cannot produce, stopping cleanly on
// Ctrl-C. Pure scheduling: what a window's task does (submit, wait, download) is injected, and so
// are the clock, sleep and randomness (STYLE lesson 12), so every decision is tested on a fake clock.
//
// Concurrency is AIMD, as TCP does it:
// - The effective limit starts at N. A "too many reports" answer (HTTP 429, or an API error saying
//   so), whether the task failed with it or only reported it through `throttled()` while its HTTP
//   client retried, halves the limit (of what was actually running, at least 1). Throttles from
//   tasks that started before the last decrease are the same congestion and do not halve again.
// - Nothing new starts until the Retry-After delay has passed (or, without one, a backoff with full
//   jitter, growing with consecutive throttles); the throttled window goes back into the queue.
// - After `limit` successes of tasks started since the last change, the limit grows by one, up to N:
//   slowly, so a server that just refused is not flooded again.
//
// Bisection: a window whose report fails (a failure status, or refused as too large) is split in
// two by `split` and both halves are queued; a window `split` cannot halve (a day; an hour with
// HOURLY) fails for good, and the failure names it. Without `split` (--no-split) every such failure
// is final.
//
// Delivery, never two at once:
// - `merged` (one output): every result in chronological order. A window done early waits until
//   every earlier window is delivered; to bound that, no window starts while `maxAhead` windows are
//   started and not yet delivered (except the earliest, which must always be able to start), so at
//   most `maxAhead - 1` results wait.
// - `per-window` (one output per planned window): as soon as possible, except that the pieces of a
//   split window come in chronological order (they go to one file). Once a piece fails for good,
//   the rest of its planned window is dropped: not started, not delivered.
// `deliver` is told the planned window (`origin`); the last piece is the one whose `until` is the
// origin's (isLastPiece).
//
// The queue is kept in chronological order, so the earliest window always starts first.

import { setMaxListeners } from 'node:events';
import { ApiRejectedError, ReportFailedError, ThrottledError, UsageError } from '../errors.js';
import { backoffDelay, POLICY } from '../retry.js';
import { DEFAULT_CONCURRENCY, MAX_CONCURRENCY } from './limits.js';
import { describeWindow, type Window } from '../report/windows.js';

export { DEFAULT_CONCURRENCY, MAX_CONCURRENCY };
/** a window throttled this many times in a row fails: the API is not letting anything through */
export const DEFAULT_MAX_THROTTLES = 10;

export function parseConcurrency(text: string): number {
  const value = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || value < 1 || value > MAX_CONCURRENCY) {
    throw new UsageError(`--concurrency wants a whole number from 1 to ${MAX_CONCURRENCY}, not "${text}"`).about('--concurrency');
  }
  return value;
}

/** What the pool does about a task's error. */
export type Failure =
  /** too many reports running: requeue the window, slow down */
  | { kind: 'throttled'; retryAfterMs?: number }
  /** the report failed or was too large: halve the window */
  | { kind: 'split' }
  /** anything else: the window fails */
  | { kind: 'fatal' };

/** A task may throw this to say exactly what happened, rather than have its error classified. */
export class WindowFailure extends Error {
  constructor(readonly failure: Failure, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** What the API answers, in its `error_id`, when too many reports are running (the platform's
 * word, as the sandbox answers it with its 429). */
const THROTTLE_IDS: ReadonlySet<string> = new Set(['TOO_MANY_REPORTS']);

/** The report will never be ready: it ended in a failure status, or the request was refused as
 * too large (HTTP 413). (Not ready within --max-wait, or a network failure, is not this: the
 * report may still come.) */
export function isReportFailure(error: unknown): boolean {
  return error instanceof ReportFailedError || (error instanceof ApiRejectedError && error.status === 413);
}

/**
 * The classification of the errors the CLI's client raises, by their type: HTTP 429 after the
 * client's own retries (ThrottledError), or a refusal whose error_id says too many reports, is a
 * throttle; a report that ended in a failure status, or a request refused as too large, is split;
 * everything else (not ready within --max-wait, authentication, network) is fatal.
 */
export function classifyFailure(error: unknown): Failure {
  if (error instanceof WindowFailure) return error.failure;
  const retryAfter = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  const retryAfterMs = typeof retryAfter === 'number' ? { retryAfterMs: retryAfter } : {};
  if (error instanceof ThrottledError) return { kind: 'throttled', ...retryAfterMs };
  if (error instanceof ApiRejectedError && (error.status === 429 || THROTTLE_IDS.has(error.errorId ?? ''))) return { kind: 'throttled', ...retryAfterMs };
  return isReportFailure(error) ? { kind: 'split' } : { kind: 'fatal' };
}

export interface TaskContext {
  /** aborted on Ctrl-C, or when a failure stops the run: stop waiting, abort the output */
  signal: AbortSignal;
  /** the window this one was split from (itself when not split) */
  origin: Window;
  /** the task submitted its report: an interrupted run lists the IDs of reports in progress */
  reportId(id: string): void;
  /** the API answered 429 but the HTTP client retried: slow down without failing the window */
  throttled(retryAfterMs?: number): void;
}

export type WindowTask<T> = (window: Window, context: TaskContext) => Promise<T>;

export type PoolEvent =
  | { type: 'start'; window: Window }
  | { type: 'done'; window: Window }
  | { type: 'throttled'; window: Window; limit: number; waitMs: number }
  | { type: 'split'; window: Window; origin: Window; into: [Window, Window]; error: unknown }
  | { type: 'failed'; window: Window; origin: Window; error: unknown }
  | { type: 'limit'; limit: number };

export interface PoolOptions<T> {
  /** N: never more than this many tasks at once (1..16) */
  concurrency: number;
  /** halves a window, or undefined at the smallest unit; absent: no bisection (--no-split) */
  split?: (window: Window) => [Window, Window] | undefined;
  /** one merged output, or one output per planned window (see above) */
  delivery: 'merged' | 'per-window';
  /** merged only: started-but-undelivered windows at most (default 4 x concurrency) */
  maxAhead?: number;
  /** stop at the first final failure (a merged output cannot have a hole) */
  failFast: boolean;
  /** per window, throttles in a row before it fails (default 10) */
  maxThrottles?: number;
  signal: AbortSignal;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  random(): number;
  classify?: (error: unknown) => Failure;
  /** a window's result; awaited, and never called twice at once */
  deliver(window: Window, result: T, origin: Window): void | Promise<void>;
  /** state changes, for progress */
  onEvent?(event: PoolEvent): void;
}

export interface WindowFailureReport {
  /** the smallest window that failed */
  window: Window;
  /** the window it was split from */
  origin: Window;
  error: unknown;
  reportId?: string;
}

export interface PoolOutcome {
  delivered: number;
  failures: WindowFailureReport[];
  /** the caller's signal stopped the run */
  aborted: boolean;
  /** after an abort: the windows that were running and did not finish, with their report IDs */
  interrupted: { window: Window; reportId?: string }[];
  /** the most tasks that ran at once */
  peak: number;
}

interface Item {
  window: Window;
  origin: Window;
  throttles: number;
}

interface Running {
  item: Item;
  reportId?: string;
  /** the limit's epoch when the task started */
  epoch: number;
}

type Settled<T> = { item: Item; ok: true; result: T } | { item: Item; ok: false };

/** Runs `task` over `windows` (chronological, contiguous) under the options' rules. */
export async function runWindows<T>(windows: readonly Window[], task: WindowTask<T>, options: PoolOptions<T>): Promise<PoolOutcome> {
  return new WindowPool(task, options).run(windows);
}

class WindowPool<T> {
  private readonly queue: Item[] = [];
  private readonly running = new Map<Item, Running>();
  private readonly max: number;
  private limit: number;
  private epoch = 0;
  private successes = 0;
  /** consecutive throttles, for the backoff when no Retry-After is given */
  private throttleStreak = 0;
  /** nothing starts before this time (Retry-After) */
  private gateUntil = 0;
  private stopped = false;
  private aborted = false;
  private interrupted: PoolOutcome['interrupted'] = [];
  private readonly failures: WindowFailureReport[] = [];
  private delivered = 0;
  private peak = 0;
  /** the first second of the next window to deliver: one cursor when merged (key 0), else one per
   * planned window being delivered in pieces (keyed by its since) */
  private readonly cursors = new Map<number, number>();
  /** results waiting for their predecessors, by their since */
  private readonly waiting = new Map<number, Settled<T>>();
  /** planned windows (by since) with a piece that failed for good */
  private readonly failedOrigins = new Set<number>();
  private deliveries: Promise<void> = Promise.resolve();
  private fatalError?: { error: unknown };
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;
  private wake?: () => void;

  constructor(private readonly task: WindowTask<T>, private readonly options: PoolOptions<T>) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1 || options.concurrency > MAX_CONCURRENCY) {
      throw new RangeError(`concurrency must be 1..${MAX_CONCURRENCY}`);
    }
    this.max = options.concurrency;
    this.limit = options.concurrency;
    this.signal = AbortSignal.any([options.signal, this.stop.signal]);
    // every task in flight listens to it (sleeps, HTTP requests): 16 tasks are not a leak
    setMaxListeners(8 * MAX_CONCURRENCY, this.signal);
  }

  async run(windows: readonly Window[]): Promise<PoolOutcome> {
    for (const window of windows) this.queue.push({ window, origin: window, throttles: 0 });
    this.queue.sort((a, b) => a.window.since - b.window.since);
    if (this.options.delivery === 'merged') this.cursors.set(0, this.queue[0]?.window.since ?? 0);
    const onAbort = () => this.abort();
    if (this.options.signal.aborted) this.abort();
    else this.options.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        this.startWhatFits();
        if (this.running.size === 0 && (this.stopped || this.queue.length === 0)) break;
        await this.idle();
      }
      await this.deliveries;
    } finally {
      this.options.signal.removeEventListener('abort', onAbort);
    }
    if (this.fatalError) throw this.fatalError.error;
    return {
      delivered: this.delivered,
      failures: this.failures,
      aborted: this.aborted,
      interrupted: this.interrupted,
      peak: this.peak,
    };
  }

  private abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.interrupted = [...this.running.values()].map((entry) => ({ window: entry.item.window, ...(entry.reportId ? { reportId: entry.reportId } : {}) }));
    this.halt();
  }

  /** Start nothing more; tasks in flight are told through their signal. */
  private halt(): void {
    this.stopped = true;
    this.stop.abort(this.options.signal.aborted ? this.options.signal.reason : 'stopped');
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Waits for a task to settle, the Retry-After gate to open, or an abort. */
  private async idle(): Promise<void> {
    const woken = new Promise<void>((resolve) => { this.wake = resolve; });
    const gated = !this.stopped && this.queue.length > 0 && this.running.size < this.limit && this.options.now() < this.gateUntil;
    if (!gated) return woken;
    const cancel = new AbortController();
    const timer = this.options.sleep(this.gateUntil - this.options.now(), AbortSignal.any([cancel.signal, this.signal])).catch(() => undefined);
    await Promise.race([woken, timer]);
    cancel.abort();
  }

  private startWhatFits(): void {
    while (!this.stopped && this.queue.length > 0 && this.running.size < this.limit && this.options.now() >= this.gateUntil) {
      const next = this.queue[0] as Item;
      if (this.options.delivery === 'merged' && next.window.since !== this.cursors.get(0)) {
        const ahead = this.running.size + this.waiting.size;
        if (ahead >= (this.options.maxAhead ?? 4 * this.max)) break;
      }
      this.queue.shift();
      this.start(next);
    }
  }

  private start(item: Item): void {
    const entry: Running = { item, epoch: this.epoch };
    this.running.set(item, entry);
    this.peak = Math.max(this.peak, this.running.size);
    this.options.onEvent?.({ type: 'start', window: item.window });
    const context: TaskContext = {
      signal: this.signal,
      origin: item.origin,
      reportId: (id) => { entry.reportId = id; },
      throttled: (retryAfterMs) => this.throttle(entry, retryAfterMs),
    };
    let promise: Promise<T>;
    try {
      promise = this.task(item.window, context);
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(
      (result) => this.settle(entry, { item, ok: true, result }),
      (error: unknown) => this.settle(entry, { item, ok: false }, error),
    );
  }

  private settle(entry: Running, settled: Settled<T>, error?: unknown): void {
    this.running.delete(entry.item);
    try {
      this.decide(entry, settled, error);
    } catch (thrown) {
      // a bug in an injected function (split, classify, onEvent): stop rather than hang
      this.fatalError ??= { error: thrown };
      this.halt();
    }
    this.notify();
  }

  private decide(entry: Running, settled: Settled<T>, error?: unknown): void {
    if (this.stopped) {
      // stopping: errors now are the stop's echo, not the window's fault, and nothing more is
      // delivered; a window that finished after Ctrl-C is no longer in progress, though
      if (settled.ok) this.interrupted = this.interrupted.filter((running) => running.window !== entry.item.window);
    } else if (settled.ok) {
      this.succeeded(entry);
      this.options.onEvent?.({ type: 'done', window: entry.item.window });
      this.complete(settled);
    } else {
      this.failed(entry, error);
    }
  }

  private succeeded(entry: Running): void {
    this.throttleStreak = 0;
    if (entry.epoch !== this.epoch) return;
    this.successes++;
    if (this.successes >= this.limit && this.limit < this.max) {
      this.setLimit(this.limit + 1);
    }
  }

  private setLimit(limit: number): void {
    this.limit = limit;
    this.epoch++;
    this.successes = 0;
    this.options.onEvent?.({ type: 'limit', limit });
  }

  /** Lowers the limit once per congestion, and closes the gate for the wait. Returns the wait. */
  private throttle(entry: Running, retryAfterMs?: number): number {
    // one burst of refusals is one congestion: it halves once and grows the backoff once
    const fresh = entry.epoch === this.epoch;
    if (fresh) this.throttleStreak++;
    const waitMs = retryAfterMs ?? backoffDelay(POLICY.http, Math.max(0, this.throttleStreak - 1), this.options.random);
    this.gateUntil = Math.max(this.gateUntil, this.options.now() + waitMs);
    if (fresh) {
      const inFlight = this.running.size + (this.running.has(entry.item) ? 0 : 1);
      const lowered = Math.max(1, Math.floor(Math.min(this.limit, inFlight) / 2));
      if (lowered < this.limit) this.setLimit(lowered);
      else this.epoch++; // already at 1: still, later throttles of the same burst are the same congestion
    }
    this.options.onEvent?.({ type: 'throttled', window: entry.item.window, limit: this.limit, waitMs });
    return waitMs;
  }

  private failed(entry: Running, error: unknown): void {
    const { item } = entry;
    const failure = (this.options.classify ?? classifyFailure)(error);
    if (failure.kind === 'throttled' && item.throttles < (this.options.maxThrottles ?? DEFAULT_MAX_THROTTLES)) {
      this.throttle(entry, failure.retryAfterMs);
      this.enqueue({ ...item, throttles: item.throttles + 1 });
      return;
    }
    if (failure.kind === 'split') {
      const halves = this.options.split?.(item.window);
      if (halves) {
        this.options.onEvent?.({ type: 'split', window: item.window, origin: item.origin, into: halves, error });
        for (const half of halves) this.enqueue({ window: half, origin: item.origin, throttles: 0 });
        return;
      }
    }
    this.failures.push({ window: item.window, origin: item.origin, error, ...(entry.reportId ? { reportId: entry.reportId } : {}) });
    this.options.onEvent?.({ type: 'failed', window: item.window, origin: item.origin, error });
    if (this.options.failFast) {
      this.halt();
      return;
    }
    if (this.options.delivery === 'merged') {
      this.complete({ item, ok: false }); // the cursor passes the hole
      return;
    }
    // per window: the planned window cannot be complete; drop its other pieces
    const origin = item.origin.since;
    this.failedOrigins.add(origin);
    this.queue.splice(0, this.queue.length, ...this.queue.filter((queued) => queued.origin.since !== origin));
    for (const [since, settled] of this.waiting) if (settled.item.origin.since === origin) this.waiting.delete(since);
    this.cursors.delete(origin);
  }

  /** Into the queue at its chronological place. */
  private enqueue(item: Item): void {
    let at = this.queue.length;
    while (at > 0 && (this.queue[at - 1] as Item).window.since > item.window.since) at--;
    this.queue.splice(at, 0, item);
  }

  /** A window is settled for good: deliver it now, or when its predecessors are. */
  private complete(settled: Settled<T>): void {
    const { window, origin } = settled.item;
    const merged = this.options.delivery === 'merged';
    if (!merged && this.failedOrigins.has(origin.since)) return;
    const key = merged ? 0 : origin.since;
    let cursor = this.cursors.get(key) ?? origin.since;
    this.waiting.set(window.since, settled);
    for (let next = this.waiting.get(cursor); next; next = this.waiting.get(cursor)) {
      this.waiting.delete(cursor);
      cursor = next.item.window.until + 1;
      this.deliver(next);
    }
    if (!merged && cursor > origin.until) this.cursors.delete(key);
    else this.cursors.set(key, cursor);
  }

  private deliver(settled: Settled<T>): void {
    if (!settled.ok) return;
    const { window, origin } = settled.item;
    this.deliveries = this.deliveries.then(async () => {
      if (this.fatalError) return;
      try {
        await this.options.deliver(window, settled.result, origin);
        this.delivered++;
      } catch (error) {
        // the output failed (disk full, EPIPE): nothing more can be written
        this.fatalError ??= { error };
        this.halt();
      }
    });
  }
}

/** The piece that completes its planned window (a window never split is its own last piece). */
export function isLastPiece(window: Window, origin: Window): boolean {
  return window.until === origin.until;
}

/** One line naming the failed window, for the run's error message. */
export function describeFailure(failure: WindowFailureReport): string {
  const split = failure.window.since !== failure.origin.since || failure.window.until !== failure.origin.until
    ? ` (split down from ${describeWindow(failure.origin)})` : '';
  const report = failure.reportId ? `, report ${failure.reportId}` : '';
  const why = failure.error instanceof Error ? failure.error.message : String(failure.error);
  // the report named once (a failed status's message names it: `report ID ended in status "failed"`)
  const named = failure.reportId !== undefined && why.startsWith(`report ${failure.reportId} `);
  return `window ${describeWindow(failure.window)}${split}${report}: ${named ? why.slice(`report ${failure.reportId} `.length) : why}`;
}

/** The run was interrupted: a hint naming the reports still in progress, for InterruptedError. */
export function interruptedHint(outcome: PoolOutcome): string | undefined {
  const ids = outcome.interrupted.filter((entry) => entry.reportId).map((entry) => `${entry.reportId} (${describeWindow(entry.window)})`);
  return ids.length > 0 ? `report${ids.length === 1 ? '' : 's'} still in progress: ${ids.join(', ')}` : undefined;
}
