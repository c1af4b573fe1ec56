// Without --state, an interrupted `run` started again with the same arguments within the hour
// resumes the report it had submitted instead of submitting a new one. The journal lives beside
// the token store (`journal/` in the config folder, owner-only): one small file per request, named
// by a hash of the normalised request, so parallel runs of different requests never share a file,
// and every write is atomic, so runs of the same request never read a torn one. It never holds a
// token: the key is a hash, the entry a report ID and a time.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { ReportRequest } from '../report/request.js';
import { storedReportId } from '../api/schemas.js';
import { SIDES } from '../report/catalog.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { RACE_TRIES, tryAgainAtOnce } from '../retry.js';

/** How long a submitted report is worth resuming. */
export const JOURNAL_TTL_MS = 60 * 60_000;

/** How long, and how many, submitted reports keep their request's record (`requests/`, for
 * `download ID`'s columns): the last 7 days', at most 1,000 (the oldest go first). */
export const REQUESTS_TTL_MS = 7 * 24 * 60 * 60_000;
export const REQUESTS_MAX = 1000;

/** What `download` needs to know of a report's request to write its requested columns. */
const aboutSchema = z.object({
  side: z.enum(SIDES),
  metrics: z.array(z.string()),
  breakdowns: z.array(z.string()),
});
export type ReportAbout = z.infer<typeof aboutSchema>;

const entrySchema = z.object({
  v: z.literal(1),
  reportId: storedReportId,
  /** ms since the epoch */
  submittedAt: z.number(),
  /** the request's side, metrics and breakdowns (absent in entries of older versions) */
  about: aboutSchema.optional(),
});

export interface Remembered {
  reportId: string;
  submittedAt: number;
  about?: ReportAbout;
}

/** What identifies "the same arguments": the request as sent, where it is sent, as whom. */
export interface JournalRequest {
  side: string;
  since: number;
  until: number;
  metrics: readonly string[];
  breakdowns: readonly string[];
  filters: Readonly<Record<string, readonly string[]>>;
  params?: Readonly<Record<string, string | readonly string[]>>;
  baseUrl: string;
  profile: string;
}

export function journalRequestOf(request: ReportRequest, baseUrl: string, profile: string): JournalRequest {
  return {
    side: request.side, since: request.since, until: request.until, metrics: request.metrics,
    breakdowns: request.breakdowns, filters: request.filters, params: request.extra, baseUrl, profile,
  };
}

