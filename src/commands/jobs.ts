// `jobs run|list|validate`: many `run` command lines declared once in a job file (src/fleet/file.ts),
// run by one process under a shared budget: at most `concurrency` reports at once overall and
// `per-profile` for one profile. Each job is exactly its `run`: the same parser (handed in by the
// CLI), the same checks before any request, the same engine, state file and outputs.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { formatDuration } from '../duration.js';
import { CliError, EXIT, InterruptedError, UsageError } from '../errors.js';
import { engineDeps, type Factory } from '../factory.js';
import type { EngineDeps } from '../engine/deps.js';
import { Budget, Starts, type Turn } from '../fleet/budget.js';
import { Readiness } from '../report/poll.js';
import { JobFileError, JOB_FILE, keyOfFlag, missingJobFile, readJobFile, type At, type FileJob, type JobFile, type RunFlagInfo } from '../fleet/file.js';
import { labelledOutput, writeJobError } from '../fleet/labelled.js';
import { boundOldGeneration, boundYoungGeneration } from '../io/young-generation.js';
import { selectJobs, shardFrom } from '../fleet/select.js';
import type { Shard } from '../fleet/shard.js';
import { profileVariable, unknownProfile } from '../auth/resolve.js';
import { jsonLine, safeLine, safeText } from '../io/safe-text.js';
import { setMaxListeners } from 'node:events';
import { shellCommand } from '../io/shell.js';
import { table } from '../io/table.js';
import { jobStatus, statusCells, STATUS_HEADER, type JobStatus } from '../fleet/status.js';
import { readStateOf, type StateDoc } from '../engine/state.js';
import { dayCells, pageDays, periodOfArgs, recordedSpan, statusPage, type Period } from '../fleet/page.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { runJob } from '../engine/engine.js';
import { RunMetrics, writeMetricsFile, type JobRun } from '../engine/metrics.js';
import { LockedError } from '../fs/lock.js';
import type { LogEvent } from '../engine/events.js';
import { DEFAULT_JOB_FLAGS, type Gate, type Job } from '../engine/job.js';
import { previewJob, previewLines } from '../engine/preview.js';
import { DEFAULT_CONCURRENCY, logFormatFrom, type LogFormat } from '../engine/limits.js';
import { checkChunk, parseChunk } from '../report/windows.js';
import { jobStateStore } from '../engine/load.js';
import { withSettledPaths, withSettledPathsAsync } from '../paths.js';
import { SharedTargets } from '../fleet/claims.js';
import { prepareRun, type RunOptions } from '../engine/prepare.js';
import { checkWritableTarget, type WriteCheck } from '../export/sink.js';

/** `run`'s parser, from the CLI (src/cli/run-words.ts). */
export interface RunWordsParser {
  flags: readonly RunFlagInfo[];
  parse(words: readonly string[], check?: boolean): RunOptions;
}

export interface JobsOptions {
  action: 'run' | 'plan' | 'list' | 'validate' | 'status';
  /** -f FILE (else REPORTING_JOBS, else reporting.yaml) */
  file?: string;
  /** names or globs; none: every job */
  names: string[];
  exclude: string[];
  shard?: Shard;
  /** `jobs run --log-format`: the run's own lines, and each job's that sets none */
  logFormat?: LogFormat;
  /** `jobs run --lock-wait`: every job's wait for its state's lock (over the file's `lock-wait:`) */
  lockWaitMs?: number;
  /** `jobs run --full-refresh`: every job starts its state (or its table's period) over */
  fullRefresh?: boolean;
  /** `jobs status --max-lag`: exit 1 when a job's lag is beyond it */
  maxLagMs?: number;
  /** `jobs status --html`: the page of the fleet, written there (the lines still go to stdout) */
  html?: string;
  /** `jobs run --metrics-file`: every job's run, in Prometheus' text format */
  metricsFile?: string;
  parser: RunWordsParser;
}

