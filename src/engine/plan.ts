// Stage 1, plan: the request, --chunk, the state file and the journal -> the windows of the run,
// each with its step (skip, resume, retry, submit) and why. Nothing is requested here; every check
// that can refuse the run before its first request is made here.

import { mergePlan, type MergePlan } from '../destinations/merge.js';
import { UsageError } from '../errors.js';
import { expandTemplate } from '../export/output.js';
import { outputPaths, splitOutput } from '../destinations/sinks.js';
import { refuseSharedPaths, runFiles } from '../paths.js';
import { parisDate } from '../report/time.js';
import { checkDistinctTargets, parseChunk, planWindows, timeBreakdown, type Chunk, type Window } from '../report/windows.js';
import { shapeOf, type Job, type Shape } from './job.js';
import type { Previous } from './resume.js';
import type { RunState, StateEntry, Step } from './state.js';
import { isStatePath } from './stores/kinds.js';

export type StepKind = 'skip' | 'resume' | 'retry' | 'submit';

export interface PlannedWindow {
  window: Window;
  step: StepKind;
  /** done, submitted, failed, new, lookback, incomplete, missing-file, full-refresh, merged */
  why: string;
  /** what the state file recorded for it (skip: the file it is in) */
  entry?: StateEntry;
  /** resume: the report an earlier run submitted, and where that was remembered */
  previous?: Previous;
}

export interface RunPlan {
  shape: Shape;
  /** every window of the period, chronological */
  windows: PlannedWindow[];
  /** the run's period (a merged output stands for it) */
  period: Window;
  /** one file per planned window (-o with {since} or {until}) */
  perWindow: boolean;
  merge: MergePlan;
  /** -o expanded for a window and a report ID; undefined: stdout */
  fileOf?: (window: Window, reportId: string) => string;
  /** -o repeated: each further output's file (undefined: stdout), as `fileOf` */
  moreFileOf: readonly (((window: Window, reportId: string) => string) | undefined)[];
}

export interface PlanInput {
  chunk?: Chunk;
  since: number;
  state?: RunState;
  lookbackFrom?: number;
  /** the database file the state's windows were loaded into is gone: they are loaded again */
  tableGone?: boolean;
  /** the config folder (the journal and the token store live there) */
  configDir: string;
  cwd: string;
  platform: NodeJS.Platform;
  /** a report this window's request had an hour ago (the journal), when resuming */
  recall(window: Window): Previous | undefined;
  /** precheck was given this `since` (so the same windows): its checks are not made twice */
  prechecked?: number;
}

const PER_WINDOW = /\{(since|until)\}/;

/** Whether the run writes a file a window (its -o names {since} or {until}). */
export const writesPerWindow = (job: Job) => shapeOf(job) === 'windows' && job.output.template !== undefined && PER_WINDOW.test(job.output.template);

export function planRun(job: Job, input: PlanInput): RunPlan {
  const shape = shapeOf(job);
  const { request, side } = job;
  const { period, windows, perWindow, fileOf, moreFileOf } = layout(job, input);
  if (input.prechecked !== input.since) checkTargets(job, shape, windows, perWindow, fileOf, input, moreFileOf);
  const split = Boolean(job.chunk?.split);
  // the pieces of a split window go to one output, summed back where they cut a bucket
  const merge = perWindow && !split ? { mode: 'concat' as const, time: timeBreakdown(request.breakdowns) } : mergePlan(side, request.metrics, request.breakdowns, { split });
  // the state's verdict on each window; one merged output is rewritten whole, so it skips all or none
  // (a table alone takes each window by itself: no window is fetched again for another's sake)
  const merged = !perWindow && !(job.load && job.output.template === undefined && !job.more?.length);
  const steps = input.state?.plan(windows, { lookbackFrom: input.lookbackFrom, merged, tableGone: input.tableGone });
  const planned = windows.map((window) => decide(window, steps, job.flags.resume, input.recall));
  return { shape, windows: planned, period, perWindow, merge, fileOf, moreFileOf };
}

