// A run, whatever its size, is one pipeline of named stages: plan (plan.ts: which windows, and
// why) -> fetch (fetch.ts: start or resume, wait, download, under the pool) -> deliver (here: the
// windows' reports into the destination, in order) -> record (record.ts: state, journal, events).
// A run of one report is a plan of one window, streamed straight into its output.

import { createReadStream } from 'node:fs';
import type { ReportingClient } from '../api/client.js';
import { configDir } from '../auth/store.js';
import { databaseGone } from '../load/engines.js';
import { LockedError } from '../fs/lock.js';
import { chooseDestination, type Committed, type Destination } from '../destinations/index.js';
import { abortRecordedUploads, type ObjectStoreConfig } from '../destinations/objects.js';
import { describeOutput, type RecordedObject, type UploadLedger } from '../destinations/sinks.js';
import { droppedWarning } from '../export/output.js';
import type { EngineDeps } from './deps.js';
import { collectGarbage } from '../gc.js';
import { Readiness, defaultResumeHint, pollOptionsFrom } from '../report/poll.js';
import { endOfParisDay, parisDate } from '../report/time.js';
import { checkChunk, formatChunk, parseChunk, splitWindow, type Chunk, type Window } from '../report/windows.js';
import { GC_AFTER_BYTES, MAX_DOWNLOADS, Slots, WINDOW_FIRST_POLL_MS, fetchWindow, type FetchDeps, type Fetched } from './fetch.js';
import type { Job } from './job.js';
import type { Previous } from './resume.js';
import { Journal, journalKey, journalRequestOf } from './journal.js';
import { closing, doneEvent, interrupted, mergedFailure, partialFailure, pickUpCommand, reportError, upToDate } from './outcome.js';
import { planRun, precheck, writesPerWindow, type PlanInput, type RunPlan } from './plan.js';
import { checkOutputs } from './prepare.js';
import { runWindows, type PoolOutcome, type TaskContext } from './pool.js';
import { Recorder } from './record.js';
import { jobStateStore, tableSpecOf } from './load.js';
import { RunState, stateRequestOf, type StateRequest } from './state.js';
import { Spool } from './spool.js';
import { createView, type RunView } from './view.js';
import type { LogEvent } from './events.js';
import { eventJson } from './log.js';
import { jsonLine, safeText } from '../io/safe-text.js';

/** Runs `job`: with --state, against its state file (locked for the run). Its outputs are checked
 * first, as their kinds check them just before the first request (prepare.ts checkOutputs). */
export async function runJob(job: Job, f: EngineDeps): Promise<void> {
  await checkOutputs(job, f);
  const chunk = job.chunk ? parseChunk(job.chunk.chunk) : undefined;
  if (chunk) checkChunk(chunk, job.request.breakdowns);
  const where = { chunk, configDir: configDir(f.env, f.host.platform), cwd: f.cwd, platform: f.host.platform, startedAt: f.now() };
  // what can be checked is, before the state file is locked
  precheck(job, { ...where, since: job.request.since });
  // no token (and no login to get one): one error now, before the state is opened, not a failure
  // recorded for every window
  f.client().requireCredentials();
  if (!job.flags.state) return runPlanned(job, f, { ...where, since: job.request.since, prechecked: job.request.since });
  const output = recordedOutput(job, f);
  const state = await RunState.open(jobStateStore({ ...job, flags: { ...job.flags, state: job.flags.state } }, f, waitNote(job, f)), stateRequestOfJob(job, f, output, chunk), { now: f.calendar.now, fullRefresh: job.flags.fullRefresh, lockWaitMs: job.flags.lockWaitMs })
    .catch((error: unknown) => {
      // held by another run, and no wait asked for: run and jobs run can wait (state forget cannot)
      if (!(error instanceof LockedError) || job.flags.lockWaitMs) throw error;
      throw new LockedError(error.file, error.holder, `${error.hint ? `${error.hint}; ` : ''}--lock-wait 2m waits for it`, error.what);
    });
  try {
    const start = state.start(job.flags.sinceAuto ? 'auto' : job.request.since, job.request.until, job.flags.lookbackDays, job.flags.startAt);
    // a start inside a recorded window (the lookback's days, a --since in mid-week) starts at that
    // window, so that windows stay on the grid they were recorded on: no day in two files
    const since = state.windowStartOf(start.since);
    // the uploads a killed run left in flight (recorded in the state, wherever it is): aborted
    if (state.uploads.length) await state.uploadsEnded(await abortRecordedUploads(state.uploads, objectsConfig(f, where.configDir)));
    if (start.upToDate) return await nothingToFetch(job, f, where.startedAt);
    // (precheck checked the windows from the request's since: planRun checks them again only
    // when the state starts the run elsewhere)
    await runPlanned(job, f, { ...where, since, prechecked: job.request.since, state, lookbackFrom: start.lookbackFrom, tableGone: job.load !== undefined && databaseGone(job.load.target, f.cwd) });
  } finally {
    await state.close();
  }
}

