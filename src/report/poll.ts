// Waiting for a report (SPEC section 4): fast at first, backing off with jitter, bounded by
// --max-wait. `progress` keeps polling, `ready` ends it, any other status is a failure.

import type { ReportingClient } from '../api/client.js';
import type { StatusResponse } from '../api/schemas.js';
import type { Context } from '../context.js';
import { formatDuration } from '../duration.js';
import { backoffDelay, POLICY, sleepFor } from '../retry.js';
import { NetworkError, ReportError, ReportFailedError } from '../errors.js';
import { shellCommand } from '../io/shell.js';

// Doubling from 1 s to a 7.5 s cap, with ±5% jitter (POLICY.poll, src/retry.ts): a report is noticed
// at most 7.9 s after it becomes ready, and a 60 s report takes at most 12 status requests (11
// sleeps cover >= 63.6 s).
const FIRST_POLL_MS = POLICY.poll.firstMs;

export interface PollOptions {
  /** a fixed interval instead of the backoff */
  intervalMs?: number;
  /** the backoff's first wait (default FIRST_POLL_MS) */
  firstMs?: number;
  maxWaitMs: number;
  signal: AbortSignal;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  random?: () => number;
  /** called after every status answer */
  onStatus?(status: StatusResponse, polls: number, elapsedMs: number): void;
  /** the command to suggest for picking the report up later */
  resumeHint?: (id: string) => string;
  /** what reports like this one took (see Readiness): no wait of the backoff goes past the time
   * this one is expected ready, and the wait is told when it was */
  expected?: Expectation;
  /** when the report was submitted (`now()`'s clock), if before the wait's start: the expectation
   * counts from it, the time the report's work started (the records made in between vary) */
  submittedAt?: number;
}

/** What reports of one kind took to become ready, as far as one wait can tell. */
export interface Expectation {
  /** the time from the wait's start a report of this kind is expected ready, once one was seen */
  expectedMs(): number | undefined;
  /** a report was still in progress when asked at `lowerMs` (0: never asked), ready at `upperMs` */
  observe(lowerMs: number, upperMs: number): void;
}

/** The last readiness intervals kept for a kind of report: recent enough to follow a platform
 * slowing down, enough for a median that one odd report does not move. */
const READINESS_KEPT = 32;
/** Past the expected time, a report still in progress is asked again after 100 ms, then 200, 400
 * ms..., never more rarely than the backoff would: a report slightly slower than the others is
 * noticed within a step, and one much slower is back on the backoff after a few. */
const OVERDUE_FIRST_MS = 100;
/** Polls aimed at the expected time are spread over +-5% of it (at most +-100 ms): reports submitted
 * together are not asked about in one burst. */
const SPREAD = 0.05;
const SPREAD_CAP_MS = 100;

/**
 * When the reports of each kind (the engine's key: side, breakdowns, window length) become ready,
 * learned from the waits of one process: each wait that ends says the report became ready between
 * its last `progress` answer and its `ready` one; the expected time is the median of those
 * intervals' middles. A wait then polls at the expected time instead of a backoff tick that may fall
 * seconds after it (a 3 s report polled at 1.75 s and then 3.75 s is noticed 0.75 s late), and an
 * estimate too early or too late moves toward the truth with every report: too early, the report is
 * noticed within a short step after it and its interval is narrow; too late, the interval's middle
 * is earlier than the estimate. A wrong estimate costs a few polls, never a later notice than the
 * backoff's.
 */
export class Readiness {
  private readonly kinds = new Map<string, number[]>();

  of(kind: string): Expectation {
    return {
      expectedMs: () => {
        const seen = this.kinds.get(kind);
        if (!seen || seen.length === 0) return undefined;
        const sorted = [...seen].sort((a, b) => a - b);
        return sorted[Math.floor((sorted.length - 1) / 2)];
      },
      observe: (lowerMs, upperMs) => {
        if (!(upperMs >= lowerMs) || lowerMs < 0) return;
        let seen = this.kinds.get(kind);
        if (!seen) this.kinds.set(kind, (seen = []));
        seen.push((lowerMs + upperMs) / 2);
        if (seen.length > READINESS_KEPT) seen.shift();
      },
    };
  }
}

/**
 * The wait before the next poll, the backoff's `delay` bounded by the expected readiness: before
 * it, no later than it (spread); past it, `OVERDUE_FIRST_MS` doubling with each poll since, never
 * more than `delay`.
 */
export function boundedDelayMs(delay: number, elapsed: number, expectedMs: number | undefined, overdue: number, random: () => number = Math.random): number {
  if (expectedMs === undefined) return delay;
  if (elapsed < expectedMs) {
    const spread = Math.min(SPREAD_CAP_MS, expectedMs * SPREAD);
    const aim = expectedMs + (random() * 2 - 1) * spread;
    return Math.max(0, Math.min(delay, Math.round(aim - elapsed)));
  }
  return Math.min(delay, OVERDUE_FIRST_MS * 2 ** overdue);
}

