// How a run ends, in one place: the commands that pick a report up or retry windows, the error a
// failure or an interruption becomes, the closing line on stderr and the --json result on stdout.

import type { Summary } from '../api/schemas.js';
import type { Committed } from '../destinations/destination.js';
import { formatDuration } from '../duration.js';
import { CliError, EXIT, InterruptedError, NetworkError, ReportError } from '../errors.js';
import { isTabular, type OutputOptions, type OutputPlan } from '../export/output.js';
import { WriteError } from '../export/sink.js';
import type { EngineDeps } from './deps.js';
import { formatBytes } from '../io/progress.js';
import { safeText } from '../io/safe-text.js';
import { shellCommand } from '../io/shell.js';
import { parisDate } from '../report/time.js';
import { windowArgs, type Window } from '../report/windows.js';
import type { LogEvent } from './events.js';
import type { Fetched } from './fetch.js';
import type { Job } from './job.js';
import type { RunPlan } from './plan.js';
import { describeFailure, interruptedHint, type PoolOutcome, type WindowFailureReport } from './pool.js';

/**
 * What `reporting download` needs to write the same file from the same server as this run: the
 * profile and base URL given, the format and CSV options given, the columns (as names, since
 * `download` knows the request behind `requested` only while the journal keeps it, or `all`).
 */
export function pickUpFlags(output: OutputOptions, plan: OutputPlan, f: Pick<EngineDeps, 'globals' | 'profileName'>): string[] {
  const words: string[] = [];
  if (f.profileName !== 'default') words.push('--profile', f.profileName);
  if (f.globals.baseUrl) words.push('--base-url', f.globals.baseUrl);
  if (output.format) words.push('--format', plan.format);
  if (output.excel) words.push('--excel');
  else {
    if (output.bom) words.push('--bom');
    if (output.delimiter !== undefined) words.push('--delimiter', output.delimiter);
  }
  if (plan.csv.columnCase === 'snake') words.push('--column-case', 'snake');
  if (plan.csv.columns?.length) words.push('--columns', plan.csv.columns.join(','));
  // every field: said, since download's default is the requested columns when it knows the request
  else if (isTabular(plan.format)) words.push('--columns', 'all');
  return words;
}

/** The command that fetches a run of one report's report into the same output (-o repeated: one
 * download a file, the later ones once the first is there). */
export function pickUpCommand(job: Job, plan: RunPlan, f: Pick<EngineDeps, 'globals' | 'profileName'>, reportId: string): string {
  const file = plan.fileOf?.(plan.period, reportId);
  const first = shellCommand(['reporting', 'download', reportId, '--wait', ...pickUpFlags(job.given, job.output, f), ...(file ? ['-o', file] : [])]);
  const more = (job.more ?? []).map((output, i) => {
    const other = plan.moreFileOf[i]?.(plan.period, reportId);
    // the CSV flags are the CSV outputs' only
    const given = output.format === 'csv' ? job.given : { ...job.given, delimiter: undefined, bom: undefined, excel: undefined };
    return shellCommand(['reporting', 'download', reportId, ...pickUpFlags(given, output, f), ...(other ? ['-o', other] : [])]);
  });
  return [first, ...more].join(' && ');
}

/** A committed output and the others (-o repeated) that hold the same windows. */
const everyOutput = (output: Committed): readonly Committed[] => [output, ...output.others ?? []];

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

/** A run of one report that failed: its error, with how to pick the report up where it helps. */
export function reportError(error: unknown, reportId: string | undefined, downloading: boolean, resume: string | undefined): unknown {
  if (reportId === undefined || resume === undefined) return error;
  if (!downloading) return error;
  // the report is still on the server: say how to fetch it once the disk or the folder is fixed
  if (error instanceof WriteError) return new WriteError(error.message, error.path, error.code, `${error.hint ? `${error.hint}; then ` : ''}pick it up later with: ${resume}`);
  if (error instanceof NetworkError) return new NetworkError(error.message, `${error.hint ? `${error.hint}; ` : ''}report ${reportId} is ready; pick it up with: ${resume}`);
  return error;
}

/** Ctrl-C: what goes on without the run, and how to come back to it. */
/** `again`: how the next run resumes what is in progress ('' if it cannot); `rest`: what it does
 * when nothing is (a state's next run fetches what is left) */