export async function run(opts: JobsOptions, f: Factory): Promise<void> {
  if (f.profileName !== 'default' && (opts.action === 'run' || opts.action === 'plan')) {
    // silently ignored, it would run every profile's jobs when one was meant
    throw new UsageError(`--profile ${f.profileName} (or REPORTING_PROFILE) does not apply to jobs: each job names its profile in the job file`, `run one profile's jobs by name: reporting jobs ${opts.action} '*@${f.profileName}'`);
  }
  // reading and checking thousands of jobs makes garbage (each job's parse and plan), and so does
  // running them (each job's requests, state records and spools): V8's young and old generations
  // are kept from growing far past what is alive (src/io/young-generation.ts). Left to V8, a run
  // of 3,000 jobs held 30-40 MB alive in a heap of 140 MB and more (peak RSS 247-266 MiB against
  // 150 MiB bounded: test/bench/RESULTS.md, "A fleet under one budget")
  const releases = [boundYoungGeneration(), boundOldGeneration()];
  try {
    const checked = checkFile(opts, f);
    if (opts.action === 'status') {
      // the page's file is checked before any state is read (the file cannot be written: said first)
      if (opts.html !== undefined) checkWritableTarget(opts.html, f.cwd, opts.html, 'probe', '--html');
      const html = opts.html === undefined ? undefined : resolve(f.cwd, opts.html);
      return await withSettledPathsAsync(() => statusJobs(checked.selected, opts.parser, f, opts.maxLagMs, html === undefined ? undefined : { path: html, file: checked.file.file }));
    }
    if (opts.action !== 'run') return await answer(opts.action, checked, opts.parser, f);
    return await runFile(opts, checked, f);
  } finally {
    for (const release of releases) release();
  }
}

async function runFile(opts: JobsOptions, checked: ReturnType<typeof checkFile>, f: Factory): Promise<void> {
  // each job's words parsed again when it starts (checked above; a parse is a few microseconds):
  // 3,000 jobs' options are not held while the first ones run
  const parsed = (job: FileJob) => opts.parser.parse(job.words);
  // the run's log: --log-format, else REPORTING_LOG_FORMAT, else JSON when every job's is (a file's
  // `log-format: json`); a job that sets none logs as the run does
  const format = opts.logFormat ?? logFormatFrom(f.env) ?? (checked.selected.every((job) => parsed(job).jobs?.logFormat === 'json') ? 'json' : 'text');
  const metricsFile = opts.metricsFile === undefined ? undefined : resolve(f.cwd, opts.metricsFile);
  if (metricsFile) checkWritableTarget(metricsFile, f.cwd, metricsFile, 'probe', '--metrics-file');
  const optionsOf = (job: FileJob): RunOptions => {
    const one = parsed(job);
    return { ...one, jobs: { ...(one.jobs ?? DEFAULT_JOB_FLAGS), logFormat: one.jobs?.logFormat ?? format, ...(opts.lockWaitMs === undefined ? {} : { lockWaitMs: opts.lockWaitMs }), ...(opts.fullRefresh ? { fullRefresh: true } : {}) } };
  };
  await runJobs(checked.selected, optionsOf, checked.file, format, f, metricsFile);
}

/** The job file read and every job of it checked; the selected jobs, with their options when they
 * run or are planned. */
function checkFile(opts: JobsOptions, f: Factory) {
  // the environment read once: thousands of jobs read it again and again (process.env is slow to read)
  const env = { ...f.env };
  const file = loadFile(opts, f, env);
  const selected = opts.action === 'validate' ? file.jobs : selectJobs(file.jobs, opts.names, opts.exclude, shardFrom(opts.shard, env));
  // every job of the file is checked, whatever is selected (a shard, a name): two jobs that clash
  // clash in whichever pods run them. Only `jobs run` writes, and only for the jobs it runs: list,
  // plan and validate leave the file system as they found it
  const running = new Set(opts.action === 'run' ? selected : []);
  // what is kept of each job is its targets' identities (20,000 prepared jobs took 600 MB); `jobs
  // plan` keeps its shard's jobs as checked (json off, as its profile's factory has it): not twice
  const targets = new SharedTargets(file, { cwd: f.cwd, host: f.host, env, secrets: f.secrets }, (profile) => f.forProfile(profile).baseUrl().url);
  const planned = opts.action === 'plan' ? new Set(selected) : undefined;
  const prepared = new Map<FileJob, Job>();
  // one pass over every job's paths: each folder asked of the file system once (src/paths.ts)
  withSettledPaths(() => {
    checkJobs(file.jobs, file, opts.parser, f, env, (job) => (running.has(job) ? 'probe' : 'look'), (index, job) => {
      targets.claim(index, job);
      if (planned?.has(file.jobs[index] as FileJob)) prepared.set(file.jobs[index] as FileJob, job);
    });
    if (opts.action !== 'list') checkProfiles(selected, file, f, env);
    targets.refuse();
  });
  return { file, selected, prepared };
}

