// A hostile or broken stand-in for the Reporting API, separate from the sandbox (whose job is to be
// faithful). Every route answers like the contract by default; a test overrides the routes it
// attacks with its own handler, which may do anything a server can: lie, trickle, reset, flood.
// It listens on 127.0.0.1 only, and records every request it received.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Route = 'auth' | 'buyer' | 'seller' | 'status' | 'download' | 'campaigns' | 'other';

export interface Received {
  route: Route;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A route's answer: the request (body already read) and the response to write. */
export type Handler = (req: Received, res: ServerResponse, socket: Socket) => void | Promise<void>;

export interface Hostile {
  baseUrl: string;
  port: number;
  /** every request received, in order */
  received: Received[];
  /** replace a route's handler while the server runs */
  on(route: Route, handler: Handler): void;
  close(): Promise<void>;
}

const ROUTES: Record<string, Route> = {
  '/auth-reporting': 'auth',
  '/buyer-reporting': 'buyer',
  '/seller-reporting': 'seller',
  '/status-reporting': 'status',
  '/download-reporting': 'download',
  '/campaigns': 'campaigns',
};

export const json = (res: ServerResponse, status: number, value: unknown): void => {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(typeof value === 'string' ? value : JSON.stringify(value));
};

/** The contract's answers, for the routes a test does not attack. */
export const CONTRACT: Record<Route, Handler> = {
  auth: (_req, res) => json(res, 200, { response: { status: 'OK', token: 'a'.repeat(40) } }),
  buyer: (_req, res) => json(res, 200, { response: { status: 'OK', report_id: 'r1' } }),
  seller: (_req, res) => json(res, 200, { response: { status: 'OK', report_id: 'r1' } }),
  status: (_req, res) => json(res, 200, { response: { status: 'ready', message: 'ready', report_id: 'r1' } }),
  download: (_req, res) => json(res, 200, {
    data: [{ country: 'FR', displays: 10, clicks: 1 }],
    summary: { since: '2026-11-01T00:00:00+01:00', until: '2026-11-01T23:59:59+01:00', breakdowns: [], timezone: 'europe/paris' },
  }),
  campaigns: (_req, res) => json(res, 200, []),
  other: (_req, res) => json(res, 404, { response: { error_id: 'NOT_FOUND', error: 'no such endpoint' } }),
};

export async function startHostile(handlers: Partial<Record<Route, Handler>> = {}): Promise<Hostile> {
  const routes: Record<Route, Handler> = { ...CONTRACT, ...handlers };
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] as string;
      const record: Received = {
        route: ROUTES[path] ?? 'other',
        method: req.method ?? 'GET',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(record);
      Promise.resolve(routes[record.route](record, res, req.socket)).catch(() => res.destroy());
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    received,
    on(route, handler) {
      routes[route] = handler;
    },
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