export function interrupted(signal: string, plan: RunPlan, outcome: PoolOutcome, again: (reports: number) => string, rest: string | undefined, pickUp: (reportId: string) => string, downloading: (window: Window) => boolean): InterruptedError {
  if (plan.shape === 'report') {
    const running = outcome.interrupted[0];
    const id = running?.reportId;
    if (running && id) {
      return new InterruptedError(signal, downloading(running.window) ? `report ${id} is ready; pick it up with: ${pickUp(id)}` : `report ${id} goes on without you: ${again(1)}${pickUp(id)}`);
    }
    return new InterruptedError(signal);
  }
  const still = interruptedHint(outcome);
  if (still) return new InterruptedError(signal, `${again(outcome.interrupted.filter((entry) => entry.reportId).length)}${still}`);
  // no report left in progress (none submitted yet, or every one being delivered): nothing to resume
  return new InterruptedError(signal, rest);
}

export function mergedFailure(failure: WindowFailureReport): CliError {
  if (failure.error instanceof CliError && !(failure.error instanceof ReportError)) return failure.error;
  return new ReportError(describeFailure(failure), failure.reportId ?? '', 'nothing was written: the merged output needs every window');
}

/** Per-window files: what failed, and the commands that retry only those windows, one per run of
 * adjacent failed windows (one line each: an error message is one line, and these are meant to be
 * copied). Written to `stderr` as text lines; with JSON logs (no `stderr`), the failed windows are
 * the log's `failed` events and the commands go in the hint. The exit code is the failures' own
 * when they all share one (a refused token is 3 for every window), else 6. */
