// `run --chunk` (issue 13): the period cut into windows, one report each, run by the pool
// (pool.ts) at most N at once, merged (merge.ts) into one output in chronological order, or written
// one file per window when -o holds {since}/{until}.
//
// Each window's report is downloaded into a spool file (bytes as received, checked by the scanner
// on the way) and replayed into the output when its turn comes: the pool may finish windows out of
// order, and memory must not grow with the number of windows. Outputs are sinks (src/export/sink.ts):
// a file appears whole when its last row is written, or not at all.

import { AsyncLocalStorage } from 'node:async_hooks';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refuseTokenStore } from '../auth/store.js';
import { sleepFor } from '../api/http.js';
import { CliError, EXIT, InterruptedError, ReportError, UsageError } from '../errors.js';
import { RowOutput } from '../export/export.js';
import { type OutputPlan } from '../export/output.js';
import { openFileSink, stdoutSink, type Sink } from '../export/sink.js';
import type { Summary } from '../api/schemas.js';
import type { Factory } from '../factory.js';
import { safeText } from '../io/safe-text.js';
import { shellCommand } from '../io/shell.js';
import { createWindowsView } from '../io/windows-view.js';
import type { LogFormat } from '../io/log.js';
import type { Side } from '../report/catalog.js';
import { pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';
import { requestParams, type ReportRequest } from '../report/request.js';
import { parisDate } from '../report/time.js';
import { downloadReport, targetOf } from './download.js';
import { WindowMerger, mergePlan, type MergePlan } from './merge.js';
import { describeFailure, interruptedHint, isLastPiece, runWindows, type TaskContext, type WindowFailureReport } from './pool.js';
import { checkChunk, checkDistinctTargets, parseChunk, planWindows, splitWindow, timeBreakdown, windowArgs, type Window } from './windows.js';

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
  flags: ChunkFlags;
  logFormat: LogFormat;
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
}

