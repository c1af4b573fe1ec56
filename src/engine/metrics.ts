// --metrics-file PATH (`run`, `jobs run`): what the last run of each job did, in Prometheus' text
// format for node_exporter's textfile collector, replaced atomically at the end of every run. The
// gauges say the last run; the counters (`_total`) go on from the file's previous values, and a
// failed run keeps the last success's time. A series is labelled by `reporting_job` and `profile`
// (not `job`, which Prometheus sets itself). Names and meanings: docs/exit-codes-and-logs.md.

import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../fs/atomic.js';
import type { LogEvent } from './events.js';

/** What one job's run events add up to. A run that ends well says its totals in its `done`
 * event (a merged file is one `written` for every window); until then, and for a run that does
 * not end well, the windows' own events are counted. */
export class RunMetrics {
  private counted = { written: 0, unchanged: 0, rows: 0 };
  private done?: { written: number; unchanged: number; skipped: number; rows: number };
  private skippedWindows = 0;
  /** bytes by file (a file rewritten whole says its size again), and of outputs with no file */
  private readonly files = new Map<string, number>();
  private unnamedBytes = 0;
  retries = 0;
  throttled = 0;
  /** any event seen: the run started (not refused before its first step) */
  started = false;
  private readonly failed = new Set<number>();
  /** reports submitted or resumed, by ID, not downloaded nor ended */
  private readonly open = new Set<string>();

  observe(event: LogEvent): void {
    this.started = true;
    switch (event.event) {
      case 'submitted':
      case 'resumed':
        this.open.add(event.reportId);
        if (event.event === 'submitted' && event.replaces) this.open.delete(event.replaces);
        break;
      case 'download_done':
        this.open.delete(event.reportId);
        break;
      case 'split':
        // its report ended ("too much data"): the halves are reports of their own
        if (event.reportId) this.open.delete(event.reportId);
        break;
      case 'written':
      case 'unchanged':
      case 'loaded':
        if (event.event === 'unchanged') this.counted.unchanged++;
        else this.counted.written++;
        this.counted.rows += event.rows;
        if (event.event !== 'loaded' && event.bytes !== undefined) {
          if (event.file) this.files.set(event.file, event.bytes);
          else this.unnamedBytes += event.bytes;
        }
        break;
      case 'skipped':
        this.skippedWindows++;
        break;
      case 'failed':
        this.failed.add(event.window.since);
        // a report kept for the next run (--max-wait gave up) is still in progress on the server
        if (event.reportId && !event.resumable) this.open.delete(event.reportId);
        break;
      case 'retried':
        // (the pool's own "too many reports in progress" notes are not requests tried again)
        if (/too many reports in progress/.test(event.message)) break;
        this.retries++;
        if (/^HTTP 429\b/.test(event.message)) this.throttled++;
        break;
      case 'done':
        this.done = { written: event.fetched - event.unchanged, unchanged: event.unchanged, skipped: event.skipped, rows: event.rows };
        // a run that ended well left nothing running
        this.open.clear();
        break;
      default:
        break;
    }
  }

  get written(): number {
    return this.done?.written ?? this.counted.written;
  }

  get unchanged(): number {
    return this.done?.unchanged ?? this.counted.unchanged;
  }

  get skipped(): number {
    return this.done?.skipped ?? this.skippedWindows;
  }

  get rows(): number {
    return this.done?.rows ?? this.counted.rows;
  }

  get bytes(): number {
    return [...this.files.values()].reduce((sum, bytes) => sum + bytes, this.unnamedBytes);
  }

  get failedWindows(): number {
    return this.failed.size;
  }

  get inProgress(): number {
    return this.open.size;
  }
}

export interface JobRun {
  job: string;
  profile: string;
  exitCode: number;
  /** ms since the epoch (the real clock) */
  startedAt: number;
  endedAt: number;
  metrics: RunMetrics;
}

interface Family {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  value(run: JobRun, previous: (name: string) => number | undefined): number | undefined;
  /** one series per value of this label */
  outcomes?: readonly ['written', 'unchanged', 'skipped', 'failed'];
}

const seconds = (ms: number) => ms / 1000;