export function partialFailure(failures: readonly WindowFailureReport[], written: number, argv: readonly string[], stderr: EngineDeps['stderr'] | undefined): CliError {
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

/** The closing line on stderr: period, breakdowns, rows, where. */
export function describeSaved(saved: { rows: number; bytes: number; summary?: Summary; path?: string; elapsedMs: number }, id: string, side: string | undefined, format: string): string {
  const period = saved.summary ? `${saved.summary.since} → ${saved.summary.until}` : 'period unknown';
  const breakdowns = saved.summary?.breakdowns.length ? saved.summary.breakdowns.join(',') : 'none';
  const where = saved.path ?? 'stdout';
  return `${side ? `${side} report` : 'report'} ${id}: ${period} (Europe/Paris), breakdowns ${breakdowns}: ` +
    `${saved.rows.toLocaleString('en-US')} row${saved.rows === 1 ? '' : 's'}, ${formatBytes(saved.bytes)} of JSON in ${formatDuration(saved.elapsedMs)} → ${where} (${format})`;
}

function describeCounts(written: number, unchanged: number, skipped: number): string {
  const windows = (n: number) => `${n} window${n === 1 ? '' : 's'}`;
  const parts = [`${windows(written - unchanged)} written`];
  if (unchanged) parts.push(`${unchanged} unchanged`);
  if (skipped) parts.push(`${skipped} skipped (done already)`);
  return parts.join(', ');
}

export interface Finished {
  committed: readonly Committed[];
  /** the one report of a run of one report */
  fetched?: Fetched;
  /** windows fetched (not skipped) */
  fetchedWindows: number;
}

/** Every window done already: the run's result is that of a --since auto run with nothing after
 * its state's last window (upToDate), however its period was given. */
const allSkipped = (plan: RunPlan, done: Finished) => done.fetchedWindows === 0 && plan.windows.length > 0;

/** The closing line (stderr) and the --json result (stdout) of a run that succeeded. */
export function closing(job: Job, plan: RunPlan, done: Finished, withState: boolean): { note: string; result?: Record<string, unknown> } {
  const { side } = job;
  const format = job.output.format;
  const template = job.output.template;
  // -o repeated: every output named, with its format
  const outputs = [job.output, ...job.more ?? []];
  const several = outputs.length > 1;
  const formats = outputs.map((output) => output.format).join(', ');
  if (plan.shape === 'report') {
    const one = done.committed[0] as Committed;
    const fetched = done.fetched as Fetched;
    const id = one.reportIds[0] as string;
    const paths = everyOutput(one).map((output) => output.path);
    const note = describeSaved({ ...fetched, path: several ? paths.map((path) => path ?? 'stdout').join(', ') : one.path }, id, side, several ? formats : format);
    const files = several ? { files: paths.filter((path) => path !== undefined) } : {};
    return { note, result: one.path && !paths.includes(undefined) ? { side, reportId: id, rows: fetched.rows, file: one.path, ...files, format, summary: fetched.summary ?? null } : undefined };
  }
  if (job.load) return loadClosing(job, plan, done, withState);
  if (plan.perWindow) {
    const windows = [...done.committed].sort((a, b) => a.window.since - b.window.since);
    const files = windows.flatMap(everyOutput);
    const skipped = plan.windows.length - done.fetchedWindows;
    return {
      note: `${side}: ${describeCounts(windows.length, windows.filter((w) => w.outcome === 'unchanged').length, skipped)} (${outputs.map((output) => output.template).join(', ')})`,
      result: allSkipped(plan, done) ? upToDate(job, true) : { side, format, files: files.map((w) => ({ since: parisDate(w.window.since), until: parisDate(w.window.until), file: w.file, rows: w.rows, reportIds: w.reportIds, ...(withState ? { outcome: w.outcome } : {}) })) },
    };
  }
  const merged = done.committed[0] as Committed;
  const windows = done.fetchedWindows;
  const where = outputs.map((output) => `${output.template ?? 'stdout'} (${output.format})`).join(', ');
  const everyFile = outputs.every((output) => output.template !== undefined);
  return {
    note: `${side} report: ${windows} window${windows === 1 ? '' : 's'} merged: ${merged.rows.toLocaleString('en-US')} row${merged.rows === 1 ? '' : 's'} → ${where}`,
    result: template && everyFile ? { side, reportIds: merged.reportIds, rows: merged.rows, file: template, ...(several ? { files: outputs.map((output) => output.template) } : {}), format, summary: merged.summary ?? null } : undefined,
  };
}

/** run --load: the windows loaded into the table (and the file of -o, if any). With `-o -` the
 * rows are on stdout: no result line after them (as without --load). */
function loadClosing(job: Job, plan: RunPlan, done: Finished, withState: boolean): { note: string; result?: Record<string, unknown> } {
  const { side } = job;
  const loaded = done.committed.filter((output) => output.table !== undefined).sort((a, b) => a.window.since - b.window.since);
  const files = done.committed.filter((output) => output.table === undefined).flatMap(everyOutput).filter((output) => output.file !== undefined);
  const table = job.load?.table.join('.') ?? '';
  const target = job.load?.target.shown ?? '';
  const rows = loaded.reduce((sum, output) => sum + output.rows, 0);
  const skipped = plan.windows.length - done.fetchedWindows;
  const counts = describeCounts(loaded.length, loaded.filter((w) => w.outcome === 'unchanged').length, skipped).replace(' written', ' loaded');
  return {
    note: `${side}: ${counts}: ${rows.toLocaleString('en-US')} row${rows === 1 ? '' : 's'} → ${table} (${target})${files.length ? `, and ${files.map((output) => output.file).join(', ')}` : ''}`,
    result: [job.given.output, ...job.given.more ?? []].includes('-') ? undefined : allSkipped(plan, done) ? upToDate(job, plan.perWindow) : {
      side, table, target, rows,
      windows: loaded.map((w) => ({ since: parisDate(w.window.since), until: parisDate(w.window.until), rows: w.rows, reportIds: w.reportIds, sha256: w.sha256, ...(withState ? { outcome: w.outcome } : {}) })),
      ...(files.length ? { files: files.map((output) => output.file) } : {}),
    },
  };
}

/** The JSON log's last line of a run that succeeded: "finished", told apart from "died after its
 * last write" (a scheduler reads it). */
export function doneEvent(window: Window, done: { fetched: number; skipped: number; committed: readonly Committed[] }, durationMs: number): LogEvent {
  const committed = [...done.committed].sort((a, b) => a.window.since - b.window.since);
  return {
    event: 'done', window, fetched: done.fetched, skipped: done.skipped,
    unchanged: committed.filter((output) => output.outcome === 'unchanged').length,
    // with -o and --load both, the rows are counted once: the table's
    rows: (committed.some((output) => output.table !== undefined) ? committed.filter((output) => output.table !== undefined) : committed)
      .reduce((sum, output) => sum + output.rows, 0),
    files: committed.flatMap(everyOutput).flatMap((output) => (output.file === undefined ? [] : [output.file])),
    exitCode: 0, durationMs,
  };
}

/** The --json result of a run with nothing to fetch: the shape of the run's own result line. */
export function upToDate(job: Job, perWindow: boolean): Record<string, unknown> {
  const { side } = job;
  const { format, template } = job.output;
  if (job.load) {
    // a load run's shape (loadClosing): no window loaded, the table and its target named
    const files = template === undefined ? {} : { files: perWindow || /\{(since|until)\}/.test(template) ? [] : [template] };
    return { side, table: job.load.table.join('.'), target: job.load.target.shown, upToDate: true, rows: 0, windows: [], ...files };
  }
  return perWindow ? { side, format, upToDate: true, files: [] } : { side, format, upToDate: true, file: template ?? null, rows: 0 };
}