/** What the object store needs of the run (-o s3://). */
const objectsConfig = (f: EngineDeps, dir: string): ObjectStoreConfig => ({ env: f.env, configDir: dir, host: f.host, trace: f.trace, retries: f.globals.retries, waits: f });

/** The state as the record of the uploads in flight. */
const ledgerOf = (state: RunState): UploadLedger => ({ started: (upload) => state.uploadStarted(upload), ended: (ids) => state.uploadsEnded(ids) });


/** The output as the state records it: an absolute path, or an object's URL as given. */
export const recordedOutput = (job: Job, f: EngineDeps): string | undefined => recordedTemplate(job.output.template, f);

const recordedTemplate = (template: string | undefined, f: EngineDeps): string | undefined =>
  template === undefined ? template : describeOutput(template, f.cwd);

/** -o repeated: every output as the state records it (null: stdout); undefined with one -o. */
const recordedOutputs = (job: Job, f: EngineDeps): (string | null)[] | undefined =>
  job.more?.length ? [job.output, ...job.more].map((plan) => recordedTemplate(plan.template, f) ?? null) : undefined;

/** Some output of the run is stdout (`-o -`, first or not). */
const toStdout = (job: Job): boolean => [job.given.output, ...job.given.more ?? []].includes('-');

/** --lock-wait met a lock another run holds (a state's, a DuckDB file's): said once as the wait
 * starts, before the run's view exists, as a `warning` (in text not with -q; a JSON log has every
 * event), so that a run waiting in silence is not taken for one stuck. */
const waitNote = (job: Job, f: EngineDeps) => (message: string) => {
  const json = job.flags.logFormat === 'json';
  if (f.globals.quiet && !json) return;
  const period = { since: job.request.since, until: job.request.until };
  f.stderr.write(`${json ? jsonLine(eventJson({ event: 'warning', window: period, message }, f.calendar.now(), f.secrets, f.calendar.moved?.at)) : `warning: ${safeText(f.secrets.redact(message))}`}\n`);
};

/** The request a state file records for this run: what the next run must match. */
export function stateRequestOfJob(job: Job, f: EngineDeps, output: string | undefined, chunk: Chunk | undefined): StateRequest {
  const load = job.load ? { target: job.load.target.shown, table: job.load.table.join('.') } : undefined;
  const outputs = recordedOutputs(job, f);
  return stateRequestOf(job.request, job.load && output === undefined && !outputs ? 'table' : job.output.format, output, chunk ? formatChunk(chunk) : null, outputShapeOf(job), { baseUrl: f.baseUrl().url, profile: f.profileName }, load, outputs);
}

/** What the state records of the output's shape: another one would mix two kinds of file. */
export const outputShapeOf = ({ output: { csv } }: Job) => ({ columns: csv.columns ?? null, delimiter: csv.delimiter, bom: csv.bom, excel: csv.excel, columnCase: csv.columnCase ?? 'camel' });

async function nothingToFetch(job: Job, f: EngineDeps, startedAt: number): Promise<void> {
  const view = observed(job, await createView(f, { shape: 'windows', format: job.flags.logFormat ?? 'text', quiet: f.globals.quiet, side: job.side, total: 0, secrets: f.secrets, retries: f.globals.retries }));
  view.note(`${job.side}: nothing to fetch: every window up to ${parisDate(job.request.until)} is done (${job.flags.state})`);
  view.emit(doneEvent({ since: job.request.until, until: job.request.until }, { fetched: 0, skipped: 0, committed: [] }, f.now() - startedAt));
  if (f.globals.json) f.stdout.write(`${JSON.stringify(upToDate(job, writesPerWindow(job)))}\n`);
}