const PER_WINDOW = /\{(since|until)\}/;

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
  const { side, request, plan, flags } = run;
  // everything is checked before the first request
  const chunk = parseChunk(flags.chunk);
  checkChunk(chunk, request.breakdowns);
  const windows = planWindows(request.since, request.until, chunk);
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
    checkDistinctTargets(windows, targetFor);
    for (const w of windows) refuseTokenStore(targetFor(w), f.cwd, f.env);
  } else if (template) refuseTokenStore(template, f.cwd, f.env);

  const client = f.client();
  const view = await createWindowsView(f, {
    format: run.logFormat, quiet: f.globals.quiet, side, total: windows.length, secrets: f.secrets,
  });
  const poll = pollOptionsFrom(run.wait, f);
  const spoolDir = mkdtempSync(join(tmpdir(), 'reporting-spool-'));
  // a 429 retried inside the HTTP client slows the pool at once: told to the task that met it
  const currentTask = new AsyncLocalStorage<TaskContext>();
  client.http.onThrottle = (retryAfterMs) => currentTask.getStore()?.throttled(retryAfterMs);

  // the report of each window, for the lines of the pool's events (split, failed)
  const reportOf = new Map<string, string>();
  const keyOf = (window: Window) => `${window.since}-${window.until}`;
  const fetchWindow = async (window: Window, ctx: TaskContext): Promise<Fetched> => {
    const attempt = 1;
    const reportId = await client.submit(side, requestParams({ ...request, since: window.since, until: window.until }));
    ctx.reportId(reportId);
    reportOf.set(keyOf(window), reportId);
    view.emit({ event: 'submitted', window, reportId, attempt });
    const started = f.now();
    let polls = 0;
    await waitUntilReady(client, reportId, {
      ...poll,
      signal: ctx.signal,
      resumeHint: (id) => `pick it up later with: ${shellCommand(['reporting', 'download', id, '--wait'])} -o FILE`,
      onStatus: (status, count, elapsed) => {
        polls = count;
        view.emit({ event: 'polled', window, reportId, status: status.status, polls: count, durationMs: elapsed });
      },
    });
    view.emit({ event: 'ready', window, reportId, polls, durationMs: f.now() - started });
    const spool = join(spoolDir, `${window.since}-${window.until}.json`);
    const downloadStarted = f.now();
    view.emit({ event: 'download_started', window, reportId, attempt });
    const result = await downloadReport(client, reportId, {
      format: 'json',
      csv: plan.csv,
      retries: f.globals.retries,
      signal: ctx.signal,
      random: f.random,
      openSink: () => openFileSink(spool, f.cwd),
      progress: (rows, bytes) => view.progress(window, rows, bytes),
      onRetry: (again, reason) => view.emit({ event: 'retried', window, reportId, attempt: again + 1, message: reason }),
    });
    view.emit({ event: 'download_done', window, reportId, rows: result.rows, bytes: result.bytes, durationMs: f.now() - downloadStarted });
    return { reportId, spool, rows: result.rows, bytes: result.bytes };
  };

  const opened = new Map<number, Open>();
  const openOutput = async (sink: Sink): Promise<Open> => {
    const output = await RowOutput.open(sink, plan.format, plan.csv);
    const open = { output, rows: 0, reportIds: [] as string[] };
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
    await unlink(fetched.spool).catch(() => undefined);
  };
  // closes an output: what summing held, then the tail, then the file appears
  const close = async (open: Open) => {
    open.merger.finish();
    await open.output.close(open.merger.summary());
  };

  let merged: Open | undefined;
  const written: { window: Window; file: string; rows: number; reportIds: string[] }[] = [];
  const deliver = async (window: Window, fetched: Fetched, origin: Window) => {
    if (!perWindow) {
      merged ??= await openOutput(template ? await openFileSink(template, f.cwd) : stdoutSink(f.stdout));
      await replay(merged, window, origin, fetched);
      return;
    }
    let open = opened.get(origin.since);
    if (!open) {
      open = await openOutput(await openFileSink(targetFor(origin), f.cwd));
      opened.set(origin.since, open);
    }
    await replay(open, window, origin, fetched);
    if (isLastPiece(window, origin)) {
      opened.delete(origin.since);
      await close(open);
      const file = targetFor(origin);
      written.push({ window: origin, file, rows: open.rows, reportIds: open.reportIds });
      view.emit({ event: 'written', window: origin, reportId: open.reportIds.length === 1 ? open.reportIds[0] : undefined, file, rows: open.rows, bytes: 0 });
    }
  };

  let failed = false;
  try {
    const outcome = await runWindows(windows, (window, ctx) => currentTask.run(ctx, () => fetchWindow(window, ctx)), {
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
        } else if (event.type === 'failed') {
          view.emit({ event: 'failed', window: event.window, reportId: reportOf.get(keyOf(event.window)), message: messageOf(event.error) });
        }
      },
    });
    view.stop();
    if (outcome.aborted) {
      failed = true;
      throw new InterruptedError(String(f.signal.reason ?? 'SIGINT'), interruptedHint(outcome));
    }
    if (outcome.failures.length > 0) {
      failed = true;
      throw perWindow ? partialFailure(outcome.failures, written.length, run.argv, f.stderr) : mergedFailure(outcome.failures[0] as WindowFailureReport);
    }
    if (perWindow) {
      if (!f.globals.quiet) view.note(`${side}: ${windows.length} window${windows.length === 1 ? '' : 's'} written (${template})`);
      if (f.globals.json) {
        f.stdout.write(`${JSON.stringify({ side, format: plan.format, files: written.sort((a, b) => a.window.since - b.window.since).map((w) => ({ since: parisDate(w.window.since), until: parisDate(w.window.until), file: w.file, rows: w.rows, reportIds: w.reportIds })) })}\n`);
      }
      return;
    }
    const done = merged ?? await openOutput(template ? await openFileSink(template, f.cwd) : stdoutSink(f.stdout));
    merged = done;
    await close(done);
    merged = undefined;
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
    // unfinished outputs leave nothing behind; finished per-window files stay
    if (failed) {
      await merged?.output.sink.abort();
      for (const open of opened.values()) await open.output.sink.abort();
    }
    rmSync(spoolDir, { recursive: true, force: true });
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

function mergedFailure(failure: WindowFailureReport): CliError {
  if (failure.error instanceof CliError && !(failure.error instanceof ReportError)) return failure.error;
  return new ReportError(describeFailure(failure), failure.reportId ?? '', 'nothing was written: the merged output needs every window');
}

/** Per-window files: what failed, and the commands that retry only those windows, one per run of
 * adjacent failed windows (one line each: an error message is one line, and these are meant to be
 * copied). */
function partialFailure(failures: readonly WindowFailureReport[], written: number, argv: readonly string[], stderr: Factory['stderr']): CliError {
  const sorted = [...failures].sort((a, b) => a.window.since - b.window.since);
  const spans: Window[] = [];
  for (const { origin } of sorted) {
    const last = spans.at(-1);
    if (last && origin.since <= last.until) continue; // another piece of the same window
    if (last && origin.since === last.until + 1) last.until = origin.until;
    else spans.push({ ...origin });
  }
  for (const failure of sorted) stderr.write(`${safeText(`failed: ${describeFailure(failure)}`)}\n`);
  for (const span of spans) stderr.write(`${safeText(`retry: ${retryCommand(argv, span)}`)}\n`);
  const count = `${failures.length} window${failures.length === 1 ? '' : 's'}`;
  return new CliError(`${count} failed, ${written} written (listed above)`, EXIT.report,
    `the files written are complete; the retry command${spans.length === 1 ? '' : 's'} above request${spans.length === 1 ? 's' : ''} only the windows that failed`);
}
