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
// at most 7.9 s after it becomes ready, and a 60 s report waited for alone takes at most 12 status
// requests (11 sleeps cover >= 63.6 s). Reports of a kind already seen are asked more often around
// the time the others became ready, and not before half the earliest of them (Readiness, below):
// one ready before that is noticed there.
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
  /** the readiness seen (counted from the submission), as Turnbull's cells in time order; empty
   * before a report of the kind was seen */
  cells(): readonly Cell[];
  /** a report was still in progress when asked at `lowerMs` (0: never asked), ready at `upperMs` */
  observe(lowerMs: number, upperMs: number): void;
  /** a new wait's phase in [0, 1): 0 for the process's first, then spread by the golden ratio (over
   * every kind), so that the waits of kinds not yet seen poll at times that interleave rather than coincide */
  phase(): number;
  /** `listener` is called when the kind's first report is seen ready (`own`), and, while the kind
   * is not seen yet, when another kind's first is (which was still in progress at `fromMs` after
   * its submission); returns how to stop */
  onFirst(listener: (sighting: Sighting) => void): () => void;
}

/** The first report of a kind seen ready: of the listener's own kind, or of another, which had
 * been in progress `fromMs` from its submission. */
export interface Sighting {
  own: boolean;
  fromMs: number;
}

/** A span of the readiness seen, (fromMs, byMs], and the share of reports ready in it. */
export interface Cell {
  fromMs: number;
  byMs: number;
  mass: number;
}

/** The last readiness intervals kept for a kind of report: recent enough to follow a platform
 * slowing down, enough that one odd report does not move the estimate. */
const READINESS_KEPT = 32;
/** Past the aim, a report still in progress is asked again after 50 ms, then 100, 200 ms..., never
 * more rarely than the backoff would: a report slightly slower than the aim is noticed within a
 * step, and one much slower is back on the backoff after a few. */
const OVERDUE_FIRST_MS = 50;
/** Between a wait's aims, a fifth of the kind's reports, and at least 20 ms. */
const QUANTILE_STEP = 0.2;
const STEP_MIN_MS = 20;
/** Aims into a span narrower than this are drawn over its last 40 ms: reports submitted together
 * are not asked about in one burst. */
const SPREAD_MIN_MS = 40;
/** A wait woken past the first report seen polls within this (drawn): the woken do not ask at once. */
const WOKEN_SPREAD_MS = 20;
const GOLDEN = (Math.sqrt(5) - 1) / 2;

/**
 * When the reports of each kind (the engine's key: side, breakdowns, window length) become ready,
 * learned from the waits of one process. Each wait that ends says its report became ready in
 * (its last `progress` answer, its `ready` one]. From the kind's last 32 such intervals, Turnbull's
 * estimate (the maximum-likelihood distribution of interval-censored times) says how the readiness
 * is spread; a wait looks once early (EARLY_LOOK_SHARE), aims at a quantile drawn in its lower
 * half, then asks again after 50 ms, 100 ms..., never later than the backoff would. Reports that
 * take the same time have their intervals overlap in one span, which each wait's aim splits;
 * reports whose times vary are aimed at across their spread. A slower estimate than the truth
 * costs a few polls; a report faster than those seen is noticed at the early look or the aim, no
 * later than its kind's usual time (the backoff's polls before them are not made).
 *
 * Before any report of a kind was seen, its waits poll on the backoff scaled by 2^phase (phases
 * spread by the golden ratio over every kind's waits), so that together they ask at interleaving
 * times; the first report seen ready wakes the others, which ask at once if they are past it, or
 * aim then. It also wakes the waits of the kinds not seen yet: each asks once, within a few ms, if
 * it has run as long as that report had when still in progress (a fleet's first reports, of a few
 * kinds submitted together, end together), and rests on otherwise.
 */
export class Readiness {
  private readonly kinds = new Map<string, KindReadiness>();
  private waits = 0;