/** The view, its events shown to `job.observe` too. */
const observed = (job: Job, view: RunView): RunView => (job.observe ? { ...view, emit: (event) => { job.observe?.(event); view.emit(event); } } : view);

/** Where a run's plan starts: what planRun is given, but the journal's recall; and when it began. */
type Where = Omit<PlanInput, 'recall'> & { startedAt: number };

async function runPlanned(job: Job, f: EngineDeps, where: Where): Promise<void> {
  const { side, metrics, breakdowns } = job.request;
  const journal = where.state ? undefined : { journal: new Journal(where.configDir, f.now), keyOf: journalKeyOf(job, f), about: { side, metrics: [...metrics], breakdowns: [...breakdowns] } };
  const plan = planRun(job, { ...where, recall: (w) => recall(journal, w) });
  const view = observed(job, await createView(f, { shape: plan.shape, format: job.flags.logFormat ?? 'text', quiet: f.globals.quiet, verbose: f.globals.verbose, perWindow: plan.perWindow, side: job.side, total: plan.windows.length, secrets: f.secrets, retries: f.globals.retries }));
  const recorder = new Recorder(view, where.state, journal, (line) => f.trace?.(line), f.signal);
  if (plan.period.until > endOfParisDay(f.calendar.now())) {
    view.emit({ event: 'warning', window: plan.period, message: `the period ends on ${parisDate(plan.period.until)}, after today (${parisDate(f.calendar.now() / 1000)}): the days after today have no numbers yet` });
  }
  await recorder.planned(plan.windows, plan.period);
  const toFetch = plan.windows.filter((p) => p.step !== 'skip');
  if (toFetch.length === 0 && !plan.perWindow) {
    // one merged output, every window done already: the file stands as it is
    const into = job.output.template ?? (job.load ? `${job.load.table.join('.')} in ${job.load.target.shown}` : 'stdout');
    if (!f.globals.quiet) view.note(`${job.side}: nothing to fetch: every window is done (${into})`);
    view.emit(doneEvent(plan.period, { fetched: 0, skipped: plan.windows.length, committed: [] }, f.now() - where.startedAt));
    if (f.globals.json) f.stdout.write(`${JSON.stringify(upToDate(job, false))}\n`);
    return;
  }
  const run = new PlannedRun(job, f, plan, view, recorder, where);
  await run.go(toFetch.map((p) => p.window));
}

export const recall = (journal: { journal: Journal; keyOf(w: Window): string } | undefined, window: Window) => {
  const remembered = journal?.journal.recall(journal.keyOf(window));
  return remembered ? { reportId: remembered.reportId, source: 'journal' as const } : undefined;
};

export const journalKeyOf = (job: Job, f: EngineDeps) => (window: Window) =>
  journalKey(journalRequestOf({ ...job.request, since: window.since, until: window.until }, f.baseUrl().url, f.profileName));

/** What the state file recorded of each object (-o s3://) before this run, by URL: its SHA-256 and
 * ETag, the latest recorded when several windows name it (a merged object). */
function recordedObjects(plan: RunPlan): (url: string) => RecordedObject | undefined {
  const latest = new Map<string, { sha256: string; etag: string; at: string }>();
  for (const { entry } of plan.windows) {
    // (-o repeated: each output's record)
    for (const output of entry?.outputs ?? (entry ? [entry] : [])) {
      // (an object's record: a file has no ETag)
      if (!output.file || !output.sha256 || !output.etag) continue;
      const at = entry?.finishedAt ?? '';
      if ((latest.get(output.file)?.at ?? '') <= at) latest.set(output.file, { sha256: output.sha256, etag: output.etag, at });
    }
  }
  return (url) => {
    const found = latest.get(url);
    return found && { sha256: found.sha256, etag: found.etag };
  };
}

/** The fetch, deliver and record stages over the windows to fetch, under the pool. */
class PlannedRun {
  private readonly destination: Destination;
  private readonly client: ReportingClient;
  private readonly spool: Spool;
  /** a windows run streamed straight into its table (no spool) */
  private readonly direct: boolean;
  private readonly committed: Committed[] = [];
  /** a table and one merged file (-o without {since}/{until}): the windows the table committed,
   * recorded in the state only once the file holding them is in place, so that a file that failed
   * is written by the next run (which loads those windows again: replaced, never duplicated) */
  private readonly held: Committed[] = [];
  private readonly holdLoaded: boolean;
  private readonly downloading = new Set<number>();
  private fetched?: Fetched;
  private fetchedWindows = 0;

