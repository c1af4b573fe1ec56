// What the sandbox holds between requests: its settings, clock, tokens, reports and ledger. The
// handlers (handlers/) read and change it; the server (server.ts) only routes to them.

import { randomBytes } from 'node:crypto';
import { FactSource, type Restatement } from './facts.js';
import { FaultPlan, noFaults, type EndpointName, type Faults } from './faults.js';
import { HttpError } from './http.js';
import { Ledger } from './ledger.js';
import type { ReportQuery } from './report.js';
import type { WorkModel } from './work.js';

export type Layout = 'compact' | 'pretty' | 'summary-first';

export interface SandboxOptions {
  host?: string;
  port?: number;
  seed?: number;
  /** the least time a report stays in `progress` (1 s by default; 0 by default with workMsPerDay) */
  readyDelayMs?: number;
  /** the work model: time in `progress` per day of period, times 1.1 for each breakdown other than
   * RANGE, DAILY and MONTHLY; a report stays in progress max(readyDelayMs, this) */
  workMsPerDay?: number;
  /** submits beyond this many reports in progress for one token are answered 429 with Retry-After */
  maxRunning?: number;
  /** a token's own --max-running (one account throttled, the others not); undefined: maxRunning */
  maxRunningFor?: (token: string) => number | undefined;
  /** a report touching more Paris calendar days than this ends in `failed`, "too much data" */
  failOverDays?: number;
  /** the numbers of the Paris days that this time before "now" touches (and later ones) change
   * with every submission, as late conversions do; older days never change */
  restateMs?: number;
  /** a report ID is forgotten this long after its submission: status and download answer 404 */
  reportTtlMs?: number;
  /** the sandbox's clock in ms since the epoch (Date.now by default): progress, TTL and restate
   * follow it, so a frozen clock keeps reports in progress; see Sandbox.advance */
  now?: () => number;
  /** account 1's email and password (the others': demoN@sandbox.test, sandbox-password-N) */
  email?: string;
  password?: string;
  /** how many accounts (1 by default): each its own login, tokens, reports and seeded data */
  accounts?: number;
  faults?: Partial<Faults>;
  /** every download returns this many rows, generated as they are sent */
  scaleRows?: number;
  /** rows dated on or after `from` (a Paris day, YYYY-MM-DD) carry one more field, `name`, a count
   * (not null): a server that starts sending a new field in the middle of a run */
  newField?: { name: string; from: string };
  layout?: Layout;
  /** one line per request (method, path, status, ms) */
  log?: (line: string) => void;
}

export interface RequestRecord {
  endpoint: EndpointName | 'other';
  status: number;
  at: number;
}

export interface StoredReport {
  id: string;
  /** the account that submitted it: another account's token is told it does not exist */
  account: number;
  query: ReportQuery;
  submittedAt: number;
  doneAt: number;
  failure?: string;
  restated?: Restatement;
}

const newToken = () => randomBytes(20).toString('hex');

/** One account of the sandbox: its login and its own seeded data. */
export interface Account {
  /** 1, 2, ... */
  number: number;
  email: string;
  password: string;
  source: FactSource;
}

/** The tokens handed out, each with the uses it has left (Infinity when tokens never expire) and
 * the account it belongs to. */
export class Tokens {
  private readonly usesLeft = new Map<string, number>();
  private readonly accounts = new Map<string, number>();

  constructor(private readonly uses: number) {}

  issue(account = 1): string {
    const token = newToken();
    this.usesLeft.set(token, this.uses);
    this.accounts.set(token, account);
    return token;
  }

  /** The account of a token that authorize() accepted. */
  accountOf(token: string): number {
    return this.accounts.get(token) ?? 1;
  }

  /** The token a request's Authorization header carries, bare as the contract wants, spending one
   * of its uses; anything else is a 401. */
  authorize(header: string | undefined): string {
    if (!header) throw new HttpError(401, 'NOAUTH', 'Missing Authorization header');
    if (/^(bearer|basic|token)\s/i.test(header)) {
      throw new HttpError(401, 'NOAUTH', 'The Authorization header takes the bare token, without a scheme word');
    }
    const uses = this.usesLeft.get(header);
    if (uses === undefined) throw new HttpError(401, 'NOAUTH', 'Invalid token');
    if (uses <= 0) throw new HttpError(401, 'NOAUTH', 'Token expired');
    this.usesLeft.set(header, uses - 1);
    return header;
  }
}

