// Waiting for a report (SPEC section 4): fast at first, backing off with jitter, bounded by
// --max-wait. `progress` keeps polling, `ready` ends it, any other status is a failure.

import type { ReportingClient } from '../api/client.js';
import type { StatusResponse } from '../api/schemas.js';
import type { Context } from '../context.js';
import { formatDuration } from '../duration.js';
import { sleepFor } from '../api/http.js';
import { NetworkError, ReportError, ReportFailedError } from '../errors.js';
import { shellCommand } from '../io/shell.js';

// Doubling from 1 s to a 7.5 s cap, with ±5% jitter: a report is noticed at most 7.9 s after it
// becomes ready, and a 60 s report takes at most 12 status requests (11 sleeps cover >= 63.6 s).
const FIRST_POLL_MS = 1000;
const POLL_GROWTH = 2;
const POLL_CAP_MS = 7500;
const JITTER = 0.05;

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
}

/** The wait after poll `n` (0-based): 1 s, 2 s, 4 s, then 7.5 s, each with ±5% jitter. */
export function pollDelayMs(n: number, random: () => number = Math.random, intervalMs?: number, firstMs = FIRST_POLL_MS): number {
  if (intervalMs !== undefined) return intervalMs;
  const base = Math.min(POLL_CAP_MS, firstMs * POLL_GROWTH ** n);
  return Math.round(base * (1 - JITTER + random() * 2 * JITTER));
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
  try {
    for (let polls = 1; ; polls++) {
      const status = await client.status(id, deadline.signal);
      const elapsed = options.now() - started;
      options.onStatus?.(status, polls, elapsed);
      if (status.status === 'ready') return status;
      if (isFailed(status)) throw reportFailed(id, status);
      const delay = pollDelayMs(polls - 1, options.random, options.intervalMs, options.firstMs);
      if (elapsed + delay > options.maxWaitMs) {
        // one last look at the deadline rather than giving up early
        const remaining = options.maxWaitMs - elapsed;
        if (remaining > 0) {
          await options.sleep(remaining, signal);
          const last = await client.status(id, deadline.signal);
          options.onStatus?.(last, polls + 1, options.now() - started);
          if (last.status === 'ready') return last;
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
  ctx: Pick<Context, 'signal' | 'now' | 'random'>,
  extra: Pick<PollOptions, 'onStatus' | 'resumeHint'> = {},
): PollOptions {
  return {
    intervalMs: flags.pollIntervalMs,
    maxWaitMs: flags.maxWaitMs,
    signal: ctx.signal,
    now: ctx.now,
    random: ctx.random,
    sleep: sleepFor,
    ...extra,
  };
}
