// Stage 2, fetch: a window's report started (or resumed), waited for, and downloaded: into a spool
// file (bytes as received, checked by the scanner on the way) that the deliver stage replays in
// order, or, for a run of one report, straight into the destination. Runs under the pool
// (pool.ts: concurrency, throttling, bisection) and the download slots.

import type { ReportingClient } from '../api/client.js';
import type { Summary } from '../api/schemas.js';
import { sinkReceiver, type Receiver, type WindowOutput } from '../destinations/destination.js';
import { InterruptedError, ReportMismatchError } from '../errors.js';
import { openScratchSink } from '../export/sink.js';
import type { Host } from '../host.js';
import { collectGarbage } from '../gc.js';
import type { Expectation, PollOptions } from '../report/poll.js';
import { firstReadyMs, waitUntilReady } from '../report/poll.js';
import { requestParams } from '../report/request.js';
import { summaryMismatch, setsTimeZone } from '../report/summary.js';
import { describeWindow, type Window } from '../report/windows.js';
import { downloadInto } from './download.js';
import type { LogEvent } from './events.js';
import type { Job } from './job.js';
import type { TaskContext } from './pool.js';
import { startReport, type Previous } from './resume.js';

/** A window's report, downloaded: into its spool, or into the destination's output (uncommitted). */
export interface Fetched {
  reportId: string;
  rows: number;
  /** bytes of JSON received */
  bytes: number;
  summary?: Summary;
  /** how long the download took */
  elapsedMs: number;
  spool?: string;
  output?: WindowOutput;
}

/**
 * A window's report is a fraction of the period's, often ready in well under a second: its backoff
 * starts at 250 ms (250, 500 ms, 1, 2, 4, 7.5 s) rather than one report's 1 s. Measured with
 * `npm run bench:chunks` (test/bench/RESULTS.md, "Chunked runs"): 90 one-day windows at
 * concurrency 8 went from 0.21x to 0.16x the time of one 90-day report.
 */
export const WINDOW_FIRST_POLL_MS = 250;

/**
 * Reports run on the server --concurrency at a time, but their downloads are CPU-bound here
 * (scanning JSON) and each holds its buffers: at most two at once. Measured on 1,000,000 rows in
 * 10 windows (test/bench/RESULTS.md, "Chunked runs"): the same wall time as eight at once, and the
 * peak RSS of concurrency 2 instead of growing with --concurrency.
 */
export const MAX_DOWNLOADS = 2;

/** After a window this large is downloaded, and after it is replayed, a full collection: V8 leaves
 * the garbage of a large scan for later, and later is when the next scan adds its own (measured in
 * the same section: 157 MiB without, 142-145 MiB with, for 1,000,000 rows). Small windows skip it. */
export const GC_AFTER_BYTES = 8 << 20;

/** A submit answered within this was sent once: its readiness is counted from when it went out. */
const SUBMIT_SENT_MS = 1_000;

/** How long before a report is expected ready the budget's next window is told (fleet/budget.ts
 * readying): time to write its intent, a state write with fsync, 10-50 ms in a fleet of 300 jobs
 * (npm run bench:fleet), before the slot is free. */
export const INTENT_LEAD_MS = 100;

