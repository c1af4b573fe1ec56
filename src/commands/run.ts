// `run`: submit, wait, download and write — the main job.

import { refuseTokenStore } from '../auth/store.js';
import { InterruptedError } from '../errors.js';
import type { OutputOptions } from '../export/output.js';
import { PLACEHOLDERS, expandTemplate, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns } from '../export/output.js';
import { WriteError, checkWritableTarget } from '../export/sink.js';
import type { Factory } from '../factory.js';
import { createReporter } from '../io/progress.js';
import { shellCommand } from '../io/shell.js';
import type { ChunkFlags } from '../jobs/chunked.js';
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
  /** the command line after `reporting`, for the retry command of failed windows */
  argv?: readonly string[];
}

export async function run(opts: RunOptions, f: Factory): Promise<void> {
  const { side } = opts;
  const { json, quiet } = f.globals;
  // everything the user typed is checked before the first request
  const request = buildReportRequest(side, opts.report, f.now());
  const named = { side, since: parisDate(request.since), until: parisDate(request.until) };
  // a target known in full is checked first, even before its format (saveReport checks it again)
  const template = opts.output.output;
  if (template && template !== '-' && !template.includes('{reportId}')) refuseTokenStore(expandTemplate(template, named), f.cwd, f.env);
  const plan = resolveRequestedColumns(planOutput({ ...opts.output, json, validate: opts.report.validate }, PLACEHOLDERS, columnNames([side])), request);
  refuseBinaryOnTerminal(plan, f.stdout);
  // a target that cannot be written is found now, not after the report was waited for (the
  // report ID is not known yet: any value stands for it)
  if (plan.template) {
    const path = expandTemplate(plan.template, { ...named, reportId: 'ID' });
    checkWritableTarget(path, f.cwd, path === plan.template || plan.template.includes('{reportId}') ? plan.template : `${plan.template} (${path})`);
  }
  if (opts.chunk) {
    await runChunked({ side, request, plan, wait: opts.wait, flags: opts.chunk, logFormat: 'text', argv: opts.argv ?? [] }, f);
    return;
  }
  const poll = pollOptionsFrom(opts.wait, f);
  const target = (reportId: string) => targetOf(plan, { ...named, reportId });

  const client = f.client();
  const reporter = await createReporter(f, quiet);
  const id = await client.submit(side, requestParams(request));
  const resume = shellCommand(['reporting', 'download', id, '--wait', ...(target(id) ? ['-o', target(id) as string] : [])]);
  reporter.state(`submitted ${side} report ${id}`);
  const started = f.now();
  let polls = 0;
  try {
    await waitUntilReady(client, id, {
      ...poll,
      resumeHint: () => `pick it up later with: ${resume}`,
      onStatus: (status, count, elapsed) => {
        polls = count;
        reporter.waiting(status.status, count, elapsed);
      },
    });
  } catch (error) {
    reporter.stop(); // the error starts on its own line, the terminal is restored
    if (error instanceof InterruptedError) throw new InterruptedError(error.signal, `report ${id} goes on without you: ${resume}`);
    throw error;
  }
  reporter.state(`report ${id} ready after ${polls} poll${polls === 1 ? '' : 's'} (${Math.round((f.now() - started) / 100) / 10}s)`);
  const saved = await saveReport(f, client, id, plan, target(id), f.globals.retries, reporter).catch((error: unknown) => {
    // the report is still on the server: say how to fetch it once the disk or the folder is fixed
    if (error instanceof WriteError) throw new WriteError(error.message, error.path, error.code, `${error.hint ? `${error.hint}; then ` : ''}pick it up later with: ${resume}`);
    throw error;
  });
  if (!quiet) reporter.note(describeSaved(saved, id, side, plan.format));
  if (json && saved.path) {
    f.stdout.write(`${JSON.stringify({ side, reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
  }
}