/** `jobs list`, `validate` and `plan`: what the file holds, and what each job would do. */
function answer(action: Exclude<JobsOptions['action'], 'run' | 'status'>, { file, selected, prepared }: ReturnType<typeof checkFile>, parser: RunWordsParser, f: Factory): Promise<void> | void {
  if (action === 'list') {
    const names = selected.map((job) => job.name);
    f.stdout.write(f.globals.json ? `${JSON.stringify(names)}\n` : names.map((name) => `${name}\n`).join(''));
    return;
  }
  if (action === 'validate') {
    if (!f.globals.quiet) f.stderr.write(`${safeText(file.file)}: ${file.jobs.length} job${file.jobs.length === 1 ? '' : 's'}, valid\n`);
    if (f.globals.json) f.stdout.write(`${JSON.stringify({ file: file.file, valid: true, jobs: file.jobs.map((job) => ({ job: job.name, profile: job.profile, side: job.side, command: f.secrets.redact(shellCommand(['reporting', 'run', ...commandWords(job)])) })) })}\n`);
    return;
  }
  // (the plan reads each job's state and paths, and writes nothing: one pass, each folder asked once)
  return withSettledPathsAsync(() => planJobs(selected, prepared, parser, f));
}

function loadFile(opts: JobsOptions, f: Factory, env: Factory['env']): JobFile {
  const file = readFile(opts, f, env);
  for (const secret of file.secrets) f.secrets.add(secret);
  return file;
}

function readFile(opts: JobsOptions, f: Factory, env: Factory['env']): JobFile {
  const file = opts.file ?? (env.REPORTING_JOBS?.trim() || JOB_FILE);
  let text: string;
  try {
    text = readFileSync(resolve(f.cwd, file), 'utf8');
  } catch (error) {
    throw missingJobFile(file, (error as NodeJS.ErrnoException).code, f.cwd);
  }
  return readJobFile(text, file, f.cwd, env, opts.parser.flags);
}

/** The place of the key an error is about (its flag, `--since` or `-o`: CliError.flag), else the job's. */
function placeOf(job: FileJob, error: unknown, flags: readonly RunFlagInfo[]): At {
  const key = error instanceof CliError && error.flag !== undefined ? keyOfFlag(flags, error.flag) : undefined;
  return (key && job.keys.get(key)) || job.at;
}

/** Each job as `run` would check its command line: its words together, then what `run` checks
 * before its first request. When they fail, its keys' values one by one find the value at fault
 * (each error at its value; a job whose words parse together has no value at fault alone: `check:
 * false` is the same parse without the checks between flags), else the error is placed by its words. */
function checkJobs(jobs: readonly FileJob[], file: JobFile, parser: RunWordsParser, f: Factory, env: Factory['env'], check: (job: FileJob) => WriteCheck, onChecked: (index: number, prepared: Job) => void): void {
  const quiet = { ...engineDeps(f), env, globals: { ...f.globals, json: false } };
  for (const [index, job] of jobs.entries()) {
    const at = (fallback: ReturnType<typeof placeOf>, error: unknown): never => {
      if (!(error instanceof CliError)) throw error;
      throw new JobFileError(file.file, fallback, `job "${job.name}": ${f.secrets.redact(error.message)}`, error.hint && f.secrets.redact(error.hint));
    };
    let opts: RunOptions;
    try {
      opts = parser.parse(job.words);
    } catch (error) {
      locateWordsError(job, parser, at);
      return at(placeOf(job, error, parser.flags), error);
    }
    try {
      const prepared = prepareRun(opts, quiet, check(job));
      // what the engine checks first (before any request), checked now for every job
      if (opts.chunk) checkChunk(parseChunk(opts.chunk.chunk), prepared.request.breakdowns);
      onChecked(index, prepared);
    } catch (error) {
      at(placeOf(job, error, parser.flags), error);
    }
  }
}

/** The first of a job's keys whose value alone `run` refuses: thrown at that value. */
function locateWordsError(job: FileJob, parser: RunWordsParser, at: (place: ReturnType<typeof placeOf>, error: unknown) => never): void {
  try {
    parser.parse([job.side], false);
  } catch (error) {
    at(job.keys.get('side') ?? job.at, error);
  }
  for (const [key, words] of job.keyWords) {
    try {
      parser.parse([job.side, ...words], false);
    } catch (error) {
      at(job.keys.get(key) ?? job.at, error);
    }
  }
}