export interface FetchDeps {
  job: Job;
  poll: PollOptions;
  retries: number;
  random: () => number;
  now: () => number;
  emit(event: LogEvent): void;
  progress(window: Window, rows: number, bytes: number): void;
  /** the client for this task (its retries are this window's events) */
  clientFor(window: Window, ctx: TaskContext): ReportingClient;
  attemptOf(window: Window): number;
  previousOf(window: Window): Previous | undefined;
  /** a submit is about to be made: recorded before it (the state file) */
  intend(window: Window): Promise<void>;
  /** the submit recorded by `intend` never went out (the run was stopped first): its record goes */
  unsent(window: Window): Promise<void>;
  /** a report ID is known: recorded (state, journal) before any wait */
  submitted(window: Window, reportId: string): Promise<void>;
  resumeHint(reportId: string): string;
  /** where the download goes: a spool file, `spoolOf(window)` (its folder made when first asked for), or the
   * destination takes it (`begin`); `whole`: a window not split streams into the destination (a
   * piece of a split window is spooled, so that the window's transaction never starts again from
   * a later piece) */
  into: { spoolOf(window: Window): string; cwd: string; host: Host; whole?(window: Window, origin: Window, reportId: string): Promise<WindowOutput> }
    | { begin(window: Window, origin: Window, reportId: string): Promise<WindowOutput>; file(reportId: string): string | undefined };
  slots: Slots;
  /** what reports like this window's took to become ready (a report submitted by this task only:
   * a resumed one's wait did not start at its submission) */
  expected?(window: Window): Expectation | undefined;
  /** the report's body is all here: the budget's slot can go to the next window now, before the
   * spool is put in place */
  downloaded?(): void;
  /** the report is ready, or about to be: the budget's slot goes on soon; whether a waiting window
   * was told */
  ready?(): boolean;
}

export async function fetchWindow(window: Window, ctx: TaskContext, deps: FetchDeps): Promise<Fetched> {
  const { job } = deps;
  const client = deps.clientFor(window, ctx);
  const previous = deps.previousOf(window);
  if (previous) ctx.reportId(previous.reportId); // known before the status check: the window keeps it if that fails
  let submittedAt: number | undefined;
  const { reportId, resumed } = await startReport(window, previous, deps.attemptOf(window), {
    submit: async () => {
      await deps.intend(window);
      const sent = deps.now();
      const id = await client.submit(job.side, requestParams({ ...job.request, since: window.since, until: window.until })).catch(async (error: unknown) => {
        // stopped as its intent was written (a Ctrl-C as the slot came): nothing went out, and the
        // next run must not warn of a report of unknown ID
        if (error instanceof InterruptedError && error.unsent) await deps.unsent(window).catch(() => undefined);
        throw error;
      });
      // the server's work starts as the request arrives: counted from when it went out, not from
      // its answer (which comes 10-100 ms later in a busy fleet, and by as much varies); a submit
      // retried (a 429, a lost connection) from its answer
      const answered = deps.now();
      submittedAt = answered - sent > SUBMIT_SENT_MS ? answered : sent;
      return id;
    },
    status: (id) => client.status(id),
    emit: deps.emit,
    // the pool knows the ID first: a Ctrl-C while the state file records it still lists the report
    onSubmitted: (id) => {
      ctx.reportId(id);
      return deps.submitted(window, id);
    },
  });
  ctx.reportId(reportId);
  const started = deps.now();
  let polls = 0;
  const expected = resumed ? undefined : deps.expected?.(window);
  // the budget's next window is told a little before this report is expected ready (its intent,
  // a state write with fsync, is then written by the time the slot is free), and at the latest
  // when it is ready
  let told = false;
  const tell = () => {
    // (told once; a tell that found no window waiting is tried again when the report is ready)
    if (!told) told = deps.ready?.() === true;
  };
  const readyFrom = expected && deps.ready ? firstReadyMs(expected) : undefined;
  const early = readyFrom === undefined || submittedAt === undefined ? undefined : setTimeout(tell, Math.max(0, submittedAt + readyFrom - INTENT_LEAD_MS - deps.now()));
  await waitUntilReady(client, reportId, {
    ...deps.poll,
    ...(expected ? { expected, ...(submittedAt === undefined ? {} : { submittedAt }) } : {}),
    signal: ctx.signal,
    resumeHint: deps.resumeHint,
    onStatus: (status, count, elapsed) => {
      polls = count;
      deps.emit({ event: 'polled', window, reportId, status: status.status, polls: count, durationMs: elapsed });
    },
  }).finally(() => clearTimeout(early));
  deps.emit({ event: 'ready', window, reportId, polls, durationMs: deps.now() - started });
  tell();
  return download(window, ctx, reportId, client, deps);
}

