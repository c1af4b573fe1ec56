// The sandbox: a local implementation of the whole Reporting API contract, on node:http.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DateTime } from 'luxon';
import {
  PARIS, SIDE_DIMENSIONS, SIDES, dimensionsOf, isTimeDimension, metricsOf, DEFAULT_METRICS, TIME_DIMENSIONS,
  type Side,
} from '../report/catalog.js';
import { LISTED_YEARS } from './entities.js';
import { FactSource } from './facts.js';
import { ENDPOINTS, FaultPlan, noFaults, type BodyFault, type EndpointName, type Faults } from './faults.js';
import { BadBody, listOf, parseForm, parseJsonBody, single, type ReceivedParams } from './params.js';
import { Ledger, type ReportEventKind, type ReportLog, type SandboxStats } from './ledger.js';
import { buildRows, isFilterParam, scaledRowTexts, summaryOf, type ReportQuery } from './report.js';
import type { Restatement } from './facts.js';
import { planWork, restatedFrom } from './work.js';

export type { ReportEventKind, ReportLog, SandboxStats } from './ledger.js';

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
  email?: string;
  password?: string;
  faults?: Partial<Faults>;
  /** every download returns this many rows, generated as they are sent */
  scaleRows?: number;
  layout?: Layout;
  /** one line per request (method, path, status, ms) */
  log?: (line: string) => void;
}

export interface RequestRecord {
  endpoint: EndpointName | 'other';
  status: number;
  at: number;
}

export interface Sandbox {
  baseUrl: string;
  email: string;
  password: string;
  /** a ready token, as a console would hand out */
  token: string;
  /** every request answered, in order (the most recent 100,000) */
  requests: RequestRecord[];
  /** counts and peaks: how many reports were in progress at once, refused, expired */
  stats(): SandboxStats;
  /** every report accepted (the most recent 10,000), in submission order, each with its submit,
   * status and download requests in order */
  reports(): ReportLog[];
  /** the sandbox clock now (ms since the epoch) */
  now(): number;
  /** moves the sandbox clock forward, e.g. past --report-ttl or into the next day */
  advance(ms: number): void;
  close(): Promise<void>;
}

interface StoredReport {
  id: string;
  query: ReportQuery;
  submittedAt: number;
  doneAt: number;
  failure?: string;
  restated?: Restatement;
}

/** What a request was about, for the report log: set by the handlers, read when it is answered. */
interface Seen {
  reportId?: string;
  state?: string;
}

const EVENT_OF: Partial<Record<EndpointName, ReportEventKind>> = { buyer: 'submit', seller: 'submit', status: 'status', download: 'download' };

const MAX_BODY = 1024 * 1024;
const MAX_PERIOD_DAYS = 1100;
/** 2200-01-01: beyond it a timestamp is almost surely in milliseconds */
const MAX_TIMESTAMP = 7_258_118_400;
const CHUNK = 64 * 1024;

class HttpError extends Error {
  constructor(readonly status: number, readonly errorId: string, message: string) {
    super(message);
  }
}

