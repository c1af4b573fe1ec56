// `buyer` and `seller`: submit a report request and print its ID.

import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { Side } from '../report/catalog.js';
import type { ReportOptions } from '../report/request.js';
import type { CommandSpec } from './index.js';
import { addReportOptions, optionsOf } from './options.js';

function reportCommand(side: Side, example: string): CommandSpec {
  return {
    name: side,
    summary: `submit a ${side} report request; print its report ID`,
    define(command: Command, ctx: Context) {
      addReportOptions(command, [side]).addHelpText('after', `
Examples:
  ${example}
  id=$(reporting ${side} --since yesterday --until yesterday)
  reporting download "$id" --wait -o out.csv
  reporting ${side} --since -7d --until today --json`);
      command.action(async (_options: ReportOptions, cmd: Command) => {
        await run(side, optionsOf<ReportOptions>(cmd), ctx);
      });
    },
  };
}

export const buyerCommand = reportCommand('buyer', 'reporting buyer --since 2026-11-01 --until 2026-11-20 --breakdowns DAILY,CAMPAIGN');
export const sellerCommand = reportCommand('seller', 'reporting seller --since yesterday --until yesterday --breakdowns HOURLY,APP --app-id 9001');

export async function run(side: Side, options: ReportOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { buildReportRequest, requestParams } = await import('../report/request.js');
  const { withSession } = await import('../session.js');
  // validated before the session exists: a usage error makes no request at all
  const request = buildReportRequest(side, options, ctx.now());
  const reportId = await withSession(ctx, options, (session) => session.client().submit(side, requestParams(request)));
  ctx.stdout.write(options.json ? `${JSON.stringify({ side, reportId, status: 'progress' })}\n` : `${reportId}\n`);
}
