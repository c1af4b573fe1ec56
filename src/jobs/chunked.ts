// `run --chunk` (issue 13): the period cut into windows, one report each, run by the pool
// (pool.ts) at most N at once, merged (merge.ts) into one output in chronological order, or written
// one file per window when -o holds {since}/{until}.
//
// Each window's report is downloaded into a spool file (bytes as received, checked by the scanner
// on the way) and replayed into the output when its turn comes: the pool may finish windows out of
// order, and memory must not grow with the number of windows. Outputs are sinks (src/export/sink.ts):
// a file appears whole when its last row is written, or not at all.
//
// With --state (issue 14) the same loop is a recurring job: the state file says which windows are
// done (skipped), which were submitted by an interrupted run (resumed by report ID), which failed
// (retried); each change is recorded as it happens. Without it, the journal (journal.ts) remembers
// the report of each window for an hour, so a run started again resumes instead of resubmitting.

import { AsyncLocalStorage } from 'node:async_hooks';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { configDir, refuseTokenStore } from '../auth/store.js';
import { sleepFor } from '../api/http.js';
import { CliError, EXIT, InterruptedError, ReportError, UsageError } from '../errors.js';
import { RowOutput } from '../export/export.js';
import { type OutputPlan } from '../export/output.js';
import { openFileSink, stdoutSink, type PlaceFile, type Sink } from '../export/sink.js';
import type { Summary } from '../api/schemas.js';
import type { Factory } from '../factory.js';
import { safeText } from '../io/safe-text.js';
import { collectGarbage } from '../gc.js';
import { shellCommand } from '../io/shell.js';
import { createWindowsView } from '../io/windows-view.js';
import type { JobFlags } from '../cli/options.js';
import type { Side } from '../report/catalog.js';
import { pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';
import { requestParams, type ReportRequest } from '../report/request.js';
import { parisDate } from '../report/time.js';
import { downloadReport, targetOf } from './download.js';
import { replaceIfChanged, type Replaced } from './files.js';
import { Journal, journalKey, journalRequestOf } from './journal.js';
import { startReport, type Previous } from './resume.js';
import { RunState, stateRequestOf, type Step } from './state.js';
import { WindowMerger, mergePlan, type MergePlan } from './merge.js';
import { describeFailure, interruptedHint, isLastPiece, isReportFailure, runWindows, type TaskContext, type WindowFailureReport } from './pool.js';
import { checkChunk, checkDistinctTargets, formatChunk, parseChunk, planWindows, splitWindow, timeBreakdown, windowArgs, type Window } from './windows.js';

export interface ChunkFlags {
  chunk: string;
  concurrency: number;
  /** false with --no-split */
  split: boolean;
}

export interface ChunkedRun {
  side: Side;
  request: ReportRequest;
  plan: OutputPlan;
  wait: WaitFlags;
  /** undefined: the period is one window (a --state run without --chunk) */
  flags?: ChunkFlags;
  jobs: JobFlags;
  /** the command line as typed (after `reporting`), for the command that retries failed windows */
  argv: readonly string[];
}

/** A window's report, downloaded into its spool file. */
interface Fetched {
  reportId: string;
  spool: string;
  rows: number;
  bytes: number;
}

/** One output being written: the merged one, or one planned window's file. */
interface Open {
  output: RowOutput;
  merger: WindowMerger;
  rows: number;
  reportIds: string[];
  /** how the file was put in place (with --state: written, or unchanged), once it is */
  whenPlaced: () => Replaced | undefined;
  /** the windows replayed into it (a split window's pieces) */
  pieces: Window[];
}

const PER_WINDOW = /\{(since|until)\}/;

/**
 * A window's report is a fraction of the period's, often ready in well under a second: its backoff
 * starts at 250 ms (250, 500 ms, 1, 2, 4, 7.5 s) rather than one report's 1 s. Measured with
 * `npm run bench:chunks` (test/bench/RESULTS.md, "Chunked runs"): 90 one-day windows at
 * concurrency 8 went from 0.21x to 0.16x the time of one 90-day report.
 */
const WINDOW_FIRST_POLL_MS = 250;

/**
 * Reports run on the server --concurrency at a time, but their downloads are CPU-bound here
 * (scanning JSON) and each holds its buffers: at most two at once. Measured on 1,000,000 rows in
 * 10 windows (test/bench/RESULTS.md, "Chunked runs"): the same wall time as eight at once, and the
 * peak RSS of concurrency 2 instead of growing with --concurrency.
 */
const MAX_DOWNLOADS = 2;
/** After a window this large is downloaded, and after it is replayed, a full collection: V8 leaves
 * the garbage of a large scan for later, and later is when the next scan adds its own (measured in
 * the same section: 157 MiB without, 142-145 MiB with, for 1,000,000 rows). Small windows skip it. */
const GC_AFTER_BYTES = 8 << 20;

/** At most `size` holders at once; the others wait in order (or until their signal aborts). */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async acquire(signal: AbortSignal): Promise<() => void> {
    if (this.free > 0) this.free--;
    else {
      await new Promise<void>((resolvePromise, reject) => {
        const onAbort = () => {
          const at = this.waiting.indexOf(granted);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(new InterruptedError(String(signal.reason ?? 'SIGINT')));
        };
        const granted = () => {
          signal.removeEventListener('abort', onAbort);
          resolvePromise();
        };
        if (signal.aborted) return onAbort();
        this.waiting.push(granted);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

/** The command line that retries only `window`: the same arguments, its --since and --until. */
export function retryCommand(argv: readonly string[], window: Window): string {
  const args = windowArgs(window);
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    const flag = /^--(since|until)(=.*)?$/.exec(word);
    if (!flag) {
      words.push(word);
      continue;
    }
    if (flag[2] === undefined) i++; // its value is the next word
  }
  return shellCommand(['reporting', ...words, '--since', args.since, '--until', args.until]);
}

export async function runChunked(run: ChunkedRun, f: Factory): Promise<void> {
  const { request, plan, flags, jobs } = run;
  // everything the flags say is checked before the state file is locked
  const chunk = flags ? parseChunk(flags.chunk) : undefined;
  if (chunk) checkChunk(chunk, request.breakdowns);
  if (!jobs.state) return runWindowsOf(run, f, undefined, request.since, undefined);
  const path = resolve(f.cwd, jobs.state);
  refuseTokenStore(path, f.cwd, f.env, f.host.platform);
  const output = plan.template === undefined ? undefined : resolve(f.cwd, plan.template);
  if (!flags && jobs.lookbackDays > 0 && plan.template !== undefined && PER_WINDOW.test(plan.template)) {
    // each run's period would be its own file, and a re-fetched day would sit in two of them
    throw new UsageError('--lookback with one file per run period would write the days it re-fetches into two files', 'add --chunk day, so that each day has one file, or write one file without {since}/{until}');
  }
  const state = RunState.open(path, stateRequestOf(request, plan.format, output, chunk ? formatChunk(chunk) : null), { now: f.now, host: f.host, fullRefresh: jobs.fullRefresh });
  try {
    const start = state.start(jobs.sinceAuto ? 'auto' : request.since, request.until, jobs.lookbackDays);
    // a start inside a recorded window (the lookback's days, a --since in mid-week) starts at that
    // window, so that windows stay on the grid they were recorded on: no day in two files
    start.since = state.windowStartOf(start.since);
    if (start.upToDate) {
      const view = await createWindowsView(f, { format: jobs.logFormat, quiet: f.globals.quiet, side: run.side, total: 0, secrets: f.secrets });
      view.note(`${run.side}: nothing to fetch: every window up to ${parisDate(request.until)} is done (${jobs.state})`);
      if (f.globals.json) f.stdout.write(`${JSON.stringify(upToDate(run.side, plan))}\n`);
      return;
    }
    await runWindowsOf(run, f, state, start.since, start.lookbackFrom);
  } finally {
    await state.close();
  }
}

/** What to do with each planned window: collapsed from the state's steps (a window split by an
 * earlier run is skipped if all its pieces are done, resumed if it is one submitted report,
 * submitted whole otherwise). */
interface Planned {
  window: Window;
  skip?: Step & { action: 'skip' };
  previous?: Previous;
}

function collapse(windows: readonly Window[], steps: readonly Step[]): Planned[] {
  return windows.map((window) => {
    const mine = steps.filter((step) => step.window.since >= window.since && step.window.until <= window.until);
    if (mine.length > 0 && mine.every((step) => step.action === 'skip')) return { window, skip: mine[0] as Step & { action: 'skip' } };
    const only = mine.length === 1 ? mine[0] : undefined;
    if (only?.action === 'resume' && only.window.since === window.since && only.window.until === window.until) {
      return { window, previous: { reportId: only.reportId, source: 'state' } };
    }
    return { window };
  });
}

async function runWindowsOf(run: ChunkedRun, f: Factory, state: RunState | undefined, since: number, lookbackFrom: number | undefined): Promise<void> {
  const { side, request, plan, jobs } = run;
  const flags: ChunkFlags = run.flags ?? { chunk: '', concurrency: 1, split: false };
  const chunk = run.flags ? parseChunk(run.flags.chunk) : undefined;
  const planned = chunk ? planWindows(since, request.until, chunk) : [{ since, until: request.until }];
  const template = plan.template;
  const perWindow = template !== undefined && PER_WINDOW.test(template);
  if (template?.includes('{reportId}')) {
    throw new UsageError('with --chunk, -o takes {side}, {since} and {until}, not {reportId} (a window may take several reports)', "write one file per window with -o 'out-{since}.csv'");
  }
  // the pieces of a split window go to one output, summed back where they cut a bucket
  const merge: MergePlan = perWindow && !flags.split
    ? { mode: 'concat', time: timeBreakdown(request.breakdowns) }
    : mergePlan(side, request.metrics, request.breakdowns, { split: flags.split });
  const targetFor = (w: Window) => targetOf(plan, { side, since: parisDate(w.since), until: parisDate(w.until) }) as string;
  if (perWindow) {
    checkDistinctTargets(planned, targetFor);
    for (const w of planned) refuseTokenStore(targetFor(w), f.cwd, f.env, f.host.platform);
  } else if (template) refuseTokenStore(template, f.cwd, f.env, f.host.platform);

  // the state's verdict on each window; one merged output is rewritten whole, so it skips all or none
  const steps = state?.plan(planned, { lookbackFrom, merged: !perWindow });
  const plannedSteps = steps ? collapse(planned, steps) : planned.map((window) => ({ window }) as Planned);
  const windows = plannedSteps.filter((p) => !p.skip).map((p) => p.window);
  const previousOf = new Map(plannedSteps.filter((p) => p.previous).map((p) => [keyOfWindow(p.window), p.previous as Previous]));

  const client = f.client();
  const view = await createWindowsView(f, {
    format: jobs.logFormat, quiet: f.globals.quiet, side, total: planned.length, secrets: f.secrets,
  });
  for (const p of plannedSteps) {
    if (!p.skip) continue;
    view.skip(p.window);
    view.emit({ event: 'skipped', window: p.window, reportId: p.skip.entry.reportId ?? undefined, file: p.skip.entry.file ?? undefined, reason: 'done' });
  }
  if (state) await state.pending(windows);
  // without a state file, the journal remembers each window's report for an hour
  // (with --no-resume it is still written: the report submitted now replaces an older one)
  const journal = !state ? new Journal(configDir(f.env, f.host.platform), f.now) : undefined;
  const journalKeyOf = (window: Window) => journalKey(journalRequestOf({ ...request, since: window.since, until: window.until }, f.baseUrl().url, f.profileName));
  const recall = (window: Window): Previous | undefined => {
    if (!jobs.resume) return undefined;
    const recorded = previousOf.get(keyOfWindow(window));
    if (recorded) return recorded;
    const remembered = journal?.recall(journalKeyOf(window));
    return remembered ? { reportId: remembered.reportId, source: 'journal' } : undefined;
  };
  const forget = (window: Window) => journal?.forget(journalKeyOf(window));
  const poll = pollOptionsFrom(run.wait, f);
  const spoolDir = mkdtempSync(join(tmpdir(), 'reporting-spool-'));
  // a 429 retried inside the HTTP client slows the pool at once: told to the task that met it
  const currentTask = new AsyncLocalStorage<{ ctx: TaskContext; window: Window }>();
  client.http.onThrottle = (retryAfterMs) => currentTask.getStore()?.ctx.throttled(retryAfterMs);
  // a request retried inside the HTTP client is an event of the window it serves (a JSON log line
  // with --log-format json; the factory's text line otherwise)
  const textRetry = client.http.onRetry;
  client.http.onRetry = (line, retry) => {
    const task = currentTask.getStore();
    if (jobs.logFormat === 'json' && task) view.emit({ event: 'retried', window: task.window, reportId: reportOf.get(keyOfWindow(task.window)), attempt: retry.attempt, message: line, delayMs: retry.delayMs });
    else if (jobs.logFormat === 'text') textRetry?.(line, retry);
  };

  // the report of each window, for the lines of the pool's events (split, failed)
  const reportOf = new Map<string, string>();
  const keyOf = keyOfWindow;
  const downloads = new Slots(MAX_DOWNLOADS);
  const fetchWindow = async (window: Window, ctx: TaskContext): Promise<Fetched> => {
    const attempt = (state?.entry(window)?.attempts ?? 0) + 1;
    const previous = recall(window);
    // known before the status check: if the network fails there, the window keeps its report
    if (previous) reportOf.set(keyOf(window), previous.reportId);
    const { reportId } = await startReport(window, previous, attempt, {
      submit: () => client.submit(side, requestParams({ ...request, since: window.since, until: window.until })),
      status: (id) => client.status(id),
      emit: (event) => view.emit(event),
      async onSubmitted(id) {
        await state?.submitted(window, id);
        // the journal is a convenience: a run does not fail because it cannot write it
        await journal?.remember(journalKeyOf(window), id).catch((error: unknown) => f.trace?.(`  journal not written: ${messageOf(error)}`));
      },
    });
    ctx.reportId(reportId);
    reportOf.set(keyOf(window), reportId);
    const started = f.now();
    let polls = 0;
    await waitUntilReady(client, reportId, {
      ...poll,
      firstMs: WINDOW_FIRST_POLL_MS,
      signal: ctx.signal,
      resumeHint: (id) => `pick it up later with: ${shellCommand(['reporting', 'download', id, '--wait'])} -o FILE`,
      onStatus: (status, count, elapsed) => {
        polls = count;
        view.emit({ event: 'polled', window, reportId, status: status.status, polls: count, durationMs: elapsed });
      },
    });
    view.emit({ event: 'ready', window, reportId, polls, durationMs: f.now() - started });
    const spool = join(spoolDir, `${window.since}-${window.until}.json`);
    const release = await downloads.acquire(ctx.signal);
    const downloadStarted = f.now();
    view.emit({ event: 'download_started', window, reportId, attempt: 1 });
    const result = await downloadReport(client, reportId, {
      format: 'json',
      csv: plan.csv,
      retries: f.globals.retries,
      signal: ctx.signal,
      random: f.random,
      openSink: () => openFileSink(spool, f),
      progress: (rows, bytes) => view.progress(window, rows, bytes),
      onRetry: (again, reason) => view.emit({ event: 'retried', window, reportId, attempt: again + 1, message: reason }),
    }).finally(release);
    if (result.bytes >= GC_AFTER_BYTES) collectGarbage();
    view.emit({ event: 'download_done', window, reportId, rows: result.rows, bytes: result.bytes, durationMs: f.now() - downloadStarted });
    return { reportId, spool, rows: result.rows, bytes: result.bytes };
  };

  const opened = new Map<number, Open>();
  // with a state file, a file whose content did not change is left untouched (and the log says so)
  const openTarget = async (target: string): Promise<{ sink: Sink; placed: () => Replaced | undefined }> => {
    let placed: Replaced | undefined;
    const place: PlaceFile | undefined = state ? async (temp, path) => { placed = await replaceIfChanged(temp, path); } : undefined;
    return { sink: await openFileSink(target, f, place), placed: () => placed };
  };
  const openOutput = async (target: string | undefined): Promise<Open> => {
    const { sink, placed } = target ? await openTarget(target) : { sink: stdoutSink(f.stdout), placed: () => undefined };
    const output = await RowOutput.open(sink, plan.format, plan.csv);
    const open = { output, rows: 0, reportIds: [] as string[], pieces: [] as Window[], whenPlaced: placed };
    // rows counted as written: summing (RANGE) writes fewer than it reads
    const merger = new WindowMerger(merge, {
      row(keys, values, kinds, raw) {
        open.rows++;
        output.writer.row(keys, values, kinds, raw);
      },
    });
    return Object.assign(open, { merger });
  };
  // a window's spool replayed into its output, then removed
  const replay = async (open: Open, window: Window, origin: Window, fetched: Fetched) => {
    const handler = open.merger.begin(window, origin);
    const scanner = await open.output.replay(createReadStream(fetched.spool), handler);
    open.merger.end(window, scanner.members.summary as Summary | undefined);
    open.reportIds.push(fetched.reportId);
    open.pieces.push(window);
    await unlink(fetched.spool).catch(() => undefined);
    if (fetched.bytes >= GC_AFTER_BYTES) collectGarbage();
  };
  // closes an output: what summing held, then the tail, then the file appears
  const close = async (open: Open) => {
    open.merger.finish();
    await open.output.close(open.merger.summary());
  };

  let merged: Open | undefined;
  // rows of each window delivered, for the state file (a merged output records its windows when it is whole)
  const mergedWindows: { window: Window; rows: number }[] = [];
  const written: { window: Window; file: string; rows: number; reportIds: string[]; outcome: 'written' | 'unchanged' }[] = [];
  /** a file is in place: say how, and record it */
  const placedFile = async (window: Window, file: string, open: Open, rows: number, covered: readonly { window: Window; rows: number }[]) => {
    const placed = open.whenPlaced();
    const reportId = open.reportIds.length === 1 ? open.reportIds[0] : undefined;
    const absolute = resolve(f.cwd, file);
    const bytes = placed?.bytes ?? statSync(absolute).size;
    if (placed?.outcome === 'unchanged') view.emit({ event: 'unchanged', window, reportId, file, rows, bytes, sha256: placed.sha256 });
    else view.emit({ event: 'written', window, reportId, file, rows, bytes, sha256: placed?.sha256 });
    for (const piece of covered) {
      await state?.done(piece.window, { rows: piece.rows, bytes, sha256: placed?.sha256 ?? null, file: absolute });
      forget(piece.window);
    }
    for (const piece of open.pieces) forget(piece);
    // one file rewritten whole: the windows recorded in it before and not now are not in it
    if (covered.length > 1 || !perWindow) await state?.rewritten(absolute, covered.map((piece) => piece.window));
    return placed?.outcome ?? 'written';
  };
  const deliver = async (window: Window, fetched: Fetched, origin: Window) => {
    if (!perWindow) {
      merged ??= await openOutput(template);
      const before = merged.rows;
      await replay(merged, window, origin, fetched);
      mergedWindows.push({ window, rows: merged.rows - before });
      return;
    }
    let open = opened.get(origin.since);
    if (!open) {
      open = await openOutput(targetFor(origin));
      opened.set(origin.since, open);
    }
    await replay(open, window, origin, fetched);
    if (isLastPiece(window, origin)) {
      opened.delete(origin.since);
      await close(open);
      const file = targetFor(origin);
      const outcome = await placedFile(origin, file, open, open.rows, [{ window: origin, rows: open.rows }]);
      written.push({ window: origin, file, rows: open.rows, reportIds: open.reportIds, outcome });
    }
  };

  let failed = false;
  try {
    const outcome = await runWindows(windows, (window, ctx) => currentTask.run({ ctx, window }, () => fetchWindow(window, ctx)), {
      concurrency: flags.concurrency,
      split: flags.split ? (w) => splitWindow(w, request.breakdowns) : undefined,
      delivery: perWindow ? 'per-window' : 'merged',
      failFast: !perWindow,
      signal: f.signal,
      now: f.now,
      sleep: sleepFor,
      random: f.random,
      deliver,
      onEvent(event) {
        view.pool(event);
        if (event.type === 'split') {
          view.emit({ event: 'split', window: event.window, reportId: reportOf.get(keyOf(event.window)), into: event.into, message: messageOf(event.error) });
          forget(event.window);
          void state?.split(event.window, event.into).catch(() => undefined);
        } else if (event.type === 'failed') {
          const reportId = reportOf.get(keyOf(event.window));
          view.emit({ event: 'failed', window: event.window, reportId, message: messageOf(event.error) });
          // a report that ended in failure is not worth resuming; one that was still running when
          // the wait gave up (--max-wait, the network) is: the next run resumes it
          if (f.signal.aborted) return;
          if (reportId !== undefined && !isReportFailure(event.error)) {
            void state?.update(event.window, { error: messageOf(event.error) }).catch(() => undefined);
          } else {
            forget(event.window);
            void state?.failed(event.window, messageOf(event.error)).catch(() => undefined);
          }
        }
      },
    });
    view.stop();
    if (outcome.aborted) {
      failed = true;
      const next = state ? 'the next run with this --state resumes them; or ' : journal && jobs.resume ? 'the same command run again within the hour resumes them; or ' : '';
      throw new InterruptedError(String(f.signal.reason ?? 'SIGINT'), `${next}${interruptedHint(outcome)}`);
    }
    if (outcome.failures.length > 0) {
      failed = true;
      throw perWindow ? partialFailure(outcome.failures, written.length, run.argv, jobs.logFormat === 'json' ? undefined : f.stderr) : mergedFailure(outcome.failures[0] as WindowFailureReport);
    }
    if (perWindow) {
      if (!f.globals.quiet) view.note(`${side}: ${describeCounts(written.length, written.filter((w) => w.outcome === 'unchanged').length, planned.length - windows.length)} (${template})`);
      if (f.globals.json) {
        f.stdout.write(`${JSON.stringify({ side, format: plan.format, files: written.sort((a, b) => a.window.since - b.window.since).map((w) => ({ since: parisDate(w.window.since), until: parisDate(w.window.until), file: w.file, rows: w.rows, reportIds: w.reportIds, ...(state ? { outcome: w.outcome } : {}) })) })}\n`);
      }
      return;
    }
    if (windows.length === 0) {
      // one merged output, every window done already: the file stands as it is
      if (!f.globals.quiet) view.note(`${side}: nothing to fetch: every window is done (${template ?? 'stdout'})`);
      if (f.globals.json) f.stdout.write(`${JSON.stringify(upToDate(side, plan))}\n`);
      return;
    }
    const done = merged ?? await openOutput(template);
    merged = done;
    await close(done);
    merged = undefined;
    if (template) await placedFile({ since: planned[0]?.since ?? since, until: request.until }, template, done, done.rows, mergedWindows);
    else for (const piece of mergedWindows) { await state?.done(piece.window, { rows: piece.rows, bytes: null, sha256: null, file: null }); forget(piece.window); }
    if (!f.globals.quiet) {
      view.note(`${side} report: ${windows.length} window${windows.length === 1 ? '' : 's'} merged: ${done.rows.toLocaleString('en-US')} row${done.rows === 1 ? '' : 's'} → ${template ?? 'stdout'} (${plan.format})`);
    }
    if (f.globals.json && template) {
      f.stdout.write(`${JSON.stringify({ side, reportIds: done.reportIds, rows: done.rows, file: template, format: plan.format, summary: done.merger.summary() ?? null })}\n`);
    }
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    view.stop();
    client.http.onThrottle = undefined;
    client.http.onRetry = textRetry;
    // unfinished outputs leave nothing behind; finished per-window files stay
    if (failed) {
      await merged?.output.sink.abort();
      for (const open of opened.values()) await open.output.sink.abort();
    }
    rmSync(spoolDir, { recursive: true, force: true });
  }
}

const keyOfWindow = (window: Window) => `${window.since}-${window.until}`;

/** The --json result of a run with nothing to fetch: the shape of the run's own result line. */
function upToDate(side: Side, plan: OutputPlan): Record<string, unknown> {
  const perWindow = plan.template !== undefined && PER_WINDOW.test(plan.template);
  return perWindow ? { side, format: plan.format, upToDate: true, files: [] } : { side, format: plan.format, upToDate: true, file: plan.template ?? null, rows: 0 };
}

function describeCounts(written: number, unchanged: number, skipped: number): string {
  const windows = (n: number) => `${n} window${n === 1 ? '' : 's'}`;
  const parts = [`${windows(written - unchanged)} written`];
  if (unchanged) parts.push(`${unchanged} unchanged`);
  if (skipped) parts.push(`${skipped} skipped (done already)`);
  return parts.join(', ');
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

function mergedFailure(failure: WindowFailureReport): CliError {
  if (failure.error instanceof CliError && !(failure.error instanceof ReportError)) return failure.error;
  return new ReportError(describeFailure(failure), failure.reportId ?? '', 'nothing was written: the merged output needs every window');
}

/** Per-window files: what failed, and the commands that retry only those windows, one per run of
 * adjacent failed windows (one line each: an error message is one line, and these are meant to be
 * copied). Written to `stderr` as text lines; with JSON logs (no `stderr`), the failed windows are
 * the log's `failed` events and the commands go in the hint. The exit code is the failures' own
 * when they all share one (a refused token is 3 for every window), else 6. */
function partialFailure(failures: readonly WindowFailureReport[], written: number, argv: readonly string[], stderr: Factory['stderr'] | undefined): CliError {
  const sorted = [...failures].sort((a, b) => a.window.since - b.window.since);
  const spans: Window[] = [];
  for (const { origin } of sorted) {
    const last = spans.at(-1);
    if (last && origin.since <= last.until) continue; // another piece of the same window
    if (last && origin.since === last.until + 1) last.until = origin.until;
    else spans.push({ ...origin });
  }
  const retries = spans.map((span) => retryCommand(argv, span));
  if (stderr) {
    for (const failure of sorted) stderr.write(`${safeText(`failed: ${describeFailure(failure)}`)}\n`);
    for (const command of retries) stderr.write(`${safeText(`retry: ${command}`)}\n`);
  }
  const codes = new Set(failures.map(({ error }) => (error instanceof CliError ? error.exitCode : EXIT.report)));
  const shared = codes.size === 1 ? [...codes][0] as number : EXIT.report;
  const cause = shared !== EXIT.report ? failures.find(({ error }) => error instanceof CliError)?.error as CliError | undefined : undefined;
  const count = `${failures.length} window${failures.length === 1 ? '' : 's'}`;
  const kept = written > 0 ? 'the files written are complete; ' : '';
  const how = stderr
    ? `the retry command${spans.length === 1 ? '' : 's'} above request${spans.length === 1 ? 's' : ''} only the windows that failed`
    : `retry only the windows that failed with: ${retries.join(' ; ')}`;
  return new CliError(`${count} failed, ${written} written${stderr ? ' (listed above)' : ''}${cause ? `: ${cause.message}` : ''}`, shared, `${cause?.hint ? `${cause.hint}; ` : ''}${kept}${how}`);
}