  constructor(private readonly job: Job, private readonly f: EngineDeps, private readonly plan: RunPlan, private readonly view: RunView, private readonly recorder: Recorder, private readonly where: Where) {
    this.client = f.client();
    this.destination = chooseDestination({
      format: job.output.format, csv: job.output.csv, merge: plan.merge, cwd: f.cwd, host: f.host, stdout: f.stdout,
      keepUnchanged: where.state !== undefined, remote: { ...objectsConfig(f, where.configDir), ...(where.state ? { ledger: ledgerOf(where.state) } : {}) }, recorded: recordedObjects(plan), fileOf: plan.fileOf, perWindow: plan.perWindow, whole: plan.shape === 'report', period: plan.period,
      table: job.load ? tableSpecOf(job, job.load, f, plan.period, plan.windows.filter((p) => p.step !== 'skip').map((p) => p.window), where.state, !plan.fileOf && !toStdout(job) && !job.more?.length,
        (message) => view.emit({ event: 'warning', window: plan.period, message })) : undefined, stdoutToo: toStdout(job),
      more: (job.more ?? []).map((output, i) => ({ format: output.format, csv: output.csv, fileOf: plan.moreFileOf[i] })),
    });
    const files = plan.fileOf !== undefined || toStdout(job) || Boolean(job.more?.length);
    // a table alone, one window to fetch: its report streams straight into the table, downloaded
    // and loaded at once (the spool would download it whole, then read it again: 1M rows into
    // DuckDB 1.8x CSV's time through it); its pieces, if split, come one at a time
    this.direct = plan.shape === 'windows' && job.load !== undefined && !files
      && plan.windows.filter((p) => p.step !== 'skip').length === 1;
    this.spool = new Spool(f.host);
    // one merged file, or stdout (-o -), beside the table
    this.holdLoaded = job.load !== undefined && files && !plan.perWindow && plan.shape === 'windows';
    this.previous = new Map(plan.windows.flatMap((p) => (p.previous ? [[`${p.window.since}-${p.window.until}`, p.previous] as const] : [])));
  }

  async go(windows: Window[]): Promise<void> {
    let failed = true;
    try {
      await this.destination.prepare?.();
      const gate = this.job.gate;
      const outcome = await runWindows(windows, async (window, ctx) => {
        // a window to submit (none to resume) records its intent while it waits, once a slot is
        // about to be freed: that write is then off the path from one report's download to the
        // next one's submit
        let early: Promise<void> | undefined;
        const soon = this.previous.has(`${window.since}-${window.until}`) ? undefined : () => {
          // (told from the holder's task: nothing of this window's may throw there)
          early = Promise.resolve().then(() => this.recorder.submitting(window));
          early.catch(() => undefined);
        };
        const release = await gate?.acquire(ctx.signal, soon).catch(async (error: unknown) => {
          // stopped while it waited (Ctrl-C, a pod's SIGTERM): nothing was submitted, so the
          // intent recorded early goes, and the next run gives no warning for this window
          if (early) await early.then(() => this.recorder.notSubmitting(window)).catch(() => undefined);
          throw error;
        });
        try {
          if (!release) return await fetchWindow(window, ctx, this.fetchDeps());
          const deps = this.fetchDeps();
          // the slot goes on when the body is here (release may be called twice: once is enough)
          return await fetchWindow(window, ctx, {
            ...deps, downloaded: release, ready: () => gate?.readying?.() === true,
            intend: (w) => {
              const recorded = early;
              early = undefined;
              return recorded ?? deps.intend(w);
            },
          });
        } finally {
          release?.();
        }
      }, this.poolOptions());
      this.view.stop();
      this.throwIfFailed(outcome);
      for (const output of await this.destination.finish()) await this.commit(output);
      // every destination has the windows now: the table's are recorded
      for (const output of this.held.splice(0)) await this.recorder.recordLoaded(output);
      failed = false;
      this.close();
    } catch (error) {
      throw this.plan.shape === 'report' ? reportError(error, this.fetched?.reportId ?? this.recorder.reportIdOf(this.plan.period), this.downloading.size > 0 || this.fetched !== undefined, this.pickUp()) : error;
    } finally {
      this.view.stop();
      // unfinished outputs leave nothing behind; finished per-window files stay
      if (failed) await this.destination.abort();
      this.spool.close();
    }
  }

