// `run`: submit, wait, download and write — the main job. One report, a chunked backfill or a
// nightly run against a state file: the flags are checked here, the run is the engine's
// (src/engine/engine.ts).

import { resolve } from 'node:path';
import { checkWritableTarget } from '../export/sink.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import type { LogEvent } from '../engine/events.js';
import { RunMetrics, writeMetricsFile } from '../engine/metrics.js';
import { LockedError } from '../fs/lock.js';
import { engineDeps, type Factory } from '../factory.js';
import { runJob } from '../engine/engine.js';
import { previewJob, previewLines } from '../engine/preview.js';
import { prepareRun, type RunOptions } from '../engine/prepare.js';

export type { RunOptions } from '../engine/prepare.js';

export async function run(opts: RunOptions, f: Factory): Promise<void> {
  const deps = engineDeps(f);
  // --plan writes nothing: -o's folder is looked at, not probed
  const job = prepareRun(opts, deps, opts.plan ? 'look' : 'probe');
  if (!opts.plan) {
    const metricsFile = job.flags.metricsFile;
    if (metricsFile === undefined) return runJob(job, deps);
    const path = resolve(f.cwd, metricsFile);
    checkWritableTarget(path, f.cwd, path, 'probe', '--metrics-file');
    return withMetrics(path, job.side, f, (observe) => runJob({ ...job, observe: (event) => { job.observe?.(event); observe(event); } }, deps));
  }
  const windows = await previewJob(job, deps);
  f.stdout.write(f.globals.json ? `${JSON.stringify({ windows })}\n` : previewLines(windows).map((line) => `${line}\n`).join(''));
}

/** Runs `body` with its events counted, then writes the metrics file (`reporting_job` is `name`),
 * whether the run ended well or not; not when it never started (another run holds the state, a
 * usage error before its first step): the series of the run that goes on stay its own. A file
 * that cannot be written fails a run that ended well; a run's own error is not hidden by it. */
export async function withMetrics(path: string, name: string, f: Factory, body: (observe: (event: LogEvent) => void) => Promise<void>): Promise<void> {
  const metrics = new RunMetrics();
  const startedAt = f.now();
  let exitCode: number = EXIT.ok;
  try {
    await body((event) => metrics.observe(event));
  } catch (error) {
    exitCode = error instanceof CliError ? error.exitCode : EXIT.internal;
    if (!metrics.started && (error instanceof LockedError || error instanceof UsageError)) exitCode = -1;
    throw error;
  } finally {
    const written = exitCode === -1 ? Promise.resolve() : writeMetricsFile(path, [{ job: name, profile: f.profileName, exitCode, startedAt, endedAt: f.now(), metrics }]);
    if (exitCode === EXIT.ok) await written.catch((error: unknown) => { throw new CliError(`cannot write the metrics file ${path}: ${(error as Error).message}`, EXIT.internal); });
    else await written.catch(() => undefined);
  }
}

