// `download <id>`: checks the status first (the contract forbids downloading before `ready`).

import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { OutputOptions } from '../export/output.js';
import type { CommandSpec } from './index.js';
import { addOutputOptions, addWaitOptions, optionsOf } from './options.js';

export type DownloadOptions = OutputOptions & { wait?: boolean; pollInterval?: string; maxWait: string };

export const downloadCommand: CommandSpec = {
  name: 'download',
  summary: 'download a ready report to a file or stdout (--wait polls first)',
  define(command: Command, ctx: Context) {
    command.argument('<id>', 'report ID').option('--wait', 'poll until the report is ready, then download');
    addOutputOptions(command);
    addWaitOptions(command, 'the report').addHelpText('after', `
-o takes the placeholder {reportId}; {side}, {since} and {until} are known to \`run\` only.

Examples:
  reporting download 87a72010101115 -o report.csv
  reporting download 87a72010101115 --wait --format ndjson > rows.ndjson
  reporting download 87a72010101115 --json | jq .summary`);
    command.action(async (id: string, _options: DownloadOptions, cmd: Command) => run(id, optionsOf<DownloadOptions>(cmd), ctx));
  },
};

export async function run(id: string, options: DownloadOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { planOutput, refuseBinaryOnTerminal, resolveRequestedColumns } = await import('../export/output.js');
  const { withSession } = await import('../session.js');
  const { pollOptionsFrom, waitUntilReady } = await import('../report/poll.js');
  const { createReporter } = await import('../export/progress.js');
  const { saveReport, describeSaved, targetOf } = await import('../export/save.js');
  const { ReportError } = await import('../errors.js');

  const plan = resolveRequestedColumns(planOutput(options, ['reportId']));
  refuseBinaryOnTerminal(plan, ctx.stdout);
  const poll = pollOptionsFrom(options, ctx);
  const target = targetOf(plan, { reportId: id });

  await withSession(ctx, options, async (session) => {
    const client = session.client();
    const reporter = await createReporter(ctx, Boolean(options.quiet));
    const first = await client.status(id);
    if (first.status === 'progress' && !options.wait) {
      throw new ReportError(`report ${id} is not ready yet (status: progress)`, id, `add --wait to wait for it: reporting download ${id} --wait${target ? ` -o '${target}'` : ''}`);
    }
    if (first.status !== 'ready' && first.status !== 'progress') {
      const message = first.message && first.message !== first.status ? `: ${first.message}` : '';
      throw new ReportError(`report ${id} ended in status "${first.status}"${message}`, id);
    }
    if (first.status === 'progress') {
      await waitUntilReady(client, id, { ...poll, onStatus: (status, polls, elapsed) => reporter.waiting(status.status, polls, elapsed) })
        .finally(() => reporter.stop());
    }
    const saved = await saveReport(ctx, client, id, plan, target, session.retries(), reporter);
    if (!options.quiet) reporter.note(describeSaved(saved, id, undefined, plan.format));
    if (options.json && saved.path) {
      ctx.stdout.write(`${JSON.stringify({ reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
    }
  });
}
