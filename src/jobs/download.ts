// Downloading a ready report into its output, shared by `run` and `download`: progress, and a
// download that breaks off retried from the start (SPEC section 4) into a fresh temporary file,
// so nothing partial ever reaches the target.

import type { ReportingClient } from '../api/client.js';
import type { Context } from '../factory.js';
import { formatDuration } from '../duration.js';
import { refuseTokenStore } from '../auth/store.js';
import { sleepFor } from '../api/http.js';
import { backoffMs } from '../api/retry.js';
import { InterruptedError } from '../errors.js';
import { BodyBrokenError, stallGuarded, writeReport, type ExportResult, type Progress } from '../export/export.js';
import type { Format } from '../export/output.js';
import { expandTemplate, type OutputPlan, type Placeholders } from '../export/output.js';
import type { Sink } from '../export/sink.js';
import { openFileSink, stdoutSink } from '../export/sink.js';
import type { CsvOptions } from '../export/writers.js';
import { formatBytes, type Reporter } from '../io/progress.js';

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
  if (target) refuseTokenStore(target, ctx.cwd, ctx.env, ctx.host.platform);
  const started = ctx.now();
  reporter.state(`downloading report ${id}${target ? ` to ${target}` : ''}`);
  const result = await downloadReport(client, id, {
    format: plan.format,
    csv: plan.csv,
    retries,
    signal: ctx.signal,
    random: ctx.random,
    openSink: () => (target ? openFileSink(target, ctx) : Promise.resolve(stdoutSink(ctx.stdout))),
    progress: (rows, bytes) => reporter.downloading(rows, bytes),
    onRetry: (attempt, reason) => reporter.state(`${reason}; downloading again (retry ${attempt} of ${retries})`),
    // the progress line goes away on every path, so an error starts on its own line and the
    // terminal gets its cursor back
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

interface DownloadJob {
  format: Format;
  csv: CsvOptions;
  retries: number;
  signal: AbortSignal;
  random: () => number;
  openSink: () => Promise<Sink>;
  progress?: Progress;
  /** told before a new attempt */
  onRetry?: (attempt: number, reason: string) => void;
}

/** Downloads a ready report into a sink, retrying broken downloads from the start. */
export async function downloadReport(client: ReportingClient, id: string, options: DownloadJob): Promise<ExportResult & { path?: string }> {
  for (let attempt = 0; ; attempt++) {
    const sink = await options.openSink();
    let written = false;
    const watched: Sink = {
      path: sink.path,
      rewrite: sink.rewrite?.bind(sink),
      write: (chunk) => { written = true; return sink.write(chunk); },
      commit: () => sink.commit(),
      abort: () => sink.abort(),
    };
    try {
      const answer = await client.download(id);
      const result = await writeReport(stallGuarded(answer.body, client.http.config.timeoutMs), watched, options.format, options.csv, options.progress);
      await sink.commit();
      return { ...result, path: sink.path };
    } catch (error) {
      await sink.abort();
      if (options.signal.aborted) throw new InterruptedError(String(options.signal.reason));
      // a file starts again from nothing; stdout can only start again if nothing was written
      const retryable = error instanceof BodyBrokenError && (sink.path !== undefined || !written);
      if (!retryable || attempt >= options.retries) throw error;
      options.onRetry?.(attempt + 1, (error as Error).message);
      await sleepFor(backoffMs(attempt, options.random), options.signal);
    }
  }
}
