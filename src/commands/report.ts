// `buyer` and `seller`: submit a report request and print its ID.

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
  f.stdout.write(f.globals.json ? `${JSON.stringify({ side: opts.side, reportId, status: 'progress' })}\n` : `${reportId}\n`);
}