const newToken = () => randomBytes(20).toString('hex');

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = options.seed ?? 42;
  const email = options.email ?? 'demo@sandbox.test';
  const password = options.password ?? 'sandbox-password';
  // with a work model, the work decides unless a minimum is asked for
  const readyDelayMs = options.readyDelayMs ?? (options.workMsPerDay === undefined ? 1000 : 0);
  const model = { readyDelayMs, workMsPerDay: options.workMsPerDay ?? 0, failOverDays: options.failOverDays };
  const clock = options.now ?? Date.now;
  let skew = 0;
  const now = () => clock() + skew;
  const ledger = new Ledger();
  let revisions = 0;
  const faults: Faults = { ...noFaults(), ...options.faults };
  const plan = new FaultPlan(faults, seed);
  const source = new FactSource(seed);
  const layout = options.layout ?? 'compact';
  const reports = new Map<string, StoredReport>();
  /** token -> uses left (Infinity when tokens never expire) */
  const tokens = new Map<string, number>();
  const requests: RequestRecord[] = [];
  const sockets = new Set<Socket>();
  const pending = new Set<() => void>();
  let closing = false;

  const issueToken = () => {
    const token = newToken();
    tokens.set(token, faults.tokenUses ?? Number.POSITIVE_INFINITY);
    return token;
  };
  const readyToken = issueToken();

  const server = createServer((req, res) => {
    const started = Date.now();
    const at = now();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const endpoint = (Object.entries(ENDPOINTS).find(([, p]) => p === path)?.[0] ?? 'other') as EndpointName | 'other';
    const seen: Seen = {};
    res.on('close', () => {
      requests.push({ endpoint, status: res.statusCode, at: started });
      if (requests.length > 100_000) requests.shift();
      const kind = endpoint === 'other' ? undefined : EVENT_OF[endpoint];
      if (kind && seen.reportId !== undefined) {
        ledger.event(seen.reportId, {
          kind, at, httpStatus: res.statusCode,
          ...(seen.state === undefined ? {} : { state: seen.state }),
          ...(kind === 'download' ? { complete: res.writableFinished } : {}),
        });
      }
      const about = seen.reportId === undefined ? '' : ` report=${seen.reportId}${seen.state === undefined ? '' : ` ${seen.state}`}`;
      options.log?.(`${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms${about}`);
    });
    handle(req, res, endpoint, seen).catch((error: unknown) => {
      if (error instanceof HttpError) sendError(res, error.status, error.errorId, error.message);
      else if (!res.headersSent) sendError(res, 500, 'SYSTEM', 'internal sandbox error');
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse, endpoint: EndpointName | 'other', seen: Seen): Promise<void> {
    if (faults.latencyMs > 0) await sleep(faults.latencyMs);
    if (endpoint === 'other') throw new HttpError(404, 'NOT_FOUND', `no endpoint ${req.method} ${req.url}`);
    const expected = endpoint === 'campaigns' ? 'GET' : 'POST';
    if (req.method !== expected) {
      res.setHeader('Allow', expected);
      throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${ENDPOINTS[endpoint]} takes ${expected}`);
    }
    const fault = plan.errorFor(endpoint);
    if (fault) {
      await drain(req);
      if (fault.retryAfter !== undefined) res.setHeader('Retry-After', String(fault.retryAfter));
      if (fault.html) {
        res.writeHead(fault.status, { 'Content-Type': 'text/html' });
        res.end(`<html><head><title>${fault.status}</title></head><body><h1>${fault.status} Bad Gateway</h1><hr>proxy</body></html>\n`);
        return;
      }
      throw new HttpError(fault.status, 'SANDBOX_FAULT', `injected fault: HTTP ${fault.status}`);
    }
    const params = await readParams(req);
    if (endpoint === 'auth') return login(res, params);
    const token = authorize(req);
    switch (endpoint) {
      case 'buyer':
      case 'seller':
        return submit(res, endpoint, params, token, seen);
      case 'status':
        return status(res, params, seen);
      case 'download':
        return download(res, params, seen);
      case 'campaigns':
        return campaigns(res);
    }
  }

  function login(res: ServerResponse, params: ReceivedParams): void {
    const auth = params.auth;
    const given = auth && typeof auth === 'object' && !Array.isArray(auth) ? auth : {};
    const userEmail = typeof given.email === 'string' ? given.email : single(params, 'email');
    const userPassword = typeof given.password === 'string' ? given.password : single(params, 'password');
    if (!userEmail || !userPassword) throw new HttpError(400, 'SYSTEM', 'Username or password not set in request');
    if (userEmail.toLowerCase() !== email.toLowerCase() || !sameSecret(userPassword, password)) {
      throw new HttpError(401, 'NOAUTH', 'Invalid email or password');
    }
    sendJson(res, 200, { response: { status: 'OK', token: issueToken() } });
  }

  function authorize(req: IncomingMessage): string {
    const header = req.headers.authorization;
    if (!header) throw new HttpError(401, 'NOAUTH', 'Missing Authorization header');
    if (/^(bearer|basic|token)\s/i.test(header)) {
      throw new HttpError(401, 'NOAUTH', 'The Authorization header takes the bare token, without a scheme word');
    }
    const uses = tokens.get(header);
    if (uses === undefined) throw new HttpError(401, 'NOAUTH', 'Invalid token');
    if (uses <= 0) throw new HttpError(401, 'NOAUTH', 'Token expired');
    tokens.set(header, uses - 1);
    return header;
  }

  function submit(res: ServerResponse, side: Side, params: ReceivedParams, token: string, seen: Seen): void {
    const query = validate(side, params);
    const at = now();
    if (options.maxRunning !== undefined) {
      const running = ledger.inProgress(token, at);
      if (running.length >= options.maxRunning) {
        ledger.refused();
        const wait = Math.max(1, Math.ceil(((running[0] ?? at) - at) / 1000));
        res.setHeader('Retry-After', String(wait));
        throw new HttpError(429, 'TOO_MANY_REPORTS', `too many reports in progress: ${running.length} of at most ${options.maxRunning}; retry in ${wait} s`);
      }
    }
    forgetExpired(at);
    const id = randomBytes(12).toString('hex');
    const work = planWork(query, model);
    const revision = ++revisions;
    const report: StoredReport = { id, query, submittedAt: at, doneAt: at + work.progressMs };
    if (work.failure !== undefined) report.failure = work.failure;
    if (options.restateMs !== undefined) report.restated = { from: restatedFrom(at, options.restateMs), revision };
    reports.set(id, report);
    ledger.submitted(token, {
      id, side, since: query.since, until: query.until, breakdowns: [...query.breakdowns],
      submittedAt: at, doneAt: report.doneAt, outcome: outcomeOf(report), revision,
    });
    seen.reportId = id;
    seen.state = 'progress';
    const response = faults.malformed === 'no-report-id' ? { status: 'OK' } : { status: 'OK', report_id: id };
    sendJson(res, 200, { response });
  }

  const expired = (report: StoredReport, at: number) =>
    options.reportTtlMs !== undefined && at - report.submittedAt >= options.reportTtlMs;

  /** Reports are stored in submission order: the expired ones are at the front. */
  function forgetExpired(at: number): void {
    for (const report of reports.values()) {
      if (!expired(report, at)) break;
      reports.delete(report.id);
      ledger.expired(report.id);
    }
  }

  function findReport(params: ReceivedParams, seen: Seen): StoredReport {
    const id = single(params, 'id');
    if (!id) throw new HttpError(400, 'MISSING_PARAMETER', 'id is required: the report ID');
    seen.reportId = id;
    forgetExpired(now());
    const report = reports.get(id);
    if (!report) throw new HttpError(404, 'NOT_FOUND', `no report with id ${id}`);
    seen.state = stateOf(report);
    return report;
  }

  function outcomeOf(report: StoredReport): string {
    return report.failure === undefined ? faults.reportStatus ?? 'ready' : 'failed';
  }

  function stateOf(report: StoredReport): string {
    return now() < report.doneAt ? 'progress' : outcomeOf(report);
  }

  function status(res: ServerResponse, params: ReceivedParams, seen: Seen): void {
    const report = findReport(params, seen);
    const state = seen.state ?? stateOf(report);
    if (faults.malformed === 'wrong-types') {
      sendJson(res, 200, { response: { status: 1, message: null, report_id: 42 } });
      return;
    }
    const shown = faults.malformed === 'unknown-status' && state === 'ready' ? 'archived' : state;
    const message = shown === 'progress' || shown === 'ready' ? shown
      : report.failure ?? `report ${report.id} ended in status ${shown}`;
    sendJson(res, 200, { response: { status: shown, message, report_id: report.id } });
  }

  async function download(res: ServerResponse, params: ReceivedParams, seen: Seen): Promise<void> {
    const report = findReport(params, seen);
    const state = seen.state ?? stateOf(report);
    if (state !== 'ready') {
      throw new HttpError(400, 'NOT_READY', `report ${report.id} is not ready (status: ${state}); poll /status-reporting until it is ready`);
    }
    const body = new BodyWriter(res, plan.takeBodyFault(faults.resetDownload), plan.takeBodyFault(faults.stallDownload), pending);
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
    const summary = JSON.stringify(summaryOf(report.query), null, layout === 'pretty' ? 2 : undefined);
    const rows = options.scaleRows !== undefined
      ? scaledRowTexts(source, report.query, options.scaleRows)
      : (function* () { for (const row of buildRows(source, report.query, report.restated)) yield JSON.stringify(row); })();
    const pretty = layout === 'pretty';
    const sep = pretty ? ',\n    ' : ',';
    await body.write(layout === 'summary-first' ? `{"summary":${summary},"data":` : pretty ? '{\n  "data": ' : '{"data":');
    if (faults.malformed === 'data-not-array') {
      await body.write('{"rows":0}');
    } else {
      await body.write(pretty ? '[\n    ' : '[');
      let first = true;
      for (const row of rows) {
        if (closing || body.stopped) return;
        await body.write(first ? row : sep + row);
        first = false;
      }
      await body.write(pretty ? '\n  ]' : ']');
    }
    await body.write(layout === 'summary-first' ? '}' : pretty ? `,\n  "summary": ${summary}\n}\n` : `,"summary":${summary}}`);
    await body.end(faults.malformed === 'truncated');
  }

  function campaigns(res: ServerResponse): void {
    const list = [];
    for (let year = LISTED_YEARS.from; year <= LISTED_YEARS.to; year++) {
      for (const campaign of source.campaigns(year)) {
        list.push({
          advertiserId: campaign.advertiser.id,
          advertiserName: campaign.advertiser.name,
          campaignId: campaign.campaignId,
          campaignName: campaign.campaignName,
          campaignStartDate: DateTime.fromSeconds(campaign.start, { zone: PARIS }).toFormat('yyyy-MM-dd HH:mm:ss'),
          campaignEndDate: DateTime.fromSeconds(campaign.end, { zone: PARIS }).toFormat('yyyy-MM-dd HH:mm:ss'),
          adunits: campaign.adunits.map((unit) => ({ adunitName: unit.adunitName, adunitId: unit.adunitId })),
        });
      }
    }
    sendJson(res, 200, list);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8787, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    baseUrl: `http://${host}:${address.port}`,
    email,
    password,
    token: readyToken,
    requests,
    stats: () => ledger.stats(now()),
    reports: () => ledger.reports(),
    now,
    advance: (ms: number) => { skew += ms; },
    close: () => new Promise<void>((resolve) => {
      closing = true;
      for (const wake of pending) wake();
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
    }),
  };
}

/** Validates a report request as the API would, into a query; every problem is a 400. */
function validate(side: Side, params: ReceivedParams): ReportQuery {
  const since = timestamp(params, 'since');
  const until = timestamp(params, 'until');
  if (since > until) throw new HttpError(400, 'INVALID_PARAMETER', `since (${since}) is after until (${until})`);
  if (until - since > MAX_PERIOD_DAYS * 86400) {
    throw new HttpError(400, 'INVALID_PARAMETER', `the period is longer than the sandbox's limit of ${MAX_PERIOD_DAYS} days`);
  }

  const accepted = metricsOf(side);
  const metricValues = listOf(params, 'metrics');
  const metrics = metricValues === undefined
    ? [...DEFAULT_METRICS[side]]
    : metricValues.flatMap((value) => value.split(',')).map((value) => value.trim()).filter(Boolean);
  for (const metric of metrics) {
    if (!accepted.includes(metric)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `unknown metric "${metric}" for ${side} reports; valid: ${accepted.join(', ')}`);
    }
  }

  const breakdowns = [...new Set(listOf(params, 'breakdowns') ?? [])];
  const valid = dimensionsOf(side);
  const other = SIDES.find((candidate) => candidate !== side) as Side;
  for (const breakdown of breakdowns) {
    if (SIDE_DIMENSIONS[other].includes(breakdown)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `breakdown ${breakdown} is only available for ${other} reports`);
    }
    if (!valid.includes(breakdown)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `unknown breakdown "${breakdown}"; valid: ${valid.join(', ')}`);
    }
  }
  const times = breakdowns.filter(isTimeDimension);
  if (times.length > 1) {
    throw new HttpError(400, 'INVALID_PARAMETER', `only one of ${TIME_DIMENSIONS.join(', ')} may be used; got ${times.join(' and ')}`);
  }

  const filters: Record<string, string[]> = {};
  for (const name of Object.keys(params)) {
    if (!isFilterParam(name)) continue;
    const values = listOf(params, name);
    if (values) filters[name] = values;
  }
  return { side, since, until, metrics: [...new Set(metrics)], breakdowns, filters };
}

