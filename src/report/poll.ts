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

/** What reports of one kind took to become ready, as far as the waits of one process can tell. */
export interface Expectation {
  /** the span, counted from the submission, in which the most recent reports of this kind became
   * ready (after `fromMs`, by `byMs`); undefined before one was seen */
  expected(): Expected | undefined;
  /** a report was still in progress when asked at `lowerMs` (0: never asked), ready at `upperMs` */
  observe(lowerMs: number, upperMs: number): void;
  /** a new wait's phase in [0, 1): 0 for the kind's first, then spread by the golden ratio, so that
   * the waits of a kind not yet seen poll at times that interleave rather than coincide */
  phase(): number;
  /** `listener` is called when a report of the kind was seen ready; returns how to stop listening */
  onChange(listener: () => void): () => void;
}

/** The span in which recent reports of a kind became ready, counted from their submission. */
export interface Expected {
  fromMs: number;
  byMs: number;
}

/** The last readiness intervals kept for a kind of report: recent enough to follow a platform
 * slowing down, enough that one odd report does not move the span. */
const READINESS_KEPT = 32;
/** Past the span's end, a report still in progress is asked again after 50 ms, then 100, 200 ms...,
 * never more rarely than the backoff would: a report slightly slower than the others is noticed
 * within a step, and one much slower is back on the backoff after a few. */
const OVERDUE_FIRST_MS = 50;
/** Polls aimed into the span are drawn over at least its last 40 ms: reports submitted together are
 * not asked about in one burst. */
const SPREAD_MIN_MS = 40;
/** A wait woken past the span's end polls within this (drawn): the woken do not ask in one burst. */
const WOKEN_SPREAD_MS = 20;
const GOLDEN = (Math.sqrt(5) - 1) / 2;

/**
 * When the reports of each kind (the engine's key: side, breakdowns, window length) become ready,
 * learned from the waits of one process. Each wait that ends says its report became ready in
 * (its last `progress` answer, its `ready` one]; the span expected is where the most of the last
 * intervals overlap (the latest such span on a tie). Reports of a kind that take the same time have
 * all their intervals overlap there, and each wait narrows it: a poll drawn inside the span either
 * finds the report ready (the span ends there) or not (it starts there), and the wait asks again at
 * the span's end. A wait polls in the span instead of at a backoff tick that may fall seconds after
 * it (a 3 s report polled at 1.75 s and then 3.75 s is noticed 0.75 s late); one slower than the span
 * is asked again after 50 ms, 100 ms..., never later than the backoff would, so a wrong span costs
 * a few polls, never a later notice.
 *
 * Before any report of a kind was seen, its waits poll on the backoff scaled by 2^phase (phases
 * spread by the golden ratio), so that together they ask at interleaving times; the first report
 * seen ready wakes the others, which ask at once if they are past the span, or wait for it.
 */
export class Readiness {
  private readonly kinds = new Map<string, Kind>();

  of(name: string): Expectation {
    let kind = this.kinds.get(name);
    if (!kind) this.kinds.set(name, (kind = new Kind()));
    const mine = kind;
    return {
      expected: () => mine.expected(),
      observe: (lowerMs, upperMs) => mine.observe(lowerMs, upperMs),
      phase: () => mine.phase(),
      onChange: (listener) => mine.listen(listener),
    };
  }
}

class Kind {
  private readonly seen: [number, number][] = [];
  private span: Expected | undefined;
  private waits = 0;
  private readonly listeners = new Set<() => void>();

  expected(): Expected | undefined {
    return this.span;
  }

  observe(lowerMs: number, upperMs: number): void {
    if (!(upperMs >= lowerMs) || lowerMs < 0) return;
    this.seen.push([lowerMs, upperMs]);
    if (this.seen.length > READINESS_KEPT) this.seen.shift();
    this.span = mostOverlapped(this.seen);
    for (const listener of [...this.listeners]) listener();
  }

