// What the sandbox saw, for tests to assert on: each report's submit, status and download
// requests in order, and how many reports were in progress at once.

import type { Side } from '../report/catalog.js';

export type ReportEventKind = 'submit' | 'status' | 'download';

export interface ReportEvent {
  kind: ReportEventKind;
  /** the sandbox clock when the request arrived (ms since the epoch) */
  at: number;
  /** the HTTP status answered (404 once the report ID has expired) */
  httpStatus: number;
  /** the report's state when answered: progress, ready, failed (absent on 404) */
  state?: string;
  /** downloads only: the whole body was sent */
  complete?: boolean;
}

export interface ReportLog {
  id: string;
  side: Side;
  since: number;
  until: number;
  breakdowns: string[];
  /** sandbox clock at submission, and when the report leaves `progress` (ms since the epoch) */
  submittedAt: number;
  doneAt: number;
  /** the state it ends in: ready, failed, or the --report-status fault */
  outcome: string;
  /** the submission's revision (1, 2, ...), which --restate folds into recent numbers */
  revision: number;
  /** the account (1, 2, ...) whose token submitted it (--accounts) */
  account: number;
  events: ReportEvent[];
}

export interface SandboxStats {
  /** reports accepted */
  submitted: number;
  /** submits answered 429 because of --max-running */
  refused: number;
  /** reports in progress now, all tokens together */
  inProgress: number;
  /** the most reports in progress at once for any one token (what --max-running bounds) */
  peakInProgress: number;
  /** the most reports in progress at once, all tokens together */
  peakInProgressAllTokens: number;
  /** report IDs forgotten after --report-ttl */
  expired: number;
  /** reports a client still has to finish: submitted, and not yet downloaded whole, answered
   * `failed` (or another end state) to a status request, or forgotten */
  open: number;
  /** the most open reports at once, all tokens together: what a client's concurrency bounds */
  peakOpen: number;
}

/** Reports kept in the log; older ones are dropped so that a long-running sandbox stays small. */
const KEPT = 10_000;

export class Ledger {
  private readonly logs = new Map<string, ReportLog>();
  /** token -> when each of its reports leaves `progress` */
  private readonly running = new Map<string, number[]>();
  private readonly open = new Set<string>();
  private readonly counts = { submitted: 0, refused: 0, peak: 0, peakAll: 0, expired: 0, peakOpen: 0 };

  /** Reports of the token still in progress at `now`, soonest done first. */
  inProgress(token: string, now: number): number[] {
    const left = (this.running.get(token) ?? []).filter((doneAt) => doneAt > now);
    if (left.length === 0) this.running.delete(token);
    else this.running.set(token, left);
    return left.sort((a, b) => a - b);
  }

  submitted(token: string, log: Omit<ReportLog, 'events'>): void {
    this.counts.submitted++;
    const mine = [...this.inProgress(token, log.submittedAt), log.doneAt];
    this.running.set(token, mine);
    this.counts.peak = Math.max(this.counts.peak, mine.length);
    this.counts.peakAll = Math.max(this.counts.peakAll, this.totalInProgress(log.submittedAt));
    this.logs.set(log.id, { ...log, events: [] });
    this.open.add(log.id);
    this.counts.peakOpen = Math.max(this.counts.peakOpen, this.open.size);
    if (this.logs.size > KEPT) {
      const oldest = this.logs.keys().next().value as string;
      this.logs.delete(oldest);
      this.open.delete(oldest);
    }
  }

  refused(): void {
    this.counts.refused++;
  }

  expired(id: string): void {
    this.counts.expired++;
    this.open.delete(id);
  }

  /** Records a request about a report the sandbox once accepted; other IDs are not logged. */
  event(id: string, event: ReportEvent): void {
    this.logs.get(id)?.events.push(event);
    const downloaded = event.kind === 'download' && event.httpStatus === 200 && event.complete === true;
    const ended = event.kind === 'status' && event.state !== undefined && event.state !== 'progress' && event.state !== 'ready';
    if (downloaded || ended) this.open.delete(id);
  }

  stats(now: number): SandboxStats {
    return {
      submitted: this.counts.submitted,
      refused: this.counts.refused,
      inProgress: this.totalInProgress(now),
      peakInProgress: this.counts.peak,
      peakInProgressAllTokens: this.counts.peakAll,
      expired: this.counts.expired,
      open: this.open.size,
      peakOpen: this.counts.peakOpen,
    };
  }

  /** Copies, in submission order, so that a test cannot change what the sandbox recorded. */
  reports(): ReportLog[] {
    return [...this.logs.values()].map((log) => ({ ...log, breakdowns: [...log.breakdowns], events: log.events.map((event) => ({ ...event })) }));
  }

  private totalInProgress(now: number): number {
    let total = 0;
    for (const token of [...this.running.keys()]) total += this.inProgress(token, now).length;
    return total;
  }
}
