// `download <id>`: checks the status first (the contract forbids downloading before `ready`).

import { checkReportIdArgument } from '../api/schemas.js';
import { configDir, refuseTokenStore } from '../auth/store.js';
import { ReportError } from '../errors.js';
import { expandTemplate, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns, type OutputOptions } from '../export/output.js';
import { checkWritableTarget } from '../export/sink.js';
import { checkObjectTarget, isObjectUrl } from '../destinations/objects.js';
import type { Factory } from '../factory.js';
import { SIDES, columnNames } from '../report/catalog.js';
import { createReporter } from '../io/progress.js';
import { shellCommand } from '../io/shell.js';
import { describeSaved, saveReport, targetOf } from '../jobs/download.js';
import { isFailed, reportFailed, pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';

export interface DownloadOptions {
  id: string;
  /** poll until ready first */
  waitForIt: boolean;
  output: OutputOptions;
  wait: WaitFlags;
  /** false with --no-validate: --columns may name any field */
  validate: boolean;
}

export async function run(opts: DownloadOptions, f: Factory): Promise<void> {
  const { id } = opts;
  checkReportIdArgument(id);
  const { json, quiet } = f.globals;
  if (opts.output.output && opts.output.output !== '-') {
    const path = expandTemplate(opts.output.output, { reportId: id });
    if (isObjectUrl(path)) await checkObjectTarget(path, { env: f.env, configDir: configDir(f.env, f.host.platform), host: f.host });
    else {
      refuseTokenStore(path, f.cwd, f.env, f.host.platform);
      checkWritableTarget(path, f.cwd);
    }
  }
  // the side of a report is not known before its download: --columns may name a field of either
  const plan = resolveRequestedColumns(planOutput({ ...opts.output, json, validate: opts.validate }, ['reportId'], columnNames(SIDES)));
  refuseBinaryOnTerminal(plan, f.stdout);
  const poll = pollOptionsFrom(opts.wait, f);
  const target = targetOf(plan, { reportId: id });

  const client = f.client();
  const reporter = await createReporter(f, quiet);
  const again = shellCommand(['reporting', 'download', id, '--wait', ...(target ? ['-o', target] : [])]);
  const first = await client.status(id);
  if (first.status === 'progress' && !opts.waitForIt) {
    throw new ReportError(`report ${id} is not ready yet (status: progress)`, id, `add --wait to wait for it: ${again}`);
  }
  if (isFailed(first)) throw reportFailed(id, first);
  if (first.status === 'progress') {
    // stopped on every path: the error starts on its own line, the terminal is restored
    await waitUntilReady(client, id, { ...poll, resumeHint: () => `pick it up later with: ${again}`, onStatus: (status, polls, elapsed) => reporter.waiting(status.status, polls, elapsed) })
      .finally(() => reporter.stop());
  }
  const saved = await saveReport(f, client, id, plan, target, f.globals.retries, reporter);
  if (!quiet) reporter.note(describeSaved(saved, id, undefined, plan.format));
  if (json && saved.path) {
    f.stdout.write(`${JSON.stringify({ reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
  }
}
