// Stage 0 of a run: the command line's options (what `run` parsed, or a job of a job file) made
// into the engine's Job, every flag checked before the first request (src/commands/run.ts and
// src/commands/jobs.ts, which checks all its jobs so); and the check of an s3:// output over the
// network, just before a run starts.

import { configDir } from '../auth/store.js';
import { refuseSharedPaths, runFiles } from '../paths.js';
import type { OutputOptions, OutputPlan } from '../export/output.js';
import { PLACEHOLDERS, expandTemplate, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns } from '../export/output.js';
import { checkWritableTarget, type WriteCheck } from '../export/sink.js';
import { checkOutput, outputPaths, placeOutput, refuseSameOutputs } from '../destinations/sinks.js';
import { UsageError } from '../errors.js';
import { columnNames, timeDimensionOf, type Side } from '../report/catalog.js';
import type { WaitFlags } from '../report/poll.js';
import { buildReportRequest, type ReportFlags } from '../report/request.js';
import { endOfParisDay, parisDate, parseTime } from '../report/time.js';
import { withoutPassword, type LoadFlags } from '../load/target.js';
import { loadSecrets, parseLoadTarget, tableName } from '../load/engines.js';
import type { EngineDeps } from './deps.js';
import { DEFAULT_JOB_FLAGS, type ChunkFlags, type Job, type JobFlags, type LoadPlan } from './job.js';
import { DEFAULT_CONCURRENCY, logFormatFrom } from './limits.js';
import { outputDeps } from './download.js';
import { TABLE_STATE, isDatabaseUrl } from './stores/targets.js';
import { isStatePath } from './stores/kinds.js';

/** What `run` is asked: its options as the CLI parsed them (src/cli/registry.ts, and a job file's
 * `run` words through src/cli/run-words.ts). */
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
  /** --plan: print what the run would do, and do nothing */
  plan?: boolean;
  /** --load, --table, --scope, --on-schema-change */
  load?: LoadFlags;
}

/** Every output of the run checked as its kind checks it just before the first request (a bucket:
 * reachable and writable; engine.ts runJob's first step), after what prepareRun checked without a
 * request (for `jobs validate` and `--plan` too). */
export async function checkOutputs(job: Job, f: EngineDeps): Promise<void> {
  const named = { side: job.side, since: parisDate(job.request.since), until: parisDate(job.request.until), reportId: 'ID' };
  for (const { template } of [job.output, ...job.more ?? []]) {
    if (template === undefined) continue;
    const path = expandTemplate(template, named);
    await checkOutput(path, outputDeps(f), path === template || template.includes('{reportId}') ? template : `${template} (${path})`);
  }
}

/** The run's Job, every flag checked before the first request (`jobs` checks all its jobs so).
 * `check`: how -o's place is checked (`look`: creating nothing, for `jobs list|plan|validate`);
 * `shared: false`: no path is checked against the run's others (a job of `jobs run`, whose file's
 * check did so a moment before, and whose run checks each window's files again, engine.ts precheck). */