  of(name: string): Expectation {
    const kind = this.kinds.get(name) ?? this.add(name);
    return {
      cells: () => kind.cells,
      observe: (lowerMs, upperMs) => kind.observe(lowerMs, upperMs),
      phase: () => (this.waits++ * GOLDEN) % 1,
      onFirst: (listener) => kind.listen(listener),
    };
  }

  private add(name: string): KindReadiness {
    const kind: KindReadiness = new KindReadiness((lowerMs) => this.sighted(kind, lowerMs));
    this.kinds.set(name, kind);
    return kind;
  }

  /** A kind's first report seen ready: the waits of the kinds not seen yet are told too (reports
   * submitted together often end together: each asks once if it has run as long). */
  private sighted(kind: KindReadiness, fromMs: number): void {
    for (const other of this.kinds.values()) if (other !== kind && other.cells.length === 0) other.tell({ own: false, fromMs });
  }
}

class KindReadiness {
  private readonly seen: [number, number][] = [];
  cells: Cell[] = [];
  private readonly listeners = new Set<(sighting: Sighting) => void>();

  constructor(private readonly onFirstSeen: (lowerMs: number) => void) {}

  observe(lowerMs: number, upperMs: number): void {
    if (!(upperMs > lowerMs) || lowerMs < 0) return;
    const first = this.seen.length === 0;
    this.seen.push([lowerMs, upperMs]);
    if (this.seen.length > READINESS_KEPT) this.seen.shift();
    this.cells = readinessCells(this.seen);
    if (!first) return;
    this.tell({ own: true, fromMs: lowerMs });
    this.onFirstSeen(lowerMs);
  }