function timestamp(params: ReceivedParams, name: string): number {
  const value = params[name];
  if (value === undefined) throw new HttpError(400, 'MISSING_PARAMETER', `${name} is required: a Unix timestamp in seconds`);
  const text = typeof value === 'string' ? value.trim() : '';
  if (!/^\d+$/.test(text)) {
    throw new HttpError(400, 'INVALID_PARAMETER', `${name} must be a Unix timestamp in seconds (an integer), not ${JSON.stringify(value)}`);
  }
  const seconds = Number(text);
  if (seconds > MAX_TIMESTAMP) {
    throw new HttpError(400, 'INVALID_PARAMETER', `${name}=${text} is after the year 2200: is it in milliseconds? Send seconds`);
  }
  return seconds;
}

async function readParams(req: IncomingMessage): Promise<ReceivedParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new HttpError(413, 'TOO_LARGE', 'the request body is larger than 1 MiB');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const query = parseForm((req.url ?? '').split('?')[1] ?? '');
  const type = req.headers['content-type'] ?? '';
  try {
    const body = text.trim() === '' ? {} : type.includes('json') ? parseJsonBody(text) : parseForm(text);
    return { ...query, ...body };
  } catch (error) {
    if (error instanceof BadBody) throw new HttpError(400, 'INVALID_BODY', error.message);
    throw error;
  }
}

