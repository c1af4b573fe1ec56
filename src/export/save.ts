// Saving a ready report: shared by `run` and `download`.

import type { ReportingClient } from '../api/client.js';
import type { Context } from '../context.js';
import { formatDuration } from '../duration.js';
import { downloadReport, type ExportResult } from './export.js';
import { expandTemplate, type OutputPlan, type Placeholders } from './output.js';
import { formatBytes, type Reporter } from './progress.js';
import { openFileSink, stdoutSink } from './sink.js';

export interface Saved extends ExportResult {
  path?: string;
  elapsedMs: number;
}

export function targetOf(plan: OutputPlan, values: Placeholders): string | undefined {
  return plan.template ? expandTemplate(plan.template, values) : undefined;
}

export async function saveReport(
  ctx: Context,
  client: ReportingClient,
  id: string,
  plan: OutputPlan,
  target: string | undefined,
  retries: number,
  reporter: Reporter,
): Promise<Saved> {
  const started = ctx.now();
  reporter.state(`downloading report ${id}${target ? ` to ${target}` : ''}`);
  // the progress line goes away on every path, so an error starts on its own line and the
  // terminal gets its cursor back
  const result = await downloadReport(client, id, {
    format: plan.format,
    csv: plan.csv,
    retries,
    signal: ctx.signal,
    openSink: () => (target ? openFileSink(target, ctx.cwd) : Promise.resolve(stdoutSink(ctx.stdout))),
    progress: (rows, bytes) => reporter.downloading(rows, bytes),
    onRetry: (attempt, reason) => reporter.state(`${reason}; downloading again (retry ${attempt} of ${retries})`),
  }).finally(() => reporter.stop());
  return { ...result, elapsedMs: ctx.now() - started };
}

/** The closing line on stderr: period, breakdowns, rows, where. */
export function describeSaved(saved: Saved, id: string, side: string | undefined, format: string): string {
  const period = saved.summary ? `${saved.summary.since} → ${saved.summary.until}` : 'period unknown';
  const breakdowns = saved.summary?.breakdowns.length ? saved.summary.breakdowns.join(',') : 'none';
  const where = saved.path ?? 'stdout';
  return `${side ? `${side} report` : 'report'} ${id}: ${period} (Europe/Paris), breakdowns ${breakdowns}: ` +
    `${saved.rows.toLocaleString('en-US')} row${saved.rows === 1 ? '' : 's'}, ${formatBytes(saved.bytes)} of JSON in ${formatDuration(saved.elapsedMs)} → ${where} (${format})`;
}