  private pickUp(): string | undefined {
    const id = this.fetched?.reportId ?? this.recorder.reportIdOf(this.plan.period);
    return id === undefined ? undefined : pickUpCommand(this.job, this.plan, this.f, id);
  }

  private poolOptions(): Parameters<typeof runWindows<Fetched>>[2] {
    const chunk = this.job.chunk;
    return {
      concurrency: this.direct ? 1 : chunk?.concurrency ?? 1,
      split: chunk?.split ? (w) => splitWindow(w, this.job.request.breakdowns) : undefined,
      // a table takes one window at a time (one transaction): its pieces, split or not, arrive in
      // window order, never one window's between another's
      delivery: this.plan.perWindow && !this.job.load ? 'per-window' : 'merged',
      failFast: !this.plan.perWindow,
      // one report: a 429 after the client's retries is the run's error, as any other
      ...(this.plan.shape === 'report' ? { maxThrottles: 0 } : {}),
      signal: this.f.signal, now: this.f.now, sleep: this.f.sleep, random: this.f.random,
      deliver: (window, fetched, origin) => this.deliver(window, fetched, origin),
      onEvent: (event) => this.recorder.pool(event),
    };
  }

  private fetchDeps(): FetchDeps {
    const { job, f, plan } = this;
    const report = plan.shape === 'report';
    return {
      job, retries: f.globals.retries, random: f.random, now: f.now,
      poll: { ...pollOptionsFrom(job.wait, f), ...(report ? {} : { firstMs: WINDOW_FIRST_POLL_MS }) },
      emit: (event) => {
        if (event.event === 'download_started') this.downloading.add(event.window.since);
        this.view.emit(event);
      },
      progress: (window, rows, bytes) => this.view.progress(window, rows, bytes),
      clientFor: (window, ctx) => this.clientFor(window, ctx),
      attemptOf: (window) => (this.where.state?.entry(window)?.attempts ?? 0) + 1,
      previousOf: (window) => {
        const previous = this.previous.get(`${window.since}-${window.until}`);
        // known before the status check: if the network fails there, the window keeps its report
        if (previous) this.recorder.knows(window, previous.reportId);
        return previous;
      },
      intend: (window) => this.recorder.submitting(window),
      unsent: (window) => this.recorder.notSubmitting(window),
      submitted: (window, id) => this.recorder.submitted(window, id),
      resumeHint: report ? (id) => `pick it up later with: ${pickUpCommand(job, plan, f, id)}` : defaultResumeHint,
      into: plan.shape === 'windows'
        ? { spoolOf: (window) => this.spool.fileOf(window.since, window.until), cwd: f.cwd, host: f.host, whole: this.direct ? (w, o, id) => this.destination.begin(w, o, id) : undefined }
        : { begin: (w, o, id) => this.destination.begin(w, o, id), file: (id) => plan.fileOf?.(plan.period, id) },
      slots: this.slots,
      expected: (window) => this.readiness.of(`${job.side} ${job.request.breakdowns.join(',')} ${window.until - window.since}`),
    };
  }

  /** the process's (`jobs run`), else this run's: reports of one kind (side, breakdowns, window
   * length) take about as long as each other */
  private get readiness(): Readiness {
    return this.job.readiness ?? (this.ownReadiness ??= new Readiness());
  }

  private ownReadiness?: Readiness;

  private readonly slots = new Slots(MAX_DOWNLOADS);
  /** each window's report to resume, by window: looked up once per task, not scanned for */
  private readonly previous: ReadonlyMap<string, Previous>;

  /** A client whose retries are this window's events, and whose 429s slow the pool at once. */
  private clientFor(window: Window, ctx: TaskContext): ReportingClient {
    const json = this.job.flags.logFormat === 'json';
    const textRetry = this.client.http.onRetry;
    return this.client.scoped({
      onThrottle: this.plan.shape === 'windows' ? (retryAfterMs) => ctx.throttled(retryAfterMs) : undefined,
      onRetry: (line, retry) => {
        const event: LogEvent = { event: 'retried', window, reportId: this.recorder.reportIdOf(window), attempt: retry.attempt, message: line, delayMs: retry.delayMs };
        if (json) return this.view.emit(event);
        // text: the client's own line; the job's observer (--metrics-file, jobs run) counts it still
        textRetry?.(line, retry);
        this.job.observe?.(event);
      },
      onNote: json ? (note) => this.view.emit({ event: 'relogin', window, message: note }) : undefined,
    });
  }