export function prepareRun(opts: RunOptions, f: EngineDeps, check: WriteCheck = 'probe', { shared = true } = {}): Job {
  const { side } = opts;
  const typed = opts.jobs ?? DEFAULT_JOB_FLAGS;
  // --log-format, else REPORTING_LOG_FORMAT, else text
  const flags: JobFlags = { ...typed, logFormat: typed.logFormat ?? logFormatFrom(f.env) ?? 'text' };
  // everything the user typed is checked before the first request; `--since auto` is resolved
  // from the state file (src/engine/engine.ts), the period is checked with its end meanwhile
  const request = buildReportRequest(side, flags.sinceAuto ? { ...opts.report, since: opts.report.until ?? 'now' } : opts.report, f.calendar.now());
  const named = { side, since: parisDate(request.since), until: parisDate(request.until) };
  if (flags.start !== undefined) {
    // --since auto --start: the first run's period starts there (checked now, used while the state records no run)
    flags.startAt = parseTime(flags.start, 'since', f.calendar.now());
    if (flags.startAt > request.until) throw new UsageError(`--start ${flags.start} is after --until ${named.until}`, 'start the first run on or before the period\'s end').about('--start');
  }
  if (flags.state && request.until > endOfParisDay(f.calendar.now())) {
    // the state would record days with no numbers yet as done, and later runs would skip them
    throw new UsageError(`--until ${named.until} is after today (${parisDate(f.calendar.now() / 1000)}): with --state, days that have not happened would be recorded done`,
      'end the period today at the latest, e.g. --until yesterday for a nightly job').about('--until');
  }
  // one path for two files loses one of them: the token store, the state, its lock, each output
  const template = opts.output.output;
  // (the paths of this machine among them: an object in a bucket is not one)
  const known = (given: string | undefined) => outputPaths(given && given !== '-' && !given.includes('{reportId}') ? [expandTemplate(given, named)] : []);
  const more = opts.output.more ?? [];
  if (template !== undefined) refuseSameOutputs([template, ...more], (given) => expandTemplate(given, { ...named, reportId: 'ID' }), f.cwd);
  if (flags.state && isDatabaseUrl(flags.state)) {
    throw new UsageError(`--state ${flags.state.replace(/:[^@/:]*@/, ':***@')}: a run keeps its state in its --load database with --state table`, 'give --load DATABASE --state table (the state of `state show DATABASE`)').about('--state');
  }
  if (shared) refuseSharedPaths(runFiles(flags.state && isStatePath(flags.state) ? flags.state : undefined, known(template), configDir(f.env, f.host.platform), more.map(known)), f.cwd, f.host.platform);
  // a state file that cannot be made (its folder a file) is found as -o's would be, not by its lock
  if (flags.state && isStatePath(flags.state)) checkWritableTarget(flags.state, f.cwd, flags.state, check, '--state');
  const loading = loadPlanOf(opts.load, side, f);
  if (flags.state === TABLE_STATE && !loading) throw new UsageError('--state table keeps the state in the --load database, and there is no --load', 'add --load duckdb:FILE or --load postgres://..., or give --state a file or an s3:// URL').about('--state');
  // rows only into a table: --json is the result line, not JSON rows
  const tableOnly = loading !== undefined && opts.output.output === undefined;
  const planned = planOutputs(opts.output, f.globals.json && !tableOnly, opts.report.validate, side);
  const first = planned[0] as OutputPlan;
  const output = resolveRequestedColumns(first, request);
  const others = planned.slice(1).map((plan) => resolveRequestedColumns(plan, request));
  // the table's columns are the tabular formats' (the requested ones by default), whatever -o's
  // format: -o x.ndjson keeps every field in its file, not in the table (a CSV output's are them)
  const tableCsv = loading && (first.format === 'csv' ? output : resolveRequestedColumns({ ...first, format: 'csv' }, request)).csv;
  const load = loading && tableCsv ? { ...loading, columns: { columns: tableCsv.columns, schema: tableCsv.schema } } : undefined;
  for (const plan of [output, ...others]) {
    refuseBinaryOnTerminal(plan, f.stdout);
    // a target that cannot be written is found now, not after the report was waited for (the
    // report ID is not known yet: any value stands for it)
    if (!plan.template) continue;
    const path = expandTemplate(plan.template, { ...named, reportId: 'ID' });
    const shown = path === plan.template || plan.template.includes('{reportId}') ? plan.template : `${plan.template} (${path})`;
    // (a target checked over the network, a bucket, is checked by checkOutputs just before the run)
    placeOutput(path, f.cwd, shown, check);
  }
  if (!load && opts.load && (opts.load.table !== undefined || opts.load.scope !== undefined)) {
    throw new UsageError(`${opts.load.table !== undefined ? '--table' : '--scope'} only applies with --load`, 'add --load duckdb:PATH or --load postgres://USER@HOST/DB (or set REPORTING_LOAD)').about(opts.load.table !== undefined ? '--table' : '--scope');
  }
  // a table takes one window at a time: without --chunk, a day (DAILY, HOURLY) or a month (MONTHLY)
  // per window, so that tomorrow's run with a lookback replaces whole windows, never part of one
  const chunk = loadChunk(opts.chunk ?? (load ? defaultLoadChunk(request.breakdowns, opts.load) : undefined), load, request.breakdowns);
  const argv = withoutPassword(opts.argv ?? [], load?.target);
  return { side, request, given: opts.output, output, ...(others.length ? { more: others } : {}), wait: opts.wait, chunk, flags, argv, load };
}