/** The windows from `since` to the request's end, and the file of each. */
function layout(job: Job, input: Pick<PlanInput, 'chunk' | 'since'>) {
  const template = job.output.template;
  const period = { since: input.since, until: job.request.until };
  const windows = input.chunk ? planWindows(input.since, job.request.until, input.chunk) : [period];
  const fileOfTemplate = (given: string | undefined) => (given === undefined ? undefined
    : (w: Window, reportId: string) => expandTemplate(given, { side: job.side, since: parisDate(w.since), until: parisDate(w.until), reportId }));
  const fileOf = fileOfTemplate(template);
  const moreFileOf = (job.more ?? []).map((plan) => fileOfTemplate(plan.template));
  // a run of one report writes one file, whatever its name holds
  const perWindowOf = (given: string | undefined) => shapeOf(job) === 'windows' && given !== undefined && PER_WINDOW.test(given);
  const perWindow = perWindowOf(template);
  // several -o: all one file per window, or all one file for the run (the windows' delivery and
  // what a failed window leaves differ between the two)
  const mixed = (job.more ?? []).find((plan) => perWindowOf(plan.template) !== perWindow);
  if (mixed) {
    const [each, one] = perWindow ? [template, mixed.template ?? '-'] : [mixed.template, template ?? '-'];
    throw new UsageError(`-o ${each} is one file per window and -o ${one} one file for the whole run: several -o are all one or all the other`, "give every -o {since} (-o 'day-{since}.csv' -o 'day-{since}.parquet'), or none");
  }
  return { period, windows, perWindow, fileOf, moreFileOf };
}

/** A window split by an earlier run is skipped if all its pieces are done, resumed if it is one
 * submitted report, submitted whole otherwise. */
function decide(window: Window, steps: readonly Step[] | undefined, resume: boolean, recall: (window: Window) => Previous | undefined): PlannedWindow {
  const mine = steps?.filter((step) => step.window.since >= window.since && step.window.until <= window.until) ?? [];
  const first = mine[0];
  if (first && mine.every((step) => step.action === 'skip')) return { window, step: 'skip', why: 'done', entry: first.entry };
  const only = mine.length === 1 ? first : undefined;
  const exact = only && only.window.since === window.since && only.window.until === window.until;
  if (exact && only.action === 'resume') {
    if (!resume) return { window, step: 'submit', why: 'no-resume', entry: only.entry };
    return { window, step: 'resume', why: 'submitted', entry: only.entry, previous: { reportId: only.reportId, source: 'state' } };
  }
  if (exact && only.action === 'retry') return { window, step: 'retry', why: 'failed', entry: only.entry };
  const remembered = steps || !resume ? undefined : recall(window);
  if (remembered) return { window, step: 'resume', why: 'journal', previous: remembered };
  return { window, step: 'submit', why: only?.action === 'submit' ? only.reason : 'new', entry: only?.entry };
}

/** The checks of planRun that need no state file, made before it is locked: the windows of the
 * period as given (--since auto: its end) are known, all of them again once the state is read. */
export function precheck(job: Job, input: Omit<PlanInput, 'state' | 'lookbackFrom' | 'recall'>): void {
  const { windows, perWindow, fileOf, moreFileOf } = layout(job, input);
  checkTargets(job, shapeOf(job), windows, perWindow, fileOf, input, moreFileOf);
}

/** What `job` writes over its period as given (each window's, for a per-window -o): its files by
 * folder, and its other targets (objects): what two jobs of one file must not share. ({reportId}
 * names no file known now.) A folder without placeholders holds the names its last part makes,
 * which are the same for every job of one period and chunk (`out/{job}/{since}.csv`): made once. */
export interface TargetPlaces {
  files: Map<string, readonly string[]>;
  /** targets that are not paths of this machine (an object's URL), as written */
  others: string[];
}

export function targetFolders(job: Job): TargetPlaces {
  const places: TargetPlaces = { files: new Map(), others: [] };
  // (-o repeated: every output's)
  for (const plan of [job.output, ...job.more ?? []]) templateFolders(job, plan.template, places);
  return places;
}