/** The wait after poll `n` (0-based): 1 s, 2 s, 4 s, then 7.5 s, each with ±5% jitter. */
export function pollDelayMs(n: number, random: () => number = Math.random, intervalMs?: number, firstMs = FIRST_POLL_MS): number {
  if (intervalMs !== undefined) return intervalMs;
  return backoffDelay({ ...POLICY.poll, firstMs }, n, random);
}

export const defaultResumeHint = (id: string) => `pick it up later with: ${shellCommand(['reporting', 'download', id, '--wait'])} -o FILE`;

/** Whether a status ends the wait in failure (anything but progress and ready). */
export const isFailed = (status: StatusResponse) => status.status !== 'progress' && status.status !== 'ready';

/** A report that ended in a status other than progress or ready: its server message only when it
 * says more than the status, and no hint to download what will never be ready. */
export function reportFailed(id: string, status: { status: string; message?: string | null }): ReportFailedError {
  const plain = (text: string) => text.toLowerCase().replace(/["'.]/g, '').trim();
  const said = status.message?.trim();
  const repeats = !said || plain(said) === plain(status.status) || plain(said) === plain(`report ${id} ended in status ${status.status}`);
  return new ReportFailedError(
    `report ${id} ended in status "${status.status}"${repeats ? '' : `: ${said}`}`,
    id,
    'it will not become ready: submit the report again (`reporting run ...`, or `reporting buyer|seller ...`)',
  );
}

/** The last status request, made at the --max-wait deadline, has this long to answer: the whole
 * wait, slow answers and retries included, ends by --max-wait plus this. */
const LAST_LOOK_MS = 2000;

export async function waitUntilReady(client: ReportingClient, id: string, options: PollOptions): Promise<StatusResponse> {
  const started = options.now();
  const hint = options.resumeHint ?? defaultResumeHint;
  const notReady = () => new ReportError(`report ${id} was not ready within ${formatDuration(options.maxWaitMs)} (--max-wait)`, id, hint(id));
  // a hard deadline: a status answer that trickles, or is retried, cannot stretch the wait
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(notReady()), options.maxWaitMs + LAST_LOOK_MS);
  const signal = AbortSignal.any([options.signal, deadline.signal]);
  // the expected time bounds the backoff, not a fixed --poll-interval
  const expected = options.intervalMs === undefined ? options.expected : undefined;
  // the expectation's times count from the submission
  const since = Math.min(started, options.submittedAt ?? started);
  /** when the last `progress` answer was asked for: the report was not ready then */
  let lower = 0;
  /** polls since the expected time passed */
  let overdue = 0;
  try {
    for (let polls = 1; ; polls++) {
      const asked = options.now() - since;
      const status = await client.status(id, deadline.signal);
      const elapsed = options.now() - started;
      options.onStatus?.(status, polls, elapsed);
      if (status.status === 'ready') {
        options.expected?.observe(lower, options.now() - since);
        return status;
      }
      if (isFailed(status)) throw reportFailed(id, status);
      lower = asked;
      const expectedMs = expected?.expectedMs();
      const fromSubmit = options.now() - since;
      if (expectedMs !== undefined && fromSubmit >= expectedMs) overdue++;
      const delay = boundedDelayMs(pollDelayMs(polls - 1, options.random, options.intervalMs, options.firstMs), fromSubmit, expectedMs, Math.max(0, overdue - 1), options.random);
      if (elapsed + delay > options.maxWaitMs) {
        // one last look at the deadline rather than giving up early
        const remaining = options.maxWaitMs - elapsed;
        if (remaining > 0) {
          await options.sleep(remaining, signal);
          const last = await client.status(id, deadline.signal);
          options.onStatus?.(last, polls + 1, options.now() - started);
          if (last.status === 'ready') {
            options.expected?.observe(lower, options.now() - since);
            return last;
          }
        }
        throw notReady();
      }
      await options.sleep(delay, signal);
    }
  } catch (error) {
    if (deadline.signal.aborted && !options.signal.aborted) throw deadline.signal.reason;
    // the status requests gave up (a server failing, an answer that stalls), not the report: it
    // goes on, and the hint says how to pick it up
    if (error instanceof NetworkError && error.constructor === NetworkError) {
      throw new NetworkError(`${error.message}, while waiting for report ${id}`, `${error.hint ? `${error.hint}; ` : ''}the report goes on: ${hint(id)}`);
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** --poll-interval and --max-wait, parsed. */
export interface WaitFlags {
  pollIntervalMs?: number;
  maxWaitMs: number;
}

/** The polling options of a command's waiting flags. */
export function pollOptionsFrom(
  flags: WaitFlags,
  ctx: Pick<Context, 'signal' | 'now' | 'random' | 'sleep'>,
  extra: Pick<PollOptions, 'onStatus' | 'resumeHint'> = {},
): PollOptions {
  return {
    intervalMs: flags.pollIntervalMs,
    maxWaitMs: flags.maxWaitMs,
    signal: ctx.signal,
    now: ctx.now,
    random: ctx.random,
    sleep: ctx.sleep ?? sleepFor,
    ...extra,
  };
}