/** A profile that does not exist is the file's mistake. Each profile needs a token of its own: its
 * variable (REPORTING_TOKEN_<PROFILE>) or its stored login. REPORTING_TOKEN, and a base URL from
 * the environment or --base-url, would stand for every profile: with jobs of several profiles,
 * refused unless each of them has its own variable. */
function checkProfiles(jobs: readonly FileJob[], file: JobFile, f: Factory, env: Factory['env']): void {
  const own = (profile: string) => Boolean(env[profileVariable('REPORTING_TOKEN', profile)]?.trim());
  const fromEnvironment = ['REPORTING_TOKEN', 'REPORTING_BASE_URL'].filter((name) => env[name]?.trim());
  if (f.globals.baseUrl) fromEnvironment.push('--base-url');
  const first = jobs[0];
  const other = jobs.find((job) => job.profile !== first?.profile);
  if (first && other && fromEnvironment.length > 0 && !jobs.every((job) => own(job.profile))) {
    const without = jobs.find((job) => !own(job.profile)) as FileJob;
    throw new JobFileError(file.file, other.profileAt, `jobs of several profiles ("${first.profile}", "${other.profile}") with ${fromEnvironment.join(' and ')} set: one account's data would be saved under each profile`,
      `give each profile a token of its own (${profileVariable('REPORTING_TOKEN', without.profile)} for "${without.profile}", and so on), or unset ${fromEnvironment.join(' and ')} and log in to each (reporting login --profile NAME), or run one profile's jobs`);
  }
  const missing = jobs.filter((job) => !own(job.profile));
  if (missing.length === 0 || env.REPORTING_TOKEN?.trim()) return;
  const stored = f.store().profiles();
  const unknown = missing.find((job) => !stored[job.profile]);
  if (!unknown) return;
  const error = unknownProfile(unknown.profile, Object.keys(stored));
  throw new JobFileError(file.file, unknown.profileAt, `job "${unknown.name}": ${error.message}`, error.hint);
}

/** The words of a job's `run` command line: its profile's too. */
const commandWords = (job: FileJob) => [...job.words, ...(job.profile === 'default' ? [] : ['--profile', job.profile])];

interface Outcome {
  job: string;
  profile: string;
  exitCode: number;
  fetched: number;
  skipped: number;
  failed: number;
  rows: number;
  files: string[];
  durationMs: number;
  error?: string;
  retry?: string;
}

/** What each job would do now: the engine's plan, from its state file as it is (no lock taken, no
 * request sent, nothing written). */
async function planJobs(jobs: readonly FileJob[], prepared: ReadonlyMap<FileJob, Job>, parser: RunWordsParser, f: Factory): Promise<void> {
  const profiles = new Map<string, EngineDeps>();
  // each job's plan kept as its text (a few hundred bytes, where its windows' records were some
  // kilobytes), all written once every job is planned: the output is whole or absent
  const texts: string[] = [];
  for (const job of jobs) texts.push(await planText(job));
  async function planText(job: FileJob): Promise<string> {
    let deps = profiles.get(job.profile);
    if (!deps) profiles.set(job.profile, deps = engineDeps(f.forProfile(job.profile)));
    const windows = await previewJob(prepared.get(job) ?? prepareRun(parser.parse(job.words), deps, 'look'), deps);
    if (f.globals.json) return JSON.stringify({ job: job.name, profile: job.profile, windows });
    const fetch = windows.filter((w) => w.action !== 'skip').length;
    return `${job.name}: ${fetch} window${fetch === 1 ? '' : 's'} to fetch, ${windows.length - fetch} to skip\n${previewLines(windows).map((line) => `  ${line}\n`).join('')}`;
  }
  // (the JSON is the document {"jobs": [...]} as JSON.stringify writes it)
  f.stdout.write(f.globals.json ? `{"jobs":[${texts.join(',')}]}\n` : texts.join(''));
}

/** `jobs status`: each job's state (no lock taken, no request to the API), one line a job; exit 1
 * when one is stale beyond --max-lag. */