/** JSON with object keys sorted, so that the same request always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function journalKey(request: JournalRequest): string {
  const normalised = {
    ...request,
    baseUrl: request.baseUrl.replace(/\/+$/, ''),
    // a filter selects rows: the order of its values does not change the report
    filters: Object.fromEntries(Object.entries(request.filters).filter(([, v]) => v.length > 0).map(([k, v]) => [k, [...v].sort()])),
  };
  return createHash('sha256').update(canonical(normalised)).digest('hex').slice(0, 32);
}

const requestSchema = z.object({ v: z.literal(1), reportId: storedReportId, submittedAt: z.number(), about: aboutSchema });

export class Journal {
  readonly dir: string;
  /** the requests of reports submitted lately (one file a report, named by a hash of its ID) */
  readonly requestsDir: string;
  /** records written by this process since the folder was last pruned */
  private unpruned = -1;

  /** `configDir` from src/auth/store.ts; `now` in ms (the factory's clock). */
  constructor(configDir: string, private readonly now: () => number, private readonly ttlMs = JOURNAL_TTL_MS) {
    this.dir = join(configDir, 'journal');
    this.requestsDir = join(configDir, 'requests');
  }

  private file(key: string): string {
    if (!/^[0-9a-f]{8,64}$/.test(key)) throw new Error(`not a journal key: ${key}`);
    return join(this.dir, `${key}.json`);
  }

  private expired(entry: Remembered): boolean {
    const age = this.now() - entry.submittedAt;
    return age >= this.ttlMs || age < -this.ttlMs;
  }

  private read(path: string): Remembered | undefined {
    try {
      const parsed = entrySchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
      if (!parsed.success) return undefined;
      const { reportId, submittedAt, about } = parsed.data;
      return { reportId, submittedAt, ...(about ? { about } : {}) };
    } catch {
      return undefined; // absent, or unreadable: nothing to resume
    }
  }

  private requestFile(reportId: string): string {
    return join(this.requestsDir, `${createHash('sha256').update(reportId).digest('hex').slice(0, 32)}.json`);
  }

  /** A report was submitted by `buyer` or `seller` (to be downloaded later): its request is kept
   * (REQUESTS_TTL_MS, REQUESTS_MAX), so that `download ID` writes its requested columns. (`run`
   * leaves nothing behind but its output: its interrupted reports are the journal's.) One file a
   * report: commands submitting at once never share one. */
  async rememberRequest(reportId: string, about: ReportAbout, submittedAt: number = this.now()): Promise<void> {
    mkdirSync(this.requestsDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.requestFile(reportId), `${JSON.stringify({ v: 1, reportId, submittedAt, about })}\n`, 0o600);
    // pruned at a process's first record, then every 500th (a process records few: the folder is
    // listed once)
    if (this.unpruned === -1 || this.unpruned >= 500) {
      this.pruneRequests();
      this.unpruned = 0;
    }
    this.unpruned++;
  }

  /** The request of a report submitted in the last REQUESTS_TTL_MS, if this machine kept it. */
  requestOf(reportId: string): ReportAbout | undefined {
    try {
      const parsed = requestSchema.safeParse(JSON.parse(readFileSync(this.requestFile(reportId), 'utf8')));
      if (!parsed.success || parsed.data.reportId !== reportId || this.now() - parsed.data.submittedAt >= REQUESTS_TTL_MS) return undefined;
      return parsed.data.about;
    } catch {
      return undefined;
    }
  }

  /** Removes the records older than REQUESTS_TTL_MS, and the oldest beyond REQUESTS_MAX (by
   * modification time: a record is written once). */
  pruneRequests(): void {
    let names: string[];
    try {
      names = readdirSync(this.requestsDir).filter((name) => name.endsWith('.json'));
    } catch {
      return;
    }
    const dated = names.flatMap((name) => {
      const path = join(this.requestsDir, name);
      try {
        return [{ path, at: statSync(path).mtimeMs }];
      } catch {
        return [];
      }
    }).sort((a, b) => b.at - a.at);
    const now = this.now();
    for (const [i, { path, at }] of dated.entries()) if (i >= REQUESTS_MAX || now - at >= REQUESTS_TTL_MS) this.remove(path);
  }

  /** The report submitted for this key less than an hour ago, if any. */
  recall(key: string): Remembered | undefined {
    const path = this.file(key);
    const entry = this.read(path);
    if (entry && !this.expired(entry)) return entry;
    if (entry) this.remove(path);
    return undefined;
  }

  /** Records the report just submitted for this key (atomically; the last writer wins), with what
   * its request is about (for `download`'s columns). */
  async remember(key: string, reportId: string, submittedAt: number = this.now(), about?: ReportAbout): Promise<void> {
    // a run ending beside this one may remove the empty folder between the two steps: try again
    await tryAgainAtOnce(RACE_TRIES, (error) => (error as NodeJS.ErrnoException).code === 'ENOENT', async () => {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(this.file(key), `${JSON.stringify({ v: 1, reportId, submittedAt, ...(about ? { about } : {}) })}\n`, 0o600);
    });
    this.prune();
  }

  /** The report was written (or failed for good): nothing to resume. journal/ goes too when
   * nothing else is in it. */
  forget(key: string): void {
    this.remove(this.file(key));
    // journal/ is ours (the configuration folder is not: a login beside this run may be
    // about to write in it, empty as it is)
    try {
      rmdirSync(this.dir);
    } catch {
      // not empty (another request's entry), or never made
    }
  }

  /** The entry of a report by its ID (an interrupted run's, less than an hour old), if one names it. */
  findReport(reportId: string): Remembered | undefined {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return undefined;
    }
    for (const name of names.sort()) {
      if (!name.endsWith('.json')) continue;
      const entry = this.read(join(this.dir, name));
      if (entry && entry.reportId === reportId && !this.expired(entry)) return entry;
    }
    return undefined;
  }

  /** Removes expired entries, so the folder does not grow with every distinct request. */
  prune(): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const path = join(this.dir, name);
      const entry = this.read(path);
      if (!entry || this.expired(entry)) this.remove(path);
    }
  }

  private remove(path: string): void {
    try {
      unlinkSync(path);
    } catch {
      // already gone (a parallel run forgot it)
    }
  }
}