  phase(): number {
    return (this.waits++ * GOLDEN) % 1;
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Where the most of the intervals (lower, upper] overlap: the latest such span on a tie. */
export function mostOverlapped(intervals: readonly (readonly [number, number])[]): Expected | undefined {
  const points = [...new Set(intervals.flat())].sort((a, b) => a - b);
  let best: Expected | undefined;
  let most = 0;
  for (let i = 0; i + 1 < points.length; i++) {
    const at = points[i]!;
    let covered = 0;
    for (const [lower, upper] of intervals) if (lower <= at && upper > at) covered++;
    if (covered > most || (covered === most && best !== undefined && best.byMs < at)) {
      most = covered;
      best = { fromMs: at, byMs: points[i + 1]! };
    } else if (covered === most && best !== undefined && best.byMs === at) {
      best = { fromMs: best.fromMs, byMs: points[i + 1]! };
    }
  }
  if (!best && intervals.length > 0) {
    // every interval a point (a report ready at its first poll, asked when submitted)
    const at = Math.max(...intervals.map(([, upper]) => upper));
    return { fromMs: at, byMs: at };
  }
  return best;
}

/** Where one wait aims in the expected span: a time drawn in it (over at least its last 40 ms),
 * and its end. */
export interface Aim {
  aimMs: number;
  byMs: number;
}

export function aimIn(span: Expected, random: () => number = Math.random): Aim {
  const { fromMs, byMs } = span;
  return { aimMs: byMs - Math.max(byMs - fromMs, SPREAD_MIN_MS) * random(), byMs };
}

/**
 * The wait before the next poll, the backoff's `delay` bounded by the wait's aim in the expected
 * span: before the aim, the aim; past it, `OVERDUE_FIRST_MS` doubling with each poll since (the
 * `overdue`-th), no later than the span's end while before it, never more than `delay`.
 */
export function boundedDelayMs(delay: number, elapsed: number, aim: Aim | undefined, overdue: number): number {
  if (aim === undefined) return delay;
  if (elapsed < aim.aimMs) return Math.max(0, Math.min(delay, Math.round(aim.aimMs - elapsed)));
  const step = Math.min(delay, OVERDUE_FIRST_MS * 2 ** overdue);
  return elapsed < aim.byMs ? Math.max(0, Math.min(step, Math.round(aim.byMs - elapsed))) : step;
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
  const pace = new Pace(options, signal);
  try {
    for (let polls = 1; ; polls++) {
      const asked = pace.fromSubmit();
      const status = await client.status(id, deadline.signal);
      const elapsed = options.now() - started;
      options.onStatus?.(status, polls, elapsed);
      if (status.status === 'ready') return pace.ready(status);
      if (isFailed(status)) throw reportFailed(id, status);
      const delay = pace.progress(asked, polls);
      if (elapsed + delay > options.maxWaitMs) {
        // one last look at the deadline rather than giving up early
        const remaining = options.maxWaitMs - elapsed;
        if (remaining > 0) {
          await options.sleep(remaining, signal);
          const last = await client.status(id, deadline.signal);
          options.onStatus?.(last, polls + 1, options.now() - started);
          if (last.status === 'ready') return pace.ready(last);
        }
        throw notReady();
      }
      await pace.rest(delay);
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

/** One wait's pace: the backoff, bounded by the kind's expected span, and woken when it moves. */
class Pace {
  /** the expected span bounds the backoff, not a fixed --poll-interval */
  private readonly expected: Expectation | undefined;
  /** the expectation's times count from the submission */
  private readonly since: number;
  /** before any report of the kind was seen, this wait's backoff is scaled by 2^phase */
  private readonly scale: number;
  /** when the last `progress` answer was asked for: the report was not ready then */
  private lower = 0;
  /** polls at or past the aim */
  private overdue = 0;
  private polls = 0;
  /** the aim drawn in the span last seen */
  private aim: { span: Expected; at: Aim } | undefined;

  constructor(private readonly options: PollOptions, private readonly signal: AbortSignal) {
    this.expected = options.intervalMs === undefined ? options.expected : undefined;
    const started = options.now();
    this.since = Math.min(started, options.submittedAt ?? started);
    this.scale = this.expected && this.expected.expected() === undefined ? 2 ** this.expected.phase() : 1;
  }

  fromSubmit(): number {
    return this.options.now() - this.since;
  }

  ready(status: StatusResponse): StatusResponse {
    this.options.expected?.observe(this.lower, this.fromSubmit());
    return status;
  }

  /** A `progress` answer to the poll asked at `asked`: the wait before the next. */
  progress(asked: number, polls: number): number {
    this.lower = asked;
    this.polls = polls;
    const aim = this.aimNow();
    if (aim && asked >= aim.aimMs) this.overdue++;
    return this.delay(false);
  }

  /** The aim in the kind's span, drawn again when the span moved. */
  private aimNow(): Aim | undefined {
    const span = this.expected?.expected();
    if (!span) return undefined;
    if (this.aim?.span !== span) this.aim = { span, at: aimIn(span, this.options.random) };
    return this.aim.at;
  }

  private delay(woken: boolean): number {
    const { options } = this;
    const aim = this.aimNow();
    const fromSubmit = this.fromSubmit();
    // woken past the span: the report is likely ready, ask now (drawn over a few ms)
    if (woken && aim && fromSubmit >= aim.byMs) return Math.round((options.random ?? Math.random)() * WOKEN_SPREAD_MS);
    let backoff = pollDelayMs(this.polls - 1, options.random, options.intervalMs, options.firstMs);
    if (this.scale !== 1) backoff = Math.round(Math.min(POLICY.poll.capMs, backoff * this.scale));
    return boundedDelayMs(backoff, fromSubmit, aim, Math.max(0, this.overdue - 1));
  }

  /** Sleeps `ms`, or less when a report of the kind seen ready meanwhile moves the next poll earlier. */
  async rest(ms: number): Promise<void> {
    const { options, expected, signal } = this;
    if (!expected) return options.sleep(ms, signal);
    let left = ms;
    for (;;) {
      const wake = new AbortController();
      const stop = expected.onChange(() => wake.abort());
      const at = options.now();
      try {
        return await options.sleep(left, AbortSignal.any([signal, wake.signal]));
      } catch (error) {
        if (!wake.signal.aborted || signal.aborted) throw error;
      } finally {
        stop();
      }
      left = Math.max(0, left - (options.now() - at));
      left = Math.min(left, this.delay(true));
    }
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
