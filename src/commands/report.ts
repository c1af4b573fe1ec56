// `buyer` and `seller`: submit a report request and print its ID.

import { configDir } from '../auth/store.js';
import { Journal } from '../engine/journal.js';
import type { Factory } from '../factory.js';
import type { Side } from '../report/catalog.js';
import { buildReportRequest, requestParams, type ReportFlags } from '../report/request.js';

export interface ReportOptions {
  side: Side;
  report: ReportFlags;
}

export async function run(opts: ReportOptions, f: Factory): Promise<void> {
  // validated before any connection: a usage error makes no request at all
  const request = buildReportRequest(opts.side, opts.report, f.calendar.now());
  const reportId = await f.client().submit(opts.side, requestParams(request));
  // its request, kept 7 days: `download ID` writes the requested columns (a convenience: the
  // report ID is printed whatever happens to it)
  const { side, metrics, breakdowns } = request;
  await new Journal(configDir(f.env, f.host.platform), f.now).rememberRequest(reportId, { side, metrics: [...metrics], breakdowns: [...breakdowns] })
    .catch((error: unknown) => f.trace?.(`  request not recorded: ${(error as Error).message}`));
  f.stdout.write(f.globals.json ? `${JSON.stringify({ side: opts.side, reportId, status: 'progress' })}\n` : `${reportId}\n`);
}