async function statusJobs(jobs: readonly FileJob[], parser: RunWordsParser, f: Factory, maxLagMs: number | undefined, html?: { path: string; file: string }): Promise<void> {
  const profiles = new Map<string, EngineDeps>();
  const statuses: JobStatus[] = [];
  // (--html) what each job's row of days is made of
  const grid: { doc?: StateDoc; period?: Period; running: boolean; gone?: Period[] }[] = [];
  for (const job of jobs) {
    let deps = profiles.get(job.profile);
    if (!deps) profiles.set(job.profile, deps = engineDeps(f.forProfile(job.profile)));
    const prepared = prepareRun(parser.parse(job.words), deps, 'look');
    const store = prepared.flags.state ? jobStateStore({ ...prepared, flags: { ...prepared.flags, state: prepared.flags.state } }, deps) : undefined;
    // a state that cannot be read (corrupt, newer) or used (another request's) is this job's line,
    // not the end of every job's
    let error: string | undefined;
    const said = (caught: unknown) => {
      if (!(caught instanceof CliError)) throw caught;
      error ??= caught.message;
      return undefined;
    };
    const [doc, lock] = store ? await Promise.all([readStateOf(store).catch(said), store.inspectLock().catch(said)]) : [undefined, undefined];
    // what the job would fetch now; one that cannot plan yet (--since auto, no run recorded, no
    // --start) says `?`; a state of another request is an error
    const windows = error !== undefined ? undefined : await previewJob(prepared, deps).catch((caught: unknown) => (doc ? said(caught) : caught instanceof UsageError ? undefined : said(caught)));
    statuses.push(jobStatus({ job: job.name, profile: job.profile, state: store?.name, doc, lock, toFetch: windows?.filter((w) => w.action !== 'skip').length ?? null, now: f.calendar.now(), maxLagMs, ...(error === undefined ? {} : { error }) }));
    if (html && store) grid.push({ doc, period: periodOf(prepared, doc), running: lock !== undefined && !lock.stale, gone: (windows ?? []).filter((w) => w.reason === 'missing-file').map(periodOfArgs) });
    else if (html) grid.push({ running: false });
  }
  // the page first: a scheduler's --max-lag exit 1 below comes with it
  if (f.globals.json) f.stdout.write(`${JSON.stringify({ jobs: statuses })}\n`);
  else {
    const cells = statuses.map(statusCells);
    f.stdout.write(f.stdout.isTTY ? table(STATUS_HEADER, cells, f.stdout.columns, { keep: [0, 1, 2] }) : cells.map((row) => `${row.map(safeLine).join('\t')}\n`).join(''));
  }
  if (html) {
    const spans = grid.map(({ doc, period }) => spanOf(period, recordedSpan(doc)));
    const days = pageDays(spans, f.calendar.now());
    const page = statusPage({
      jobs: statuses.map((status, index) => ({ status, cells: dayCells(grid[index]?.doc, grid[index]?.period, days, grid[index]?.running ?? false, grid[index]?.gone) })),
      days, file: html.file, now: f.calendar.now(), version: f.version, redact: (text) => f.secrets.redact(text), ...(maxLagMs === undefined ? {} : { maxLag: formatDuration(maxLagMs) }),
    });
    await writeFileAtomic(html.path, page).catch((error: unknown) => {
      throw new CliError(`cannot write the page ${html.path}: ${(error as Error).message}`, EXIT.internal);
    });
  }
  const stale = statuses.filter((status) => status.stale);
  if (stale.length && maxLagMs !== undefined) {
    const names = stale.map((status) => status.job);
    throw new CliError(`${stale.length} job${stale.length === 1 ? '' : 's'} stale beyond --max-lag ${formatDuration(maxLagMs)}: ${names.slice(0, 10).join(', ')}${names.length > 10 ? `, and ${names.length - 10} more` : ''}`, EXIT.internal,
      'a job whose last window done is older (or that has none): see its state with `reporting state show`, and its last run\'s log');
  }
}

/** The period a job asks for now: from its --since (with --since auto: its first window recorded,
 * else its --start), to its --until; undefined while a --since auto job has neither. */
function periodOf(job: Job, doc: StateDoc | undefined): Period | undefined {
  const since = job.flags.sinceAuto ? recordedSpan(doc)?.since ?? job.flags.startAt : job.request.since;
  return since === undefined ? undefined : { since, until: job.request.until };
}

const spanOf = (a: Period | undefined, b: Period | undefined): Period | undefined =>
  a && b ? { since: Math.min(a.since, b.since), until: Math.max(a.until, b.until) } : a ?? b;

/** What a job's events add up to. */
class Tally {
  fetched = 0;
  skipped = 0;
  rows = 0;
  readonly failed = new Set<number>();
  readonly files = new Set<string>();
  private done = false;

