// The sandbox: a local implementation of the whole Reporting API contract, on node:http. This file
// routes; the state lives in state.ts and each endpoint's handler in handlers/.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ENDPOINTS, type EndpointName } from './faults.js';
import { drain, HttpError, readParams, sendError, sleep } from './http.js';
import type { ReportEventKind, ReportLog, SandboxStats } from './ledger.js';
import { SandboxState, type RequestRecord, type SandboxOptions } from './state.js';
import { login } from './handlers/auth.js';
import { CLOCK_PATH, clockControl } from './handlers/clock.js';
import { listCampaigns } from './handlers/campaigns.js';
import { downloadReport } from './handlers/download.js';
import type { Handler, Seen } from './handlers/handler.js';
import { reportStatus } from './handlers/status.js';
import { submitReport } from './handlers/submit.js';

export type { ReportEventKind, ReportLog, SandboxStats } from './ledger.js';
export type { Layout, RequestRecord, SandboxOptions } from './state.js';

export interface Sandbox {
  baseUrl: string;
  email: string;
  password: string;
  /** a ready token, as a console would hand out (account 1's) */
  token: string;
  /** every account (--accounts), account 1 first: its login and a ready token */
  accounts: { number: number; email: string; password: string; token: string }[];
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
  /** sets the sandbox clock (ms since the epoch), as POST /sandbox/clock does; it runs on from there */
  setNow(ms: number): void;
  close(): Promise<void>;
}

/** Each endpoint: the method it takes and its handler. A new endpoint is a path in ENDPOINTS
 * (faults.ts), a handler in handlers/ and a line here. */
const ROUTES: Record<EndpointName, { method: 'GET' | 'POST'; handle: Handler }> = {
  auth: { method: 'POST', handle: login },
  buyer: { method: 'POST', handle: submitReport('buyer') },
  seller: { method: 'POST', handle: submitReport('seller') },
  status: { method: 'POST', handle: reportStatus },
  download: { method: 'POST', handle: downloadReport },
  campaigns: { method: 'GET', handle: listCampaigns },
};

const EVENT_OF: Partial<Record<EndpointName, ReportEventKind>> = { buyer: 'submit', seller: 'submit', status: 'status', download: 'download' };

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const state = new SandboxState(options);
  const tokens = state.accounts.map((account) => state.tokens.issue(account.number));
  const readyToken = tokens[0] as string;
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => serve(state, req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8787, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    baseUrl: `http://${host}:${address.port}`,
    email: state.email,
    password: state.password,
    token: readyToken,
    accounts: state.accounts.map((account, i) => ({ number: account.number, email: account.email, password: account.password, token: tokens[i] as string })),
    requests: state.requests,
    stats: () => state.ledger.stats(state.now()),
    reports: () => state.ledger.reports(),
    now: state.now,
    advance: (ms: number) => state.advance(ms),
    setNow: (ms: number) => state.setNow(ms),
    close: () => new Promise<void>((resolve) => {
      state.closing = true;
      for (const wake of state.pending) wake();
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
    }),
  };
}

/** One request: routed, answered (a thrown HttpError becomes the error envelope), then recorded. */
function serve(state: SandboxState, req: IncomingMessage, res: ServerResponse): void {
  const started = Date.now();
  const at = state.now();
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const endpoint = (Object.entries(ENDPOINTS).find(([, p]) => p === path)?.[0] ?? 'other') as EndpointName | 'other';
  const seen: Seen = {};
  res.on('close', () => record(state, { req, res, path, endpoint, seen, started, at }));
  if (path === CLOCK_PATH) {
    clockControl(state, { req, res }).catch((error: unknown) => {
      if (error instanceof HttpError) sendError(res, error.status, error.errorId, error.message);
      else if (!res.headersSent) sendError(res, 500, 'SYSTEM', 'internal sandbox error');
    });
    return;
  }
  route(state, req, res, endpoint, seen).catch((error: unknown) => {
    if (error instanceof HttpError) sendError(res, error.status, error.errorId, error.message);
    else if (!res.headersSent) sendError(res, 500, 'SYSTEM', 'internal sandbox error');
    else res.destroy();
  });
}

/** What every endpoint goes through before its handler: latency, the method, injected errors, the
 * parameters. */
async function route(state: SandboxState, req: IncomingMessage, res: ServerResponse, endpoint: EndpointName | 'other', seen: Seen): Promise<void> {
  const { faults } = state;
  if (faults.latencyMs > 0) await sleep(faults.latencyMs);
  if (endpoint === 'other') throw new HttpError(404, 'NOT_FOUND', `no endpoint ${req.method} ${req.url}`);
  const { method, handle } = ROUTES[endpoint];
  if (req.method !== method) {
    res.setHeader('Allow', method);
    throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${ENDPOINTS[endpoint]} takes ${method}`);
  }
  const fault = state.plan.errorFor(endpoint);
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
  return handle(state, { req, res, params, seen });
}

interface Answered {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  endpoint: EndpointName | 'other';
  seen: Seen;
  /** wall clock, for the log's duration and RequestRecord.at */
  started: number;
  /** sandbox clock, for the report log */
  at: number;
}

/** An answered request into the request list, the report log and the --verbose log. */
function record(state: SandboxState, { req, res, path, endpoint, seen, started, at }: Answered): void {
  const { requests, ledger } = state;
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
  state.options.log?.(`${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms${about}`);
}
