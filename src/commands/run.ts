// `run`: submit, wait, download and write — the main job.

import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { ReportOptions } from '../report/request.js';
import type { OutputOptions } from '../export/output.js';
import type { CommandSpec } from './index.js';
import { addOutputOptions, addReportOptions, addWaitOptions, optionsOf } from './options.js';

export type RunOptions = ReportOptions & OutputOptions & { pollInterval?: string; maxWait: string };

export const runCommand: CommandSpec = {
  name: 'run',
  summary: 'submit a report, wait for it, download it and write CSV, JSON, NDJSON, Parquet or XLSX',
  define(command: Command, ctx: Context) {
    command.argument('<side>', 'buyer or seller');
    addReportOptions(command, ['buyer', 'seller']);
    addOutputOptions(command);
    addWaitOptions(command, 'the report').addHelpText('after', `
Examples:
  reporting run buyer --since yesterday --until yesterday --breakdowns DAILY,COUNTRY -o nightly.csv
  reporting run seller --since 2026-11-01 --until 2026-11-20 --breakdowns DAILY,APP \\
    -o 'exports/{side}-{since}-{until}.csv'
  reporting run buyer --since -7d --until yesterday --json | jq '.data | length'`);
    command.action(async (side: string, _options: RunOptions, cmd: Command) => run(side, optionsOf<RunOptions>(cmd), ctx));
  },
};

export async function run(sideText: string, options: RunOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { buildReportRequest, parseSide, requestParams } = await import('../report/request.js');
  const { planOutput, PLACEHOLDERS, refuseBinaryOnTerminal, resolveRequestedColumns } = await import('../export/output.js');
  const { parisDate } = await import('../report/time.js');
  const { withSession } = await import('../session.js');
  const { pollOptionsFrom, waitUntilReady } = await import('../report/poll.js');
  const { createReporter } = await import('../export/progress.js');
  const { saveReport, describeSaved, targetOf } = await import('../export/save.js');
  const { InterruptedError } = await import('../errors.js');

  // everything the user typed is checked before the first request
  const side = parseSide(sideText);
  const request = buildReportRequest(side, options, ctx.now());
  const plan = resolveRequestedColumns(planOutput(options, PLACEHOLDERS), request);
  refuseBinaryOnTerminal(plan, ctx.stdout);
  const poll = pollOptionsFrom(options, ctx);

  await withSession(ctx, options, async (session) => {
    const client = session.client();
    const retries = session.retries();
    const reporter = await createReporter(ctx, Boolean(options.quiet));
    const id = await client.submit(side, requestParams(request));
    const target = (reportId: string) => targetOf(plan, { side, since: parisDate(request.since), until: parisDate(request.until), reportId });
    const resume = `reporting download ${id} --wait${target(id) ? ` -o '${target(id)}'` : ''}`;
    reporter.state(`submitted ${side} report ${id}`);
    const started = ctx.now();
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
      reporter.stop();
      if (error instanceof InterruptedError) throw new InterruptedError(error.signal, `report ${id} goes on without you: ${resume}`);
      throw error;
    }
    reporter.state(`report ${id} ready after ${polls} poll${polls === 1 ? '' : 's'} (${Math.round((ctx.now() - started) / 100) / 10}s)`);
    const saved = await saveReport(ctx, client, id, plan, target(id), retries, reporter);
    if (!options.quiet) reporter.note(describeSaved(saved, id, side, plan.format));
    if (options.json && saved.path) {
      ctx.stdout.write(`${JSON.stringify({ side, reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null })}\n`);
    }
  });
}