async function drain(req: IncomingMessage): Promise<void> {
  for await (const _ of req) { /* discard */ }
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function sendJson(res: ServerResponse, statusCode: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(statusCode, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, statusCode: number, errorId: string, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, statusCode, { response: { error_id: errorId, error: message } });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Writes a streamed body in chunks, with backpressure, and plays the body faults. */
class BodyWriter {
  private buffer = '';
  private sent = 0;
  stopped = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly reset: BodyFault | undefined,
    private readonly stall: BodyFault | undefined,
    private readonly pending: Set<() => void>,
  ) {
    res.on('close', () => { this.stopped = true; });
  }

  async write(text: string): Promise<void> {
    this.buffer += text;
    if (this.buffer.length >= CHUNK) await this.flush();
  }

  async end(truncate: boolean): Promise<void> {
    if (truncate) this.buffer = this.buffer.slice(0, Math.max(1, Math.floor(this.buffer.length / 2)));
    await this.flush();
    if (!this.stopped) this.res.end();
  }

  private async flush(): Promise<void> {
    if (this.stopped || this.buffer === '') return;
    let bytes = Buffer.from(this.buffer);
    this.buffer = '';
    const limit = Math.min(this.reset?.afterBytes ?? Infinity, this.stall?.afterBytes ?? Infinity);
    if (this.sent + bytes.length >= limit && limit !== Infinity) {
      // send exactly up to the fault's byte (possibly inside a UTF-8 sequence), then misbehave
      bytes = bytes.subarray(0, limit - this.sent);
      await this.send(bytes);
      this.stopped = true;
      if (this.reset && this.reset.afterBytes === limit) {
        // give the client time to read what was sent, so the reset lands mid-body
        await new Promise((resolve) => setTimeout(resolve, 30));
        this.res.socket?.resetAndDestroy();
      } else {
        // stall: keep the connection open and silent until the client gives up or we close
        await new Promise<void>((resolve) => {
          this.pending.add(resolve);
          this.res.on('close', () => { this.pending.delete(resolve); resolve(); });
        });
      }
      return;
    }
    await this.send(bytes);
  }

  private send(bytes: Buffer): Promise<void> {
    this.sent += bytes.length;
    return new Promise<void>((resolve) => {
      if (bytes.length === 0) return resolve();
      const more = this.res.write(bytes);
      if (more) return resolve();
      const done = () => { this.res.off('drain', done); this.res.off('close', done); resolve(); };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }
}