  observe(event: LogEvent): void {
    if (event.event === 'failed') this.failed.add(event.window.since);
    if ((event.event === 'written' || event.event === 'unchanged') && !this.done) {
      this.fetched++;
      this.rows += event.rows;
      if (event.file) this.files.add(event.file);
    }
    if (event.event === 'done') {
      this.done = true;
      this.fetched = event.fetched;
      this.skipped = event.skipped;
      this.rows = event.rows;
      for (const file of event.files) this.files.add(file);
    }
  }
}

/** After Ctrl-C, up to this many jobs not finished are named, each with its retry command. */
const NAMED_JOBS = 5;

async function runJobs(jobs: readonly FileJob[], optionsOf: (job: FileJob) => RunOptions, file: JobFile, format: LogFormat, f: Factory, metricsFile?: string): Promise<void> {
  const concurrency = file.concurrency ?? DEFAULT_CONCURRENCY;
  const budget = new Budget(concurrency, Math.min(file.perProfile ?? concurrency, concurrency));
  // every job's waits learn when reports become ready, and every other job's polls use it
  const readiness = new Readiness();
  const starts = new Starts(concurrency);
  // each job's pool listens to the process's signal (Ctrl-C): hundreds of jobs are not a leak
  setMaxListeners(Math.max(10, 4 * jobs.length), f.signal);
  // (each job's run kept for the metrics file only)
  const runs: JobRun[] = [];
  const ran = metricsFile ? (run: JobRun) => runs.push(run) : undefined;
  // a job is started, its options made, when its turn comes (in the file's order): the jobs still
  // to start hold nothing but their place in the file
  const running: Promise<Outcome>[] = [];
  for (const job of jobs) {
    const turn = await starts.turn();
    const outcome = runOne(job, optionsOf(job), file, { budget, readiness, turn }, f, ran).finally(turn.end);
    // (awaited below, with every other job's; not an unhandled rejection while later jobs start)
    outcome.catch(() => undefined);
    running.push(outcome);
  }
  // (every job ends before the run does, even one failing outside its own errors: they share connections)
  const settled = await Promise.allSettled(running);
  const outcomes = settled.map((one) => { if (one.status === 'rejected') throw one.reason; return one.value; });
  // every job's run, also when some failed (a failed write of it fails the run)
  if (metricsFile) {
    await writeMetricsFile(metricsFile, runs).catch((error: unknown) => {
      throw logged(format === 'json', new CliError(`cannot write the metrics file ${metricsFile}: ${(error as Error).message}`, EXIT.internal));
    });
  }
  const failed = outcomes.filter((outcome) => outcome.exitCode !== EXIT.ok);
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify({ file: file.file, concurrency, perProfile: budget.perProfile, peak: budget.peak, jobs: outcomes })}\n`);
  }
  const json = format === 'json';
  if (json) {
    // the summary as events, one a job (its retry command with it): stderr stays JSON to the end
    const ts = new Date(f.calendar.now()).toISOString();
    f.stderr.write(outcomes.map((outcome) => `${jsonLine({ v: 1, ts, event: 'job', ...outcome })}\n`).join(''));
  } else if (!f.globals.quiet) {
    const rows = outcomes.map((o) => [
      o.job, o.exitCode === EXIT.ok ? 'ok' : `exit ${o.exitCode}`, String(o.fetched), String(o.skipped), String(o.failed),
      o.rows.toLocaleString('en-US'), String(o.files.length), formatDuration(o.durationMs),
    ]);
    f.stderr.write(`${table(['JOB', 'RESULT', 'FETCHED', 'SKIPPED', 'FAILED', 'ROWS', 'FILES', 'TIME'], rows, f.stderr.isTTY ? f.stderr.columns : undefined)}\n`);
  }
  if (failed.length === 0) return;
  // stopped (Ctrl-C, SIGTERM) with many jobs left: the same command again, not a retry line a job
  const many = f.signal.aborted && failed.length > NAMED_JOBS;
  if (!f.globals.json && !json && !many) for (const outcome of failed) f.stderr.write(`retry: ${outcome.retry}\n`);
  if (f.signal.aborted) {
    // Ctrl-C (or SIGTERM): the run's exit code; each job said above which of its reports go on
    const names = `${failed.slice(0, NAMED_JOBS).map((o) => o.job).join(', ')}${many ? `, and ${failed.length - NAMED_JOBS} more` : ''}`;
    throw logged(json, new InterruptedError(String(f.signal.reason ?? 'SIGINT'), `${failed.length} of ${outcomes.length} job${outcomes.length === 1 ? '' : 's'} did not finish (${names}); ${failed.length === 1 ? `run it again with: ${failed[0]?.retry}` : many ? 'run the same command again (a job with a state goes on from where it stopped; one without starts over)' : 'the retry commands above run only those'}`));
  }
  const codes = new Set(failed.map((outcome) => outcome.exitCode));
  const code = codes.size === 1 ? [...codes][0] as number : EXIT.report;
  // a usage error (exit 2) is not retried as is (docs/exit-codes-and-logs.md): fixed first
  const first = code === EXIT.usage ? 'see to what the error above says (a setting, or a state another run holds), then ' : '';
  throw logged(json, new CliError(`${failed.length} of ${outcomes.length} job${outcomes.length === 1 ? '' : 's'} failed: ${failed.map((o) => o.job).join(', ')}`, code,
    failed.length === 1 ? `${first}${first ? 'run' : 'retry'} it with: ${failed[0]?.retry}`
      : `${first ? 'see to what the errors above say; ' : ''}${json ? 'the `retry` of each failed job above runs only that job' : 'the retry commands above run only the jobs that failed'}`));
}

/** `error`, said as a JSON line when the run's log is JSON (cli/exit.ts writes it). */
function logged<E extends CliError>(json: boolean, error: E): E {
  error.jsonLog = json;
  return error;
}

async function runOne(fileJob: FileJob, opts: RunOptions, file: JobFile, { budget, readiness, turn }: { budget: Budget; readiness: Readiness; turn: Turn }, f: Factory, ran?: (run: JobRun) => void): Promise<Outcome> {
  const started = f.now();
  const stderr = labelledOutput(f.stderr, fileJob.name, fileJob.profile, (text) => f.secrets.redact(text));
  const jf = f.forProfile(fileJob.profile, stderr);
  const deps = engineDeps(jf);
  for (const secret of file.secrets) jf.secrets.add(secret);
  const tally = new Tally();
  const metrics = ran ? new RunMetrics() : undefined;
  let refusedBeforeStart = false;
  let exitCode: number = EXIT.ok;
  let error: string | undefined;
  try {
    // (its folders were probed by the file's check, once a folder: `look` probes none again; and its
    // paths checked against each other's: its run checks them again, each window's, as it starts)
    const prepared: Job = prepareRun(opts, deps, 'look', { shared: false });
    await runJob({ ...prepared, argv: ['run', ...commandWords(fileJob)], gate: startedAt(budget.gateFor(fileJob.profile, turn.end), turn), readiness, observe: (event) => { tally.observe(event); metrics?.observe(event); } }, deps);
  } catch (caught) {
    refusedBeforeStart = caught instanceof LockedError || caught instanceof UsageError;
    exitCode = caught instanceof CliError ? caught.exitCode : EXIT.internal;
    error = f.secrets.redact(caught instanceof Error ? caught.message : String(caught));
    writeJobError(stderr, caught, { json: opts.jobs?.logFormat === 'json', at: jf.calendar.now(), redact: (text) => jf.secrets.redact(text) });
  } finally {
    await jf.close();
    stderr.flush();
  }
  // (a job that never started, refused by another run's lock or a usage error, keeps its series)
  if (ran && metrics && (metrics.started || exitCode === EXIT.ok || !refusedBeforeStart)) ran({ job: fileJob.name, profile: fileJob.profile, exitCode, startedAt: started, endedAt: f.now(), metrics });
  return {
    job: fileJob.name, profile: fileJob.profile, exitCode, fetched: tally.fetched, skipped: tally.skipped, failed: tally.failed.size,
    rows: tally.rows, files: [...tally.files].sort(), durationMs: f.now() - started,
    ...(error === undefined ? {} : { error, retry: shellCommand(['reporting', 'jobs', 'run', '-f', file.file, fileJob.name]) }),
  };
}

/** The gate, whose first slot ends the job's turn to start (Starts). */
function startedAt(gate: Gate, turn: Turn): Gate {
  return {
    acquire: async (signal, soon) => {
      turn.reached();
      try {
        return await gate.acquire(signal, soon);
      } finally {
        turn.end();
      }
    },
    readying: () => gate.readying?.() === true,
  };
}