/**
 * Each -o's output plan. With one -o, as always (`--format` wins, else the extension). With several,
 * each file's format is its extension's (`-o day.csv -o day.parquet`), and `--format` is refused
 * (it would name one format for files of several); `-o -` among them writes CSV to stdout (JSON
 * with --json). The CSV options (--delimiter, --bom, --excel) apply to the CSV outputs among them,
 * and are refused when none is CSV; --columns applies to every output.
 */
function planOutputs(options: OutputOptions, json: boolean, validate: boolean, side: Side): OutputPlan[] {
  const more = options.more ?? [];
  // (the options planOutput reads, in an object of one shape: a copy of the parsed options, whose
  // shapes vary from job to job, was a fifth of prepareRun's time for a job file's jobs)
  const one = { output: options.output, format: options.format, columns: options.columns, delimiter: options.delimiter, bom: options.bom, excel: options.excel, columnCase: options.columnCase, json, validate };
  const fields = columnNames([side]);
  if (more.length === 0) return [planOutput(one, PLACEHOLDERS, fields)];
  if (options.format !== undefined) {
    throw new UsageError(`--format ${options.format} names one format, and -o is given ${more.length + 1} times`, 'drop --format: with several -o, each file\'s format comes from its extension (-o day.csv -o day.parquet)').about('--format');
  }
  const csvOptions = { delimiter: options.delimiter, bom: options.bom, excel: options.excel };
  const plans = [options.output, ...more].map((output) => {
    const bare = planOutput({ ...one, output, delimiter: undefined, bom: undefined, excel: undefined }, PLACEHOLDERS, fields);
    return bare.format === 'csv' ? planOutput({ ...one, output, ...csvOptions }, PLACEHOLDERS, fields) : bare;
  });
  // --delimiter with no CSV among the outputs: the error of one output
  if (!plans.some((plan) => plan.format === 'csv')) planOutput({ ...one, output: options.output }, PLACEHOLDERS, fields);
  return plans;
}

/** --load (or REPORTING_LOAD) and its companions; the password joins the secrets masked everywhere. */
function loadPlanOf(flags: LoadFlags | undefined, side: Side, f: EngineDeps): Omit<LoadPlan, 'columns'> | undefined {
  const given = flags?.load ?? f.env.REPORTING_LOAD;
  if (given === undefined || given.trim() === '') return undefined;
  const target = parseLoadTarget(given, f.cwd);
  for (const secret of loadSecrets(target, f.env)) f.secrets.add(secret);
  if (flags?.scope !== undefined && flags.scope.trim() === '') throw new UsageError('--scope wants a name', 'e.g. --scope acme-fr').about('--scope');
  return { target, table: tableName(flags?.table, side, target.engine), account: flags?.scope?.trim(), onSchemaChange: flags?.onSchemaChange ?? 'fail' };
}

/** A window split in two gives partial rows of a month (MONTHLY) or of the period (RANGE, no time
 * breakdown), which a file sums and a table would keep side by side: --load does not split those. */
function loadChunk(chunk: ChunkFlags | undefined, load: Omit<LoadPlan, 'columns'> | undefined, breakdowns: readonly string[]): ChunkFlags | undefined {
  const time = timeDimensionOf(breakdowns);
  return chunk && load && time !== 'DAILY' && time !== 'HOURLY' ? { ...chunk, split: false } : chunk;
}

function defaultLoadChunk(breakdowns: readonly string[], flags: LoadFlags | undefined): ChunkFlags | undefined {
  const time = timeDimensionOf(breakdowns);
  const chunk = time === 'DAILY' || time === 'HOURLY' ? 'day' : time === 'MONTHLY' ? 'month' : undefined;
  return chunk ? { chunk, concurrency: flags?.concurrency ?? DEFAULT_CONCURRENCY, split: flags?.split ?? true } : undefined;
}