/** The reports accepted, in submission order, until they expire. */
export class Reports {
  private readonly byId = new Map<string, StoredReport>();
  private revisions = 0;

  constructor(private readonly ledger: Ledger, private readonly ttlMs: number | undefined, private readonly endState: string | undefined) {}

  /** Each submission is a revision of the data (1, 2, ...), which restating folds into recent numbers. */
  nextRevision(): number {
    return ++this.revisions;
  }

  add(report: StoredReport): void {
    this.byId.set(report.id, report);
  }

  get(id: string): StoredReport | undefined {
    return this.byId.get(id);
  }

  /** Reports are stored in submission order: the expired ones are at the front. */
  forgetExpired(at: number): void {
    for (const report of this.byId.values()) {
      if (!this.expired(report, at)) break;
      this.byId.delete(report.id);
      this.ledger.expired(report.id);
    }
  }

  /** The state a report ends in: `ready`, `failed` (too much data) or the --report-status fault. */
  outcomeOf(report: StoredReport): string {
    return report.failure === undefined ? this.endState ?? 'ready' : 'failed';
  }

  stateOf(report: StoredReport, at: number): string {
    return at < report.doneAt ? 'progress' : this.outcomeOf(report);
  }

  private expired(report: StoredReport, at: number): boolean {
    return this.ttlMs !== undefined && at - report.submittedAt >= this.ttlMs;
  }
}

export class SandboxState {
  readonly email: string;
  readonly password: string;
  /** account 1 first; account 1 is the email and password above, with the seed's data */
  readonly accounts: readonly Account[];
  readonly faults: Faults;
  readonly plan: FaultPlan;
  readonly source: FactSource;
  readonly layout: Layout;
  readonly model: WorkModel;
  readonly ledger = new Ledger();
  readonly tokens: Tokens;
  readonly reports: Reports;
  /** every request answered, in order (the most recent 100,000) */
  readonly requests: RequestRecord[] = [];
  /** stalled downloads waiting for the sandbox to close */
  readonly pending = new Set<() => void>();
  closing = false;
  private readonly clock: () => number;
  private skew = 0;

  constructor(readonly options: SandboxOptions) {
    const seed = options.seed ?? 42;
    this.email = options.email ?? 'demo@sandbox.test';
    this.password = options.password ?? 'sandbox-password';
    // with a work model, the work decides unless a minimum is asked for
    const readyDelayMs = options.readyDelayMs ?? (options.workMsPerDay === undefined ? 1000 : 0);
    this.model = { readyDelayMs, workMsPerDay: options.workMsPerDay ?? 0, failOverDays: options.failOverDays };
    this.clock = options.now ?? Date.now;
    this.faults = { ...noFaults(), ...options.faults };
    this.plan = new FaultPlan(this.faults, seed);
    this.source = new FactSource(seed);
    const count = Math.max(1, options.accounts ?? 1);
    this.accounts = Array.from({ length: count }, (_, i) => i === 0
      ? { number: 1, email: this.email, password: this.password, source: this.source }
      : { number: i + 1, email: `demo${i + 1}@sandbox.test`, password: `sandbox-password-${i + 1}`, source: new FactSource(seed + i) });
    this.layout = options.layout ?? 'compact';
    this.tokens = new Tokens(this.faults.tokenUses ?? Number.POSITIVE_INFINITY);
    this.reports = new Reports(this.ledger, options.reportTtlMs, this.faults.reportStatus);
  }

  /** The sandbox clock (ms since the epoch): the given clock, moved forward by `advance`. */
  readonly now = (): number => this.clock() + this.skew;

  advance(ms: number): void {
    this.skew += ms;
  }

  /** Sets the clock to `ms` (since the epoch); it runs on from there. */
  setNow(ms: number): void {
    this.skew = ms - this.clock();
  }

  /** The seeded data of an account. */
  sourceOf(account: number): FactSource {
    return this.accounts[account - 1]?.source ?? this.source;
  }
}
