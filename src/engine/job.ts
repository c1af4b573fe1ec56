// What a run is asked to do, as the stages read it: the request, the output, the waiting, the
// windows (--chunk) and the recurring job's flags (--state and its companions). The CLI maps its
// flags into these types (the types of a stage live with the stage).

import type { OutputOptions, OutputPlan } from '../export/output.js';
import type { CsvOptions } from '../export/writers.js';
import type { Side } from '../report/catalog.js';
import type { Readiness, WaitFlags } from '../report/poll.js';
import type { ReportRequest } from '../report/request.js';
import type { LogEvent } from './events.js';
import type { LogFormat } from './limits.js';
import type { OnSchemaChange } from '../load/load.js';
import type { LoadTarget } from '../load/target.js';

/** run --load: the database, the table, and how this run's rows are told apart and replaced. */
export interface LoadPlan {
  target: LoadTarget;
  /** the table's name, in parts (schema, table) */
  table: string[];
  /** --scope: the account part of the scope (default: the profile's name, or `env`) */
  account?: string;
  onSchemaChange: OnSchemaChange;
  /** the table's columns, chosen as a tabular file's would be (the requested ones by default,
   * whatever -o's format): `columns` undefined is every field (--columns all); `schema` types them */
  columns: Pick<CsvOptions, 'columns' | 'schema'>;
}

export interface ChunkFlags {
  chunk: string;
  concurrency: number;
  /** false with --no-split */
  split: boolean;
}

/** --state, --since auto, --lookback, --full-refresh, --no-resume, --log-format */
export interface JobFlags {
  state?: string;
  /** --since auto: continue after the last window done in the state file */
  sinceAuto: boolean;
  lookbackDays: number;
  fullRefresh: boolean;
  /** false with --no-resume */
  resume: boolean;
  /** --start with --since auto, as given; `startAt` its second (prepare.ts prepareRun reads it) */
  start?: string;
  startAt?: number;
  /** --log-format; not given: REPORTING_LOG_FORMAT, else text (prepare.ts prepareRun decides) */
  logFormat?: LogFormat;
  /** --lock-wait: how long to wait for the state's lock (0: a lock held is exit 2 at once) */
  lockWaitMs?: number;
  /** --metrics-file: where `run` writes what it did (Prometheus text format) */
  metricsFile?: string;
}

export const DEFAULT_JOB_FLAGS: JobFlags = { sinceAuto: false, lookbackDays: 0, fullRefresh: false, resume: true, logFormat: 'text' };

export interface Job {
  side: Side;
  request: ReportRequest;
  /** the output flags as given (the pick-up command repeats them) */
  given: OutputOptions;
  output: OutputPlan;
  /** -o repeated: the outputs after `output`, each written whole from the same report */
  more?: readonly OutputPlan[];
  wait: WaitFlags;
  /** undefined: the period is one window */
  chunk?: ChunkFlags;
  flags: JobFlags;
  /** the command line after `reporting`, for the command that retries failed windows */
  argv: readonly string[];
  /** --load: the rows go into a table (and to -o's file too, if given) */
  load?: LoadPlan;
  /** a budget shared with other runs of the process (`jobs run`): held by each window's task from
   * its submit to the end of its download, on top of the run's own --concurrency */
  gate?: Gate;
  /** when reports become ready, learned as they do: shared by the runs of a process (`jobs run`),
   * else the run's own */
  readiness?: Readiness;
  /** sees every event the run's view is given (`jobs run` sums them up per job) */
  observe?(event: LogEvent): void;
}

/** Slots shared by several runs: acquire one (waiting in turn, or until the signal aborts). The
 * release it resolves with may be called more than once (the end of the download, then the end of
 * the task): only the first call counts. */
export interface Gate {
  /** `soon`: told while the acquire waits, when a holder's slot is about to be freed (see readying) */
  acquire(signal: AbortSignal, soon?: () => void): Promise<() => void>;
  /** A holder's report is about to be ready (expected within 100 ms, engine/fetch.ts INTENT_LEAD_MS),
   * or is ready: its slot goes on soon, and a task waiting for one can record its intent to submit
   * meanwhile, off the path from one report to the next. Answers whether a waiting task was told
   * (none waits: the holder tells again when its report is ready). */
  readying?(): boolean;
}

/**
 * The two shapes of a run, one pipeline: `report` (no --chunk, no --state) streams its one report
 * straight into the output and reads as `run` always did; `windows` spools each window's report
 * and replays them in order, with the windows' live view.
 */
export type Shape = 'report' | 'windows';

export const shapeOf = (job: Pick<Job, 'chunk' | 'flags' | 'load'>): Shape => (job.chunk || job.flags.state || job.load ? 'windows' : 'report');

/** Every output of a run: -o's first, then the others (-o repeated). */
export const outputsOf = (job: Pick<Job, 'output' | 'more'>): readonly OutputPlan[] => [job.output, ...job.more ?? []];
