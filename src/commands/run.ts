// `run`: submit, wait, download and write — the main job.

import { statSync } from 'node:fs';
import { configDir, refuseTokenStore } from '../auth/store.js';
import { CliError, InterruptedError, NetworkError, ReportFailedError, UsageError } from '../errors.js';
import type { OutputOptions, OutputPlan } from '../export/output.js';
import { PLACEHOLDERS, expandTemplate, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns } from '../export/output.js';
import { WriteError, checkWritableTarget } from '../export/sink.js';
import type { Factory } from '../factory.js';
import { createReporter } from '../io/progress.js';
import { shellCommand } from '../io/shell.js';
import type { ChunkFlags } from '../jobs/chunked.js';
import type { JobFlags } from '../cli/options.js';
import { createLogger } from '../io/log.js';
import { Journal, journalKey, journalRequestOf } from '../jobs/journal.js';
import { startReport } from '../jobs/resume.js';
import { describeSaved, saveReport, targetOf } from '../jobs/download.js';
import { columnNames, type Side } from '../report/catalog.js';
import { pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';
import { buildReportRequest, requestParams, type ReportFlags } from '../report/request.js';
import { parisDate } from '../report/time.js';
import { runChunked } from '../jobs/chunked.js';

export interface RunOptions {
  side: Side;
  report: ReportFlags;
  output: OutputOptions;
  wait: WaitFlags;
  /** --chunk and its flags: a run of many windows (src/jobs/chunked.ts) */
  chunk?: ChunkFlags;
  /** --state, --since auto, --lookback, --full-refresh, --no-resume, --log-format */
  jobs?: JobFlags;
  /** the command line after `reporting`, for the retry command of failed windows */
  argv?: readonly string[];
}

export async function run(opts: RunOptions, f: Factory): Promise<void> {
  const { side } = opts;
  const { json, quiet } = f.globals;
  const jobs: JobFlags = opts.jobs ?? { sinceAuto: false, lookbackDays: 0, fullRefresh: false, resume: true, logFormat: 'text' };
  // everything the user typed is checked before the first request; `--since auto` is resolved
  // from the state file (src/jobs/chunked.ts), the period is checked with its end meanwhile
  const request = buildReportRequest(side, jobs.sinceAuto ? { ...opts.report, since: opts.report.until ?? 'now' } : opts.report, f.now());
  const named = { side, since: parisDate(request.since), until: parisDate(request.until) };
  // a target known in full is checked first, even before its format (saveReport checks it again)
  const template = opts.output.output;
  if (template && template !== '-' && !template.includes('{reportId}')) refuseTokenStore(expandTemplate(template, named), f.cwd, f.env, f.host.platform);
  const plan = resolveRequestedColumns(planOutput({ ...opts.output, json, validate: opts.report.validate }, PLACEHOLDERS, columnNames([side])), request);
  refuseBinaryOnTerminal(plan, f.stdout);
  // a target that cannot be written is found now, not after the report was waited for (the
  // report ID is not known yet: any value stands for it)
  if (plan.template) {
    const path = expandTemplate(plan.template, { ...named, reportId: 'ID' });
    checkWritableTarget(path, f.cwd, path === plan.template || plan.template.includes('{reportId}') ? plan.template : `${plan.template} (${path})`);
  }
  if (opts.chunk || jobs.state) {
    if (jobs.state && plan.template?.includes('{reportId}')) {
      throw new UsageError('with --state, -o takes {side}, {since} and {until}, not {reportId} (a window may take several reports)', "name the file by its period, e.g. -o 'buyer-{since}.csv'");
    }
    await runChunked({ side, request, plan, wait: opts.wait, flags: opts.chunk, jobs, argv: opts.argv ?? [] }, f);
    return;
  }
  const poll = pollOptionsFrom(opts.wait, f);
  const target = (reportId: string) => targetOf(plan, { ...named, reportId });

  const client = f.client();
  // with --log-format json the events are the log, and the text lines stay silent
  const reporter = await createReporter(f, quiet || jobs.logFormat === 'json');
  const log = createLogger(jobs.logFormat, { stderr: f.stderr, now: f.now, secrets: f.secrets }, reporter, { side, period: false });
  const window = { since: request.since, until: request.until };
  if (jobs.logFormat === 'json') {
    client.http.onRetry = (line, retry) => log.emit({ event: 'retried', window, attempt: retry.attempt, message: line, delayMs: retry.delayMs });
  }
  // an interrupted run started again within the hour resumes its report (src/jobs/journal.ts);
  // with --no-resume the report submitted now still replaces the one remembered
  const journal = new Journal(configDir(f.env, f.host.platform), f.now);
  const key = journalKey(journalRequestOf(request, f.baseUrl().url, f.profileName));
  const remembered = jobs.resume ? journal.recall(key) : undefined;
  const { reportId: id } = await startReport(window, remembered && { reportId: remembered.reportId, source: 'journal' }, 1, {
    submit: () => client.submit(side, requestParams(request)),
    status: (reportId) => client.status(reportId),
    emit: (event) => log.emit(event),
    // the journal is a convenience: a run does not fail because it cannot write it
    onSubmitted: async (reportId) => { await journal.remember(key, reportId).catch((error: unknown) => f.trace?.(`  journal not written: ${(error as Error).message}`)); },
  }).catch((error: unknown) => {
    if (jobs.logFormat === 'json' && error instanceof CliError) log.emit({ event: 'failed', window, reportId: remembered?.reportId, message: error.message });
    throw error;
  });
  const resume = shellCommand(['reporting', 'download', id, '--wait', ...pickUpFlags(opts.output, plan, f), ...(target(id) ? ['-o', target(id) as string] : [])]);
  const started = f.now();
  let polls = 0;
  try {
    await waitUntilReady(client, id, {
      ...poll,
      resumeHint: () => `pick it up later with: ${resume}`,
      onStatus: (status, count, elapsed) => {
        polls = count;
        log.emit({ event: 'polled', window, reportId: id, status: status.status, polls: count, durationMs: elapsed });
      },
    });
  } catch (error) {
    log.stop(); // the error starts on its own line, the terminal is restored
    if (error instanceof InterruptedError) {
      const again = jobs.resume ? 'the same command run again within the hour resumes it; or ' : '';
      throw new InterruptedError(error.signal, `report ${id} goes on without you: ${again}${resume}`);
    }
    // a report that ended in failure is not worth resuming; one still running when the wait gave
    // up (--max-wait, the network) is: the same command resumes it
    if (error instanceof ReportFailedError) journal.forget(key);
    if (jobs.logFormat === 'json' && error instanceof CliError) log.emit({ event: 'failed', window, reportId: id, message: error.message, durationMs: f.now() - started });
    throw error;
  }
  log.emit({ event: 'ready', window, reportId: id, polls, durationMs: f.now() - started });
  const file = target(id);
  if (jobs.logFormat === 'json') log.emit({ event: 'download_started', window, reportId: id, attempt: 1, file });
  const saved = await saveReport(f, client, id, plan, file, f.globals.retries, reporter).catch((error: unknown) => {
    // the report is still on the server: say how to fetch it once the disk or the folder is fixed
    if (error instanceof WriteError) throw new WriteError(error.message, error.path, error.code, `${error.hint ? `${error.hint}; then ` : ''}pick it up later with: ${resume}`);
    // interrupted or cut off while downloading: the report is ready, and stays so for a while
    if (error instanceof InterruptedError) throw new InterruptedError(error.signal, `report ${id} is ready; pick it up with: ${resume}`);
    if (error instanceof NetworkError) throw new NetworkError(error.message, `${error.hint ? `${error.hint}; ` : ''}report ${id} is ready; pick it up with: ${resume}`);
    throw error;
  });
  journal.forget(key);
  if (jobs.logFormat === 'json') {
    log.emit({ event: 'download_done', window, reportId: id, rows: saved.rows, bytes: saved.bytes, durationMs: saved.elapsedMs });
    log.emit({ event: 'written', window, reportId: id, file, rows: saved.rows, ...(saved.path ? { bytes: statSync(saved.path).size } : {}) });
  }
  if (!quiet) reporter.note(describeSaved(saved, id, side, plan.format));
  if (json && saved.path) {
    f.stdout.write(`${JSON.stringify({ side, reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
  }
}

/**
 * What `reporting download` needs to write the same file from the same server as this run: the
 * profile and base URL given, the format and CSV options given, the columns (as names, since
 * `download` does not know the request behind `requested`).
 */
export function pickUpFlags(output: OutputOptions, plan: OutputPlan, f: Pick<Factory, 'globals' | 'profileName'>): string[] {
  const words: string[] = [];
  if (f.profileName !== 'default') words.push('--profile', f.profileName);
  if (f.globals.baseUrl) words.push('--base-url', f.globals.baseUrl);
  if (output.format) words.push('--format', plan.format);
  if (output.excel) words.push('--excel');
  else {
    if (output.bom) words.push('--bom');
    if (output.delimiter !== undefined) words.push('--delimiter', output.delimiter);
  }
  if (plan.csv.columns?.length) words.push('--columns', plan.csv.columns.join(','));
  return words;
}