  /** Stage 3, deliver: a window's report into the destination (replayed from its spool), then
   * recorded; called by the pool in order, one at a time. */
  private async deliver(window: Window, fetched: Fetched, origin: Window): Promise<void> {
    this.fetchedWindows += window.until === origin.until ? 1 : 0;
    this.fetched = fetched;
    let output = fetched.output;
    if (!output) {
      output = await this.destination.begin(window, origin, fetched.reportId);
      await output.take(createReadStream(fetched.spool as string));
      await this.spool.delivered(fetched.spool as string);
      if (fetched.bytes >= GC_AFTER_BYTES) collectGarbage();
    }
    for (const committed of await output.commit()) await this.commit(committed);
  }

  private async commit(output: Committed): Promise<void> {
    this.committed.push(output);
    const hold = this.holdLoaded && output.table !== undefined;
    if (hold) this.held.push(output);
    await this.recorder.committed(output, !hold);
  }

  private throwIfFailed(outcome: PoolOutcome): void {
    const { job, f, plan } = this;
    if (outcome.aborted) {
      // (one report: or its pick-up command follows; windows: the list of those in progress follows)
      const next = this.where.state ? 'the next run with this --state resumes' : job.flags.resume ? 'the same command run again within the hour resumes' : undefined;
      const again = (reports: number) => next === undefined ? '' : plan.shape === 'report' ? `${next} it; or `
        : reports === 1 ? `${next} it (or \`reporting download ID --wait\` picks it up); ` : `${next} them (or \`reporting download ID --wait\` picks one up); `;
      // (with nothing in progress, a state's next run fetches what is left; without one, it starts over)
      const rest = this.where.state ? 'the next run with this --state fetches what is left' : undefined;
      throw interrupted(String(f.signal.reason ?? 'SIGINT'), plan, outcome, again, rest, (id) => pickUpCommand(job, plan, f, id), (w) => this.downloading.has(w.since));
    }
    const first = outcome.failures[0];
    if (!first) return;
    if (plan.shape === 'report') throw first.error;
    throw plan.perWindow ? partialFailure(outcome.failures, this.committed.length, job.argv, job.flags.logFormat === 'json' ? undefined : f.stderr) : mergedFailure(first);
  }

  private close(): void {
    const { job, f, plan } = this;
    const { note, result } = closing(job, plan, { committed: this.committed, fetched: this.fetched, fetchedWindows: this.fetchedWindows }, this.where.state !== undefined);
    // fields the chosen columns left out that held values: named, never dropped silently
    // a file that keeps every field (NDJSON, JSON) beside a table: the table alone left them out
    const tableAlone = job.load && (job.output.template !== undefined || toStdout(job)) && job.output.csv.columns === undefined;
    const dropped = droppedWarning(job.output, tableAlone ? `the table ${job.load?.table.join('.')}` : undefined);
    if (dropped) this.view.emit({ event: 'warning', window: plan.period, message: dropped });
    // -o repeated: an output whose columns left out more than the first's says so, named
    for (const other of job.more ?? []) {
      const more = [...other.csv.dropped ?? []].filter((field) => !job.output.csv.dropped?.has(field));
      const warning = more.length ? droppedWarning({ ...other, csv: { ...other.csv, dropped: new Set(more) } }, other.template ?? 'stdout') : undefined;
      if (warning) this.view.emit({ event: 'warning', window: plan.period, message: warning });
    }
    if (result && job.output.csv.dropped?.size) result.droppedFields = [...job.output.csv.dropped];
    if (!f.globals.quiet) this.view.note(note);
    const skipped = plan.windows.filter((p) => p.step === 'skip').length;
    this.view.emit(doneEvent(plan.period, { fetched: this.fetchedWindows, skipped, committed: this.committed }, f.now() - this.where.startedAt));
    if (f.globals.json && result) f.stdout.write(`${JSON.stringify(result)}\n`);
  }
}
