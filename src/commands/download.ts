// `download <id>`: checks the status first (the contract forbids downloading before `ready`).

import { checkReportIdArgument } from '../api/schemas.js';
import { refuseTokenStore } from '../auth/store.js';
import { ReportError } from '../errors.js';
import { planOutput, type OutputOptions } from '../export/output.js';
import type { Factory } from '../factory.js';
import { createReporter } from '../io/progress.js';
import { shellCommand } from '../io/shell.js';
import { describeSaved, saveReport, targetOf } from '../jobs/download.js';
import { failedReport, isFailed, pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';

export interface DownloadOptions {
  id: string;
  /** poll until ready first */
  waitForIt: boolean;
  output: OutputOptions;
  wait: WaitFlags;
}

export async function run(opts: DownloadOptions, f: Factory): Promise<void> {
  const { id } = opts;
  checkReportIdArgument(id);
  const { json, quiet } = f.globals;
  const plan = planOutput({ ...opts.output, json }, ['reportId']);
  const poll = pollOptionsFrom(opts.wait, f);
  const target = targetOf(plan, { reportId: id });
  if (target) refuseTokenStore(target, f.cwd, f.env);

  const client = f.client();
  const reporter = await createReporter(f, quiet);
  const first = await client.status(id);
  if (first.status === 'progress' && !opts.waitForIt) {
    throw new ReportError(`report ${id} is not ready yet (status: progress)`, id, `add --wait to wait for it: ${shellCommand(['reporting', 'download', id, '--wait', ...(target ? ['-o', target] : [])])}`);
  }
  if (isFailed(first)) throw failedReport(id, first);
  if (first.status === 'progress') {
    await waitUntilReady(client, id, { ...poll, onStatus: (status, polls, elapsed) => reporter.waiting(status.status, polls, elapsed) })
      .finally(() => reporter.stop());
  }
  const saved = await saveReport(f, client, id, plan, target, f.globals.retries, reporter);
  if (!quiet) reporter.note(describeSaved(saved, id, undefined, plan.format));
  if (json && saved.path) {
    f.stdout.write(`${JSON.stringify({ reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
  }
}
