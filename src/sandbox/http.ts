// The sandbox's HTTP plumbing: the error envelope, JSON answers, reading a request's parameters.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadBody, parseForm, parseJsonBody, type ReceivedParams } from './params.js';

const MAX_BODY = 1024 * 1024;

/** A refusal the contract describes: answered as `{"response":{"error_id","error"}}` with its status. */
export class HttpError extends Error {
  constructor(readonly status: number, readonly errorId: string, message: string) {
    super(message);
  }
}

/** The query string and the body (form-encoded or JSON) as one set of parameters; the body wins. */
export async function readParams(req: IncomingMessage): Promise<ReceivedParams> {
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

export async function drain(req: IncomingMessage): Promise<void> {
  for await (const _ of req) { /* discard */ }
}

export function sendJson(res: ServerResponse, statusCode: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(statusCode, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(res: ServerResponse, statusCode: number, errorId: string, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, statusCode, { response: { error_id: errorId, error: message } });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
