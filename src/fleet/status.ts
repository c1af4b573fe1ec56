// `reporting jobs status`: one line a job, from its state (a file or a bucket): its last window
// done and how old that is (the lag), the windows failed or still to fetch, what its last run
// did, and who holds its lock. A check a scheduler or a probe can run: exit 1 when a job's lag is
// beyond --max-lag. The JSON form is documented in docs/jobs.md ("Status").

import type { StateDoc } from '../engine/state.js';
import type { LockView } from '../engine/stores/store.js';

export interface JobStatus {
  job: string;
  profile: string;
  /** the state's path or URL; null: the job keeps no state (it is not judged) */
  state: string | null;
  /** the last window done (the latest end), or null when none is */
  lastDone: { since: string; until: string; finishedAt: string | null } | null;
  /** seconds from the end of the last window done to now; null: no window done (or no state) */
  lagSeconds: number | null;
  /** windows the state records as failed */
  failed: number;
  /** windows the job would fetch now, up to its --until (failed, missing, not done yet); null:
   * it cannot plan yet (--since auto with no run recorded and no --start) */
  toFetch: number | null;
  /** the last run: the windows it finished (since the period it planned was recorded), their rows and bytes */
  lastRun: { at: string; windows: number; rows: number; bytes: number } | null;
  /** the state's lock, when one is there */
  lock: { pid: number | null; host: string | null; since: string | null; stale: boolean; expiresAt: string | null } | null;
  /** beyond --max-lag (or no window ever done, or its state cannot be read) */
  stale: boolean;
  /** why the state could not be read or used (corrupt, another request's): the job is judged stale */
  error: string | null;
}

/** What one job's status is made of. */
export interface StatusInput {
  job: string;
  profile: string;
  state?: string;
  doc?: StateDoc;
  lock?: LockView;
  toFetch: number | null;
  /** the state could not be read or used */
  error?: string;
  /** ms since the epoch (the calendar's now) */
  now: number;
  maxLagMs?: number;
}

export function jobStatus(input: StatusInput): JobStatus {
  const { doc } = input;
  const done = doc?.windows.filter((entry) => entry.status === 'done') ?? [];
  const last = done.reduce<(typeof done)[number] | undefined>((latest, entry) => (!latest || entry.untilUnix > latest.untilUnix ? entry : latest), undefined);
  const lagSeconds = last ? Math.max(0, Math.floor(input.now / 1000) - (last.untilUnix + 1)) : null;
  const runAt = doc?.planned?.at;
  const ran = runAt ? done.filter((entry) => entry.finishedAt !== null && entry.finishedAt >= runAt) : [];
  const lock = input.lock;
  return {
    job: input.job,
    profile: input.profile,
    state: input.state ?? null,
    lastDone: last ? { since: last.since, until: last.until, finishedAt: last.finishedAt } : null,
    lagSeconds,
    failed: doc?.windows.filter((entry) => entry.status === 'failed').length ?? 0,
    toFetch: input.toFetch,
    lastRun: runAt ? { at: runAt, windows: ran.length, rows: ran.reduce((sum, entry) => sum + (entry.rows ?? 0), 0), bytes: bytesOf(ran) } : null,
    lock: lock ? { pid: lock.holder?.pid ?? null, host: lock.holder?.host ?? null, since: lock.holder?.since ?? null, stale: lock.stale, expiresAt: lock.expiresAt === undefined ? null : new Date(lock.expiresAt).toISOString() } : null,
    stale: input.maxLagMs !== undefined && input.state !== undefined && (input.error !== undefined || lagSeconds === null || lagSeconds * 1000 > input.maxLagMs),
    error: input.error ?? null,
  };
}

/** The bytes of the files the windows were written to, each file once (a file of several windows
 * records its whole size in each), and of the windows with no file (a table, stdout). */
function bytesOf(entries: readonly { file: string | null; bytes: number | null; outputs?: readonly { file: string | null; bytes: number | null }[] | null }[]): number {
  const files = new Map<string, number>();
  let rest = 0;
  // (-o repeated: each output's file)
  for (const entry of entries.flatMap((one) => one.outputs ?? [one])) {
    if (entry.file !== null) files.set(entry.file, entry.bytes ?? 0);
    else rest += entry.bytes ?? 0;
  }
  return [...files.values()].reduce((sum, bytes) => sum + bytes, rest);
}

/** 1d 6h, 5h 12m, 42m, 30s: a lag as a person reads it. */
export function lagText(seconds: number | null): string {
  if (seconds === null) return 'never';
  const [days, hours, minutes] = [Math.floor(seconds / 86_400), Math.floor((seconds % 86_400) / 3600), Math.floor((seconds % 3600) / 60)];
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${minutes}m`;
  return minutes > 0 ? `${minutes}m` : `${seconds}s`;
}
export const bytesText = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : bytes >= 1e3 ? `${(bytes / 1e3).toFixed(1)} kB` : `${bytes} B`);

/** The cells of a job's line: JOB, LAST DONE, LAG, FAILED, TO FETCH, LAST RUN, LOCK. */
export function statusCells(status: JobStatus): string[] {
  const lock = status.lock;
  return [
    status.job,
    // the end of the last window done, in Paris time as the state records it
    status.state === null ? '(no state)' : status.error !== null ? `error: ${status.error}` : status.lastDone ? status.lastDone.until.slice(0, 16).replace('T', ' ') : 'none',
    status.state === null ? '' : `${lagText(status.lagSeconds)}${status.stale ? ' STALE' : ''}`,
    String(status.failed),
    status.toFetch === null ? '?' : String(status.toFetch),
    status.lastRun ? `${status.lastRun.windows} windows, ${status.lastRun.rows} rows, ${bytesText(status.lastRun.bytes)}` : '',
    lock ? `${lock.stale ? 'left by' : 'held by'} ${lock.pid ?? '?'}${lock.host ? `@${lock.host}` : ''}${lock.expiresAt ? ` until ${lock.expiresAt}` : ''}` : '',
  ];
}

export const STATUS_HEADER = ['JOB', 'LAST DONE', 'LAG', 'FAILED', 'TO FETCH', 'LAST RUN', 'LOCK'];