  /** Each listener told once (a wait listens again if it goes on sleeping). */
  tell(sighting: Sighting): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(sighting);
  }

  listen(listener: (sighting: Sighting) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/**
 * Turnbull's estimate: the spans where intervals (lower, upper] meet (a lower end followed by an
 * upper end in the sorted ends), each with the share of reports that maximises the likelihood of
 * the intervals seen (its self-consistent fixed point, by EM), in time order; spans of no share left out.
 */
export function readinessCells(intervals: readonly (readonly [number, number])[]): Cell[] {
  const ends = intervals.flatMap(([lower, upper]) => [{ at: lower, lower: true }, { at: upper, lower: false }]);
  // (lower, upper] holds no time at its lower end: on a tie an upper end comes first
  ends.sort((x, y) => x.at - y.at || Number(x.lower) - Number(y.lower));
  const spans: [number, number][] = [];
  for (let i = 0; i + 1 < ends.length; i++) if (ends[i]!.lower && !ends[i + 1]!.lower) spans.push([ends[i]!.at, ends[i + 1]!.at]);
  const within = intervals.map(([lower, upper]) => spans.flatMap(([from, by], j) => (lower <= from && by <= upper ? [j] : [])));
  let mass = spans.map(() => 1 / spans.length);
  for (let round = 0; round < 50; round++) {
    const next = spans.map(() => 0);
    for (const js of within) {
      let total = 0;
      for (const j of js) total += mass[j]!;
      if (total > 0) for (const j of js) next[j]! += mass[j]! / total / intervals.length;
    }
    const moved = next.reduce((most, value, j) => Math.max(most, Math.abs(value - mass[j]!)), 0);
    mass = next;
    if (moved < 1e-3) break;
  }
  return spans.flatMap(([fromMs, byMs], j) => (mass[j]! > 1e-3 ? [{ fromMs, byMs, mass: mass[j]! }] : []));
}

/** The time at quantile `p` of the cells: linear within the cell it falls in, which is returned too. */
export function quantileMs(cells: readonly Cell[], p: number): { atMs: number; cell: Cell } {
  const total = cells.reduce((sum, cell) => sum + cell.mass, 0);
  let below = 0;
  for (const cell of cells) {
    if ((below + cell.mass) / total >= p) {
      const within = Math.min(1, Math.max(0, (p * total - below) / cell.mass));
      return { atMs: cell.fromMs + (cell.byMs - cell.fromMs) * within, cell };
    }
    below += cell.mass;
  }
  const last = cells.at(-1)!;
  return { atMs: last.byMs, cell: last };
}

/**
 * When a wait aiming at quantile `first` of the cells asks next, counted from the submission, after
 * `made` polls at or past its aims (the last answered at `lastMs`): first at that quantile (drawn
 * over the last 40 ms of a cell narrower than that: reports submitted together are not asked about
 * at one instant); after each `progress`, a fifth of the reports later (at least 20 ms after the
 * last answer); past the last cell, 50 ms after the last answer, doubling. (From the answer, not
 * the ask: a status answer slower than the step would make the polls back to back.)
 */
export function aimMs(cells: readonly Cell[], first: number, made: number, lastMs: number, draw: number): number {
  if (made === 0) {
    const { atMs, cell } = quantileMs(cells, first);
    return Math.round(cell.byMs - cell.fromMs < SPREAD_MIN_MS ? cell.byMs - SPREAD_MIN_MS * draw : atMs);
  }
  const p = first + made * QUANTILE_STEP;
  if (p < 1) return Math.round(Math.max(quantileMs(cells, p).atMs, lastMs + STEP_MIN_MS));
  const past = made - Math.ceil((1 - first) / QUANTILE_STEP);
  return Math.round(Math.max(cells.at(-1)!.byMs, lastMs) + OVERDUE_FIRST_MS * 2 ** Math.max(0, past));
}

/** When reports of a kind begin to be ready, counted from the submission: the readiness seen's
 * lowest aim (quantile 0.05), or undefined before one was seen. */
export function firstReadyMs(expected: Expectation): number | undefined {
  const cells = expected.cells();
  return cells.length ? quantileMs(cells, AIM_QUANTILES[0]).atMs : undefined;
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
  // the wait's signal: Ctrl-C or the deadline
  const either = new AbortController();
  const unfollow = follow(options.signal, either);
  follow(deadline.signal, either);
  const signal = either.signal;
  const pace = new Pace(options, signal);
  try {
    // (never past --max-wait: a kind seen late in another job's longer wait cannot skip this one's asks)
    const first = Math.min(pace.firstRest(), Math.max(0, options.maxWaitMs - (options.now() - started)));
    if (first > 0) await pace.rest(first);
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
    unfollow();
  }
}

/** Aborts `controller` (with the reason) when `signal` aborts, until the answer is called. Not
 * AbortSignal.any: on Node 20 each leaves an entry on the long-lived signal, one per report of a
 * fleet. */
function follow(signal: AbortSignal, controller: AbortController): () => void {
  const relay = () => controller.abort(signal.reason);
  if (signal.aborted) relay();
  else signal.addEventListener('abort', relay, { once: true });
  return () => signal.removeEventListener('abort', relay);
}

/** A wait aims at a quantile of the readiness seen drawn in [0.05, 0.5]: a report is more often
 * asked a little before it is ready than noticed late, and the waits' aims spread over the kind's
 * readiness where it varies. */
const AIM_QUANTILES = [0.05, 0.5] as const;

/** Before its first aim, a wait of a kind seen asks once, at this share of the earliest time a
 * report of the kind was seen ready: a report much faster than those seen is noticed there, and
 * the polls the backoff would make before (at once, 0.25 s, 0.5 s, 1 s... of a report that takes
 * 3 s: three of its five) are not made. */
const EARLY_LOOK_SHARE = 0.5;

/** One wait's pace: the backoff, bounded by its aims in the readiness seen of its kind; before
 * the first aim, one early look. */
class Pace {
  /** the expectation bounds the backoff, not a fixed --poll-interval */
  private readonly expected: Expectation | undefined;
  /** the expectation's times count from the submission */
  private readonly since: number;
  /** before any report of the kind was seen, this wait's backoff is scaled by 2^phase */
  private readonly scale: number;
  /** this wait's first quantile, and its draw within a narrow cell */
  private readonly first: number;
  private readonly draw: number;
  /** when the last `progress` answer was asked for: the report was not ready then */
  private lower = 0;
  /** when it came: the next poll's aim is at least a step after it */
  private answered = 0;
  /** polls made at or past the wait's aims */
  private made = 0;
  private polls = 0;

  constructor(private readonly options: PollOptions, private readonly signal: AbortSignal) {
    this.expected = options.intervalMs === undefined ? options.expected : undefined;
    const started = options.now();
    this.since = Math.min(started, options.submittedAt ?? started);
    const random = options.random ?? Math.random;
    this.first = this.expected ? AIM_QUANTILES[0] + (AIM_QUANTILES[1] - AIM_QUANTILES[0]) * random() : 0;
    this.draw = this.expected ? random() : 0;
    this.scale = this.expected && !this.seen() ? 2 ** this.expected.phase() : 1;
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
    const aim = this.aim();
    this.lower = asked;
    this.answered = this.fromSubmit();
    this.polls = polls;
    if (aim !== undefined && asked >= aim - 1) this.made++;
    return this.delay(false);
  }

  private seen(): boolean {
    return (this.expected?.cells().length ?? 0) > 0;
  }

  /** When a wait of a kind seen looks early (EARLY_LOOK_SHARE), counted from the submission. */
  private earlyLook(): number {
    const cells = this.expected?.cells();
    return cells?.length ? Math.round(EARLY_LOOK_SHARE * (cells[0] as Cell).fromMs) : 0;
  }

  /** The rest before the first ask: none before any report of the kind was seen (the backoff asks
   * at once); after, until the early look or the aim, whichever comes first. */
  firstRest(): number {
    const aim = this.aim();
    return aim === undefined ? 0 : Math.max(0, Math.min(this.earlyLook(), aim) - this.fromSubmit());
  }

  private aim(): number | undefined {
    const cells = this.expected?.cells();
    return cells?.length ? aimMs(cells, this.first, this.made, this.answered, this.draw) : undefined;
  }

  /** A woken wait's rest before it asks: drawn over a few ms, so that the woken do not ask at once. */
  private spread(): number {
    return Math.max(1, Math.round((this.options.random ?? Math.random)() * WOKEN_SPREAD_MS));
  }

  private delay(woken: boolean): number {
    const { options } = this;
    const aim = this.aim();
    const fromSubmit = this.fromSubmit();
    // woken past the first report seen: this one is likely ready, ask now (drawn over a few ms)
    if (woken && aim !== undefined && fromSubmit >= aim) return this.spread();
    const firstMs = (options.firstMs ?? POLICY.poll.firstMs) * this.scale;
    const backoff = pollDelayMs(this.polls - 1, options.random, options.intervalMs, firstMs);
    if (aim === undefined) return backoff;
    const toAim = Math.max(1, Math.ceil(aim - fromSubmit));
    if (this.made > 0) return Math.min(backoff, toAim);
    // before its first aim: the early look, if not made yet, then the aim, asking at least as often
    // as the backoff's longest wait (7.5 s) once past the early look
    const toEarlyLook = Math.ceil(this.earlyLook() - fromSubmit);
    return toEarlyLook > 0 ? Math.min(toAim, toEarlyLook) : Math.min(toAim, POLICY.poll.capMs);
  }

  /** Sleeps `ms`; before any report of the kind was seen, less when the first is seen meanwhile. */
  async rest(ms: number): Promise<void> {
    const { options, expected, signal } = this;
    if (!expected || signal.aborted || this.seen()) return options.sleep(ms, signal);
    const wake = new AbortController();
    const unfollow = follow(signal, wake);
    let woken: Sighting | undefined;
    const stop = expected.onFirst((sighting) => {
      woken = sighting;
      wake.abort();
    });
    const at = options.now();
    try {
      return await options.sleep(ms, wake.signal);
    } catch (error) {
      if (!woken || signal.aborted) throw error;
    } finally {
      unfollow();
      stop();
    }
    const left = Math.max(0, ms - (options.now() - at));
    if (woken.own) return options.sleep(Math.min(left, this.delay(true)), signal);
    // another kind's first report seen: this one asks soon (drawn over a few ms) if it has run at
    // least as long as that one had when still in progress, else rests on, listening
    return this.rest(this.fromSubmit() >= woken.fromMs ? Math.min(left, this.spread()) : left);
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