const FAMILIES: readonly Family[] = [
  { name: 'reporting_last_run_timestamp_seconds', type: 'gauge', help: 'When the job\'s last run ended (Unix time).', value: (run) => seconds(run.endedAt) },
  { name: 'reporting_last_success_timestamp_seconds', type: 'gauge', help: 'When the job\'s last run that ended well ended (Unix time); kept from the file\'s previous value after a failure.',
    value: (run, previous) => (run.exitCode === 0 ? seconds(run.endedAt) : previous('reporting_last_success_timestamp_seconds')) },
  { name: 'reporting_last_run_exit_code', type: 'gauge', help: 'The exit code of the job\'s last run (0: it ended well).', value: (run) => run.exitCode },
  { name: 'reporting_last_run_duration_seconds', type: 'gauge', help: 'How long the job\'s last run took.', value: (run) => seconds(run.endedAt - run.startedAt) },
  { name: 'reporting_last_run_windows', type: 'gauge', help: 'The windows of the job\'s last run, by outcome.', value: () => undefined, outcomes: ['written', 'unchanged', 'skipped', 'failed'] },
  { name: 'reporting_last_run_rows', type: 'gauge', help: 'The rows the job\'s last run wrote or found unchanged.', value: (run) => run.metrics.rows },
  { name: 'reporting_last_run_bytes', type: 'gauge', help: 'The bytes of the files the job\'s last run wrote or found unchanged.', value: (run) => run.metrics.bytes },
  { name: 'reporting_reports_in_progress', type: 'gauge', help: 'Reports the job\'s last run left in progress on the server (the next run resumes them).', value: (run) => run.metrics.inProgress },
  { name: 'reporting_throttled_total', type: 'counter', help: 'HTTP 429 answers the job\'s runs were given and waited out.', value: (run, previous) => (previous('reporting_throttled_total') ?? 0) + run.metrics.throttled },
  { name: 'reporting_retries_total', type: 'counter', help: 'Requests and downloads the job\'s runs tried again.', value: (run, previous) => (previous('reporting_retries_total') ?? 0) + run.metrics.retries },
];

/** A label value as the text format writes it: backslash, double quote and line feed escaped. */
const labelValue = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labelsOf = (run: Pick<JobRun, 'job' | 'profile'>, extra = '') => `{reporting_job="${labelValue(run.job)}",profile="${labelValue(run.profile)}"${extra}}`;

/** The values of a metrics file this tool wrote, by series (`name{labels}`). */
export function readMetrics(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(reporting_[a-z_]+\{.*\}) (\S+)$/.exec(line);
    if (match) values.set(match[1] as string, Number(match[2]));
  }
  return values;
}

/** The text of the file: `runs` (one per job), and the series of jobs not run now as they were. */
export function metricsText(runs: readonly JobRun[], before: Map<string, number>): string {
  const now = new Set(runs.map((run) => labelsOf(run)));
  let text = '';
  for (const family of FAMILIES) {
    text += `# HELP ${family.name} ${family.help}\n# TYPE ${family.name} ${family.type}\n`;
    // jobs of other shards or runs keep their series (one file may serve several)
    for (const [series, value] of before) {
      const labels = series.slice(series.indexOf('{'));
      const base = labels.replace(/,outcome="[a-z]+"\}$/, '}');
      if (series.startsWith(`${family.name}{`) && !now.has(base)) text += `${series} ${value}\n`;
    }
    for (const run of runs) {
      if (family.outcomes) {
        const counts = { written: run.metrics.written, unchanged: run.metrics.unchanged, skipped: run.metrics.skipped, failed: run.metrics.failedWindows };
        for (const outcome of family.outcomes) text += `${family.name}${labelsOf(run, `,outcome="${outcome}"`)} ${counts[outcome]}\n`;
        continue;
      }
      const value = family.value(run, (name) => before.get(`${name}${labelsOf(run)}`));
      if (value !== undefined) text += `${family.name}${labelsOf(run)} ${value}\n`;
    }
  }
  return text;
}

/** Replaces the metrics file with the runs' series (and those of other jobs it held). */
export async function writeMetricsFile(path: string, runs: readonly JobRun[]): Promise<void> {
  let before = new Map<string, number>();
  try {
    before = readMetrics(readFileSync(path, 'utf8'));
  } catch {
    // none yet, or unreadable: counters start again
  }
  await writeFileAtomic(path, metricsText(runs, before));
}