async function download(window: Window, ctx: TaskContext, reportId: string, client: ReportingClient, deps: FetchDeps): Promise<Fetched> {
  const { into } = deps;
  const whole = 'spoolOf' in into && into.whole && window.since === ctx.origin.since && window.until === ctx.origin.until ? into.whole : undefined;
  const spool = 'spoolOf' in into && !whole ? into.spoolOf(window) : undefined;
  let output: WindowOutput | undefined;
  let last: Receiver | undefined;
  let commitSpool = async () => undefined as void;
  const open = async (): Promise<Receiver> => {
    if ('begin' in into) return (last = output = await into.begin(window, ctx.origin, reportId));
    if (whole) return (last = output = await whole(window, ctx.origin, reportId));
    // the spool keeps the fields' own names: the merger sums metrics by them (--column-case renames
    // the rows as they reach the output)
    const receiver = sinkReceiver(await openScratchSink(spool as string, into.host), 'json', { ...deps.job.output.csv, columnCase: 'camel' });
    commitSpool = () => receiver.sink.commit();
    return (last = receiver);
  };
  const release = await deps.slots.acquire(ctx.signal);
  const started = deps.now();
  deps.emit({ event: 'download_started', window, reportId, attempt: 1, file: 'begin' in into ? into.file(reportId) : undefined });
  const { result } = await downloadInto(client, reportId, {
    retries: deps.retries,
    signal: ctx.signal,
    random: deps.random,
    sleep: deps.poll.sleep,
    open,
    progress: (rows, bytes) => deps.progress(window, rows, bytes),
    onRetry: (again, reason) => deps.emit({ event: 'retried', window, reportId, attempt: again + 1, message: reason }),
    taken: () => {
      release();
      deps.downloaded?.();
    },
  }).finally(release);
  const mismatch = summaryMismatch(window, deps.job.request.breakdowns, result.summary);
  if (mismatch && setsTimeZone(deps.job.request.extra)) deps.emit({ event: 'warning', window, reportId, message: `${mismatch} (--param sets the time zone)` });
  else if (mismatch) {
    // not this window's report: nothing of it is written
    await last?.abort();
    throw new ReportMismatchError(`report ${reportId} for ${describeWindow(window)}: ${mismatch}`);
  }
  await commitSpool();
  if (result.bytes >= GC_AFTER_BYTES) collectGarbage();
  const elapsedMs = deps.now() - started;
  deps.emit({ event: 'download_done', window, reportId, rows: result.rows, bytes: result.bytes, durationMs: elapsedMs });
  return { reportId, rows: result.rows, bytes: result.bytes, summary: result.summary, elapsedMs, spool, output };
}

/** At most `size` holders at once; the others wait in order (or until their signal aborts). */
export class Slots {
  private free: number;
  private readonly waiting: { granted: () => void; soon?: () => void }[] = [];

  constructor(size: number) {
    this.free = size;
  }

  /** slots free now: an acquire now would not wait */
  get available(): number {
    return this.free;
  }

  /**
   * A holder will release its slot soon (its report is ready, its download begins): the first
   * waiter not told yet is told (its `soon`), so that it can get ready to use the slot meanwhile.
   */
  announce(): boolean {
    const next = this.waiting.find((waiter) => waiter.soon);
    const soon = next?.soon;
    if (!next || !soon) return false;
    next.soon = undefined;
    soon();
    return true;
  }

  /** A slot (`soon`: told when a holder announces that its slot is about to be freed, while this
   * acquire waits; never when a slot is free at once). */
  async acquire(signal: AbortSignal, soon?: () => void): Promise<() => void> {
    if (this.free > 0) this.free--;
    else {
      await new Promise<void>((resolvePromise, reject) => {
        const onAbort = () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(new InterruptedError(String(signal.reason ?? 'SIGINT')));
        };
        const waiter = {
          granted: () => {
            signal.removeEventListener('abort', onAbort);
            resolvePromise();
          },
          soon,
        };
        if (signal.aborted) return onAbort();
        this.waiting.push(waiter);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.granted();
      else this.free++;
    };
  }
}