function templateFolders(job: Job, template: string | undefined, places: TargetPlaces): void {
  if (template === undefined || template.includes('{reportId}')) return;
  const period = { since: job.request.since, until: job.request.until };
  const perWindow = shapeOf(job) === 'windows' && PER_WINDOW.test(template);
  const chunk = perWindow ? job.chunk?.chunk : undefined;
  const windowsNow = () => (perWindow ? windowsOf(period, chunk) : [period]);
  const fileOf = (part: string) => (w: Window) => expandTemplate(part, { side: job.side, since: parisDate(w.since), until: parisDate(w.until), reportId: '' });
  const add = (folder: string, names: readonly string[]) => {
    const known = places.files.get(folder);
    places.files.set(folder, known ? [...known, ...names] : names);
  };
  // (the folder and the name as the target's kind reads the path: for a file, node's dirname and
  // basename, as the run's own writer: a trailing `/` is no name, a `\` is a character of the name on POSIX)
  const { where: folder, name, local } = splitOutput(template);
  if (local && folder !== '.' && !folder.includes('{')) {
    // (the windows are the period's, cut by the chunk: named by them)
    const key = `${name}\0${job.side}\0${chunk ?? ''}\0${period.since}:${period.until}`;
    let names = knownNames.get(key);
    if (!names) {
      names = windowsNow().map(fileOf(name));
      if (knownNames.size >= 256) knownNames.clear();
      knownNames.set(key, names);
    }
    return add(folder, names);
  }
  const byFolder = new Map<string, string[]>();
  for (const path of windowsNow().map(fileOf(template))) {
    const at = splitOutput(path);
    byFolder.set(at.where, [...byFolder.get(at.where) ?? [], at.name]);
  }
  for (const [where, names] of byFolder) {
    if (local) add(where, names);
    else places.others.push(...names.map((one) => `${where}/${one}`));
  }
}
const knownNames = new Map<string, readonly string[]>();

/** The windows of a period (planWindows remembers a few periods' windows). */
function windowsOf(period: Window, chunk: string | undefined): readonly Window[] {
  return chunk === undefined ? [period] : planWindows(period.since, period.until, parseChunk(chunk));
}

/** {reportId} in a file of many windows, two windows into one file, one path for two things. */
function checkTargets(job: Job, shape: Shape, windows: readonly Window[], perWindow: boolean, fileOf: RunPlan['fileOf'], input: Pick<PlanInput, 'configDir' | 'cwd' | 'platform'>, moreFileOf: RunPlan['moreFileOf'] = []): void {
  const template = job.output.template;
  if (shape === 'windows' && [job.output, ...job.more ?? []].some((plan) => plan.template?.includes('{reportId}'))) {
    throw job.chunk
      ? new UsageError('with --chunk, -o takes {side}, {since} and {until}, not {reportId} (a window may take several reports)', "write one file per window with -o 'out-{since}.csv'")
      : new UsageError('with --state, -o takes {side}, {since} and {until}, not {reportId} (a window may take several reports)', "name the file by its period, e.g. -o 'buyer-{since}.csv'");
  }
  if (!job.chunk && job.flags.lookbackDays > 0 && perWindow && job.flags.state) {
    // each run's period would be its own file, and a re-fetched day would sit in two of them
    throw new UsageError('--lookback with one file per run period would write the days it re-fetches into two files', 'add --chunk day, so that each day has one file, or write one file without {since}/{until}');
  }
  const filesOf = (of: RunPlan['fileOf'], given: string | undefined) => {
    // each window's file, named once (a job file's plan checks thousands of jobs' windows)
    const named = of && !given?.includes('{reportId}') ? new Map(windows.map((w) => [w, of(w, '')])) : undefined;
    if (perWindow && of) checkDistinctTargets(windows, (w) => named?.get(w) ?? of(w, ''));
    // (the paths of this machine: an object in a bucket is not one)
    return named ? [...new Set(outputPaths([...named.values()]))] : [];
  };
  const more = moreFileOf.map((of, i) => filesOf(of, job.more?.[i]?.template));
  refuseSharedPaths(runFiles(job.flags.state && isStatePath(job.flags.state) ? job.flags.state : undefined, filesOf(fileOf, template), input.configDir, more), input.cwd, input.platform);
}
