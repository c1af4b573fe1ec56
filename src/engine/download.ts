// Downloading a ready report into its output, shared by `run` (the fetch stage) and `download`: progress, and a
// download that breaks off retried from the start (SPEC section 4) into a fresh temporary file,
// so nothing partial ever reaches the target.

import type { ReportingClient } from '../api/client.js';
import type { Context } from '../context.js';
import { formatDuration } from '../duration.js';
import { configDir } from '../auth/store.js';
import { backoffDelay, POLICY, sleepFor, waitsOf, type Sleep } from '../retry.js';
import { InterruptedError } from '../errors.js';
import { sinkReceiver, type Receiver } from '../destinations/destination.js';
import { BodyBrokenError, stallGuarded, type ExportResult, type Progress } from '../export/export.js';
import { expandTemplate, type OutputPlan, type Placeholders } from '../export/output.js';
import { stdoutSink } from '../export/sink.js';
import { openOutput, type SinkDeps } from '../destinations/sinks.js';
import { formatBytes, type Reporter } from '../io/progress.js';

export interface Saved extends ExportResult {
  path?: string;
  elapsedMs: number;
}

export function targetOf(plan: OutputPlan, values: Placeholders): string | undefined {
  return plan.template ? expandTemplate(plan.template, values) : undefined;
}

export async function saveReport(
  ctx: Context & { trace?: (line: string) => void },
  client: ReportingClient,
  id: string,
  plan: OutputPlan,
  target: string | undefined,
  retries: number,
  reporter: Reporter,
): Promise<Saved> {
  // (the target was checked before the wait, the token store refused: commands/download.ts checkOutputNow)
  const started = ctx.now();
  reporter.state(`downloading report ${id}${target ? ` to ${target}` : ''}`);
  const { receiver, result } = await downloadInto(client, id, {
    retries,
    signal: ctx.signal,
    random: ctx.random,
    sleep: ctx.sleep,
    open: async () => sinkReceiver(target ? (await openOutput(target, { ...outputDeps(ctx), retries }, { format: plan.format, keepUnchanged: false })).sink : stdoutSink(ctx.stdout), plan.format, plan.csv),
    progress: (rows, bytes) => reporter.downloading(rows, bytes),
    onRetry: (attempt, reason) => reporter.state(`${reason}; downloading again (retry ${attempt} of ${retries})`),
    // the progress line goes away on every path, so an error starts on its own line and the
    // terminal gets its cursor back
  }).finally(() => reporter.stop());
  await receiver.sink.commit();
  return { ...result, path: receiver.sink.path, elapsedMs: ctx.now() - started };
}

/** What opening or checking an output needs of the command (a file, an object, stdout). */
export const outputDeps = (ctx: Pick<Context, 'cwd' | 'host' | 'stdout' | 'env' | 'now' | 'random' | 'sleep'> & { trace?: (line: string) => void; globals?: { retries: number } }): SinkDeps =>
  ({ cwd: ctx.cwd, host: ctx.host, stdout: ctx.stdout, env: ctx.env, configDir: configDir(ctx.env, ctx.host.platform), trace: ctx.trace, retries: ctx.globals?.retries, waits: waitsOf(ctx) });

/** The closing line on stderr: period, breakdowns, rows, where. */
export function describeSaved(saved: Saved, id: string, side: string | undefined, format: string): string {
  const period = saved.summary ? `${saved.summary.since} → ${saved.summary.until}` : 'period unknown';
  const breakdowns = saved.summary?.breakdowns.length ? saved.summary.breakdowns.join(',') : 'none';
  const where = saved.path ?? 'stdout';
  return `${side ? `${side} report` : 'report'} ${id}: ${period} (Europe/Paris), breakdowns ${breakdowns}: ` +
    `${saved.rows.toLocaleString('en-US')} row${saved.rows === 1 ? '' : 's'}, ${formatBytes(saved.bytes)} of JSON in ${formatDuration(saved.elapsedMs)} → ${where} (${format})`;
}

interface DownloadJob<R extends Receiver> {
  retries: number;
  signal: AbortSignal;
  random: () => number;
  /** the wait before a new attempt (POLICY.http); unset: a timer */
  sleep?: Sleep;
  /** a fresh receiver for each attempt */
  open: () => Promise<R>;
  progress?: Progress;
  /** told before a new attempt */
  onRetry?: (attempt: number, reason: string) => void;
  /** told the moment the whole body is in (before the promise chain back to the caller: a fleet's
   * budget slot goes on from here) */
  taken?: () => void;
}

/** Downloads a ready report into a receiver, retrying broken downloads from the start into a new
 * one. Answers the receiver that took the whole body (to be committed) and what it read. */
export async function downloadInto<R extends Receiver>(client: ReportingClient, id: string, options: DownloadJob<R>): Promise<{ receiver: R; result: ExportResult }> {
  for (let attempt = 0; ; attempt++) {
    // the receiver is opened while the request goes out (a fleet's opens wait behind other jobs'
    // fsyncs on libuv's threads): an answer whose receiver could not be opened is thrown away
    const answering = client.download(id);
    // (its failure is handled below, once the receiver is open: not an unhandled rejection meanwhile)
    answering.catch(() => undefined);
    let receiver: R;
    try {
      receiver = await options.open();
    } catch (error) {
      void answering.then((answer) => answer.body.dump(), () => undefined).catch(() => undefined);
      throw error;
    }
    try {
      const answer = await answering;
      const result = await receiver.take(stallGuarded(answer.body, client.http.config.timeoutMs), options.progress);
      options.taken?.();
      return { receiver, result };
    } catch (error) {
      await receiver.abort();
      if (options.signal.aborted) throw new InterruptedError(String(options.signal.reason));
      const retryable = error instanceof BodyBrokenError && receiver.restartable;
      if (!retryable || attempt >= options.retries) throw error;
      options.onRetry?.(attempt + 1, (error as Error).message);
      await (options.sleep ?? sleepFor)(backoffDelay(POLICY.http, attempt, options.random), options.signal);
    }
  }
}
