// `run`: submit, wait, download and write — the main job. One report, a chunked backfill or a
// nightly run against a state file: the flags are checked here, the run is the engine's
// (src/jobs/engine.ts).

import { configDir } from '../auth/store.js';
import { refuseSharedPaths, runFiles } from '../paths.js';
import type { OutputOptions } from '../export/output.js';
import { PLACEHOLDERS, expandTemplate, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns } from '../export/output.js';
import { checkWritableTarget } from '../export/sink.js';
import { checkObjectTarget, isObjectUrl } from '../destinations/objects.js';
import { UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { runJob } from '../jobs/engine.js';
import { DEFAULT_JOB_FLAGS, type ChunkFlags, type JobFlags } from '../jobs/job.js';
import { columnNames, type Side } from '../report/catalog.js';
import type { WaitFlags } from '../report/poll.js';
import { buildReportRequest, type ReportFlags } from '../report/request.js';
import { endOfParisDay, parisDate } from '../report/time.js';

export interface RunOptions {
  side: Side;
  report: ReportFlags;
  output: OutputOptions;
  wait: WaitFlags;
  /** --chunk and its flags: a run of many windows */
  chunk?: ChunkFlags;
  /** --state, --since auto, --lookback, --full-refresh, --no-resume, --log-format */
  jobs?: JobFlags;
  /** the command line after `reporting`, for the retry command of failed windows */
  argv?: readonly string[];
}

export async function run(opts: RunOptions, f: Factory): Promise<void> {
  const { side } = opts;
  const flags = opts.jobs ?? DEFAULT_JOB_FLAGS;
  // everything the user typed is checked before the first request; `--since auto` is resolved
  // from the state file (src/jobs/engine.ts), the period is checked with its end meanwhile
  const request = buildReportRequest(side, flags.sinceAuto ? { ...opts.report, since: opts.report.until ?? 'now' } : opts.report, f.now());
  const named = { side, since: parisDate(request.since), until: parisDate(request.until) };
  if (flags.state && request.until > endOfParisDay(f.now())) {
    // the state would record days with no numbers yet as done, and later runs would skip them
    throw new UsageError(`--until ${named.until} is after today (${parisDate(f.now() / 1000)}): with --state, days that have not happened would be recorded done`,
      'end the period today at the latest, e.g. --until yesterday for a nightly job');
  }
  // one path for two files loses one of them: the token store, the state, its lock, the output
  const template = opts.output.output;
  const given = template && template !== '-' && !template.includes('{reportId}') ? [expandTemplate(template, named)] : [];
  refuseSharedPaths(runFiles(flags.state, given, configDir(f.env, f.host.platform)), f.cwd, f.host.platform);
  const output = resolveRequestedColumns(planOutput({ ...opts.output, json: f.globals.json, validate: opts.report.validate }, PLACEHOLDERS, columnNames([side])), request);
  refuseBinaryOnTerminal(output, f.stdout);
  // a target that cannot be written is found now, not after the report was waited for (the
  // report ID is not known yet: any value stands for it)
  if (output.template) {
    const path = expandTemplate(output.template, { ...named, reportId: 'ID' });
    const shown = path === output.template || output.template.includes('{reportId}') ? output.template : `${output.template} (${path})`;
    if (isObjectUrl(path)) await checkObjectTarget(path, { env: f.env, configDir: configDir(f.env, f.host.platform), host: f.host }, shown);
    else checkWritableTarget(path, f.cwd, shown);
  }
  await runJob({ side, request, given: opts.output, output, wait: opts.wait, chunk: opts.chunk, flags, argv: opts.argv ?? [] }, f);
}
