// The one HTTP helper: adds the token and headers, encodes bodies, applies timeouts, retries, traces
// (redacted), and turns bad answers into typed errors. Built on one keep-alive undici dispatcher.

import { Agent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { AuthError, ApiRejectedError, CliError, InterruptedError, NetworkError, UnexpectedResponseError } from '../errors.js';
import { encodeBody, type BodyEncoding, type Params } from './encode.js';
import { redact } from './redact.js';
import { decideRetry, parseRetryAfter } from './retry.js';
import { errorEnvelope } from './schemas.js';

export interface HttpConfig {
  baseUrl: string;
  timeoutMs: number;
  retries: number;
  encoding: BodyEncoding;
  userAgent: string;
  signal: AbortSignal;
  dispatcher?: Dispatcher;
  trace?: (line: string) => void;
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface Call {
  method: 'GET' | 'POST';
  path: string;
  params?: Params;
  /** sent as JSON whatever the encoding (the auth endpoint takes JSON) */
  json?: unknown;
  token?: string;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** A rejected token: 401/403, or an error_id NOAUTH. The client may log in again on it. */
export class TokenRejectedError extends AuthError {
  constructor(message: string) {
    super(message);
  }
}

export function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new InterruptedError(String(signal.reason)));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new InterruptedError(String(signal.reason)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const NETWORK_CODES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer within the timeout',
  UND_ERR_BODY_TIMEOUT: 'the answer stalled longer than the timeout',
  UND_ERR_SOCKET: 'the connection was closed',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host lookup failed',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'the connection was closed',
  EHOSTUNREACH: 'host unreachable',
};

/** A one-line description of a network failure, or undefined if the error is not one. */
export function describeNetworkError(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code && NETWORK_CODES[code]) return NETWORK_CODES[code];
    if (current.name === 'AggregateError') current = (current as AggregateError).errors[0];
    else current = (current as Error & { cause?: unknown }).cause;
  }
  if (error instanceof Error && /terminated|other side closed|socket/i.test(error.message)) return 'the connection was closed';
  return undefined;
}

export class Http {
  readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(readonly config: HttpConfig) {
    this.ownsDispatcher = config.dispatcher === undefined;
    this.dispatcher = config.dispatcher ?? new Agent({ connect: { timeout: config.timeoutMs }, keepAliveTimeout: 10_000 });
    this.now = config.now ?? Date.now;
    this.random = config.random ?? Math.random;
    this.sleep = config.sleep ?? sleepFor;
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close().catch(() => undefined);
  }

  trace(line: string): void {
    this.config.trace?.(redact(line));
  }

  /** Sends a call, retrying what SPEC section 4 says to retry; resolves with a 2xx answer. */
  async send(call: Call): Promise<Answer> {
    const url = new URL(call.path.replace(/^\//, ''), this.config.baseUrl.endsWith('/') ? this.config.baseUrl : `${this.config.baseUrl}/`);
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': this.config.userAgent };
    if (call.token) headers.Authorization = call.token;
    let body: string | undefined;
    if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['Content-Type'] = 'application/json';
    } else if (call.method === 'POST') {
      const encoded = encodeBody(call.params ?? {}, this.config.encoding);
      body = encoded.body;
      headers['Content-Type'] = encoded.contentType;
    }

    for (let attempt = 0; ; attempt++) {
      if (this.config.signal.aborted) throw new InterruptedError(String(this.config.signal.reason));
      const started = this.now();
      this.trace(`> ${call.method} ${url.pathname}${body !== undefined ? ` ${body}` : ''}${call.token ? ' (Authorization: ***)' : ''}`);
      let answer: Answer;
      try {
        const response = await request(url, {
          method: call.method,
          headers,
          body,
          dispatcher: this.dispatcher,
          headersTimeout: this.config.timeoutMs,
          bodyTimeout: this.config.timeoutMs,
          signal: this.config.signal,
        });
        answer = { status: response.statusCode, headers: response.headers, body: response.body };
      } catch (error) {
        if (this.config.signal.aborted) throw new InterruptedError(String(this.config.signal.reason));
        const network = describeNetworkError(error) ?? (error instanceof Error ? error.message : String(error));
        this.trace(`< ${call.method} ${url.pathname} failed after ${this.now() - started}ms: ${network}`);
        const decision = decideRetry(attempt, this.config.retries, { network }, this.random);
        if (!decision.retry) {
          throw new NetworkError(
            `${call.method} ${url.pathname}: ${network} (${url.host}) after ${attempt + 1} attempt${attempt ? 's' : ''}`,
            'check the base URL and your connection; --timeout and --retries adjust the patience',
          );
        }
        this.trace(`  retry ${attempt + 1} of ${this.config.retries} in ${(decision.delayMs / 1000).toFixed(1)}s (${decision.reason})`);
        await this.sleep(decision.delayMs, this.config.signal);
        continue;
      }
      this.trace(`< ${answer.status} ${call.method} ${url.pathname} ${this.now() - started}ms`);
      if (answer.status >= 200 && answer.status < 300) return answer;

      const text = await readText(answer).catch(() => '');
      const failure = describeFailure(answer, text);
      this.trace(`  body: ${excerpt(text)}`);
      if (answer.status === 401 || answer.status === 403 || failure.errorId === 'NOAUTH') {
        throw new TokenRejectedError(`the API rejected the token (HTTP ${answer.status}${failure.message ? `: ${failure.message}` : ''})`);
      }
      const retryAfterMs = parseRetryAfter(headerText(answer.headers['retry-after']), this.now());
      const decision = decideRetry(attempt, this.config.retries, { status: answer.status, retryAfterMs }, this.random);
      if (decision.retry) {
        this.trace(`  retry ${attempt + 1} of ${this.config.retries} in ${(decision.delayMs / 1000).toFixed(1)}s (${decision.reason})`);
        await this.sleep(decision.delayMs, this.config.signal);
        continue;
      }
      const what = `${call.method} ${url.pathname}: HTTP ${answer.status}${failure.message ? `: ${failure.message}` : ''}${failure.errorId ? ` (${failure.errorId})` : ''}`;
      if (answer.status >= 500 || answer.status === 408 || answer.status === 429) {
        throw new NetworkError(`${what}, after ${attempt + 1} attempt${attempt ? 's' : ''}`, 'the server is failing; try again later, or raise --retries');
      }
      throw new ApiRejectedError(what, answer.status, failure.errorId);
    }
  }

  /** Sends a call and validates its JSON answer against a schema. */
  async json<S extends z.ZodType>(call: Call, schema: S): Promise<z.output<S>> {
    const answer = await this.send(call);
    let text: string;
    try {
      text = await readText(answer);
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new NetworkError(`${call.method} ${call.path}: ${describeNetworkError(error) ?? 'the answer was cut short'}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.trace(`  unexpected body: ${excerpt(text)}`);
      throw new UnexpectedResponseError(`${call.path} answered something unexpected: not JSON`, excerpt(text));
    }
    const result = schema.safeParse(parsed);
    if (!result.success) {
      this.trace(`  unexpected body: ${excerpt(text)}`);
      const issue = result.error.issues[0];
      const where = issue?.path.length ? issue.path.join('.') : 'the body';
      throw new UnexpectedResponseError(`${call.path} answered something unexpected: ${where}: ${issue?.message ?? 'invalid'}`, excerpt(text));
    }
    return result.data;
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function readText(answer: Answer): Promise<string> {
  return answer.body.text();
}

export function excerpt(text: string, max = 300): string {
  const flat = redact(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** The server's message from the error envelope, or a description of a body of another shape. */
function describeFailure(answer: Answer, text: string): { message?: string; errorId?: string } {
  try {
    const envelope = errorEnvelope.safeParse(JSON.parse(text));
    if (envelope.success) return { message: redact(envelope.data.response.error), errorId: envelope.data.response.error_id };
  } catch {
    // not JSON: an HTML page from a proxy, or nothing
  }
  const type = headerText(answer.headers['content-type'])?.split(';')[0];
  if (!text.trim()) return {};
  return { message: `the body was not the API's error envelope${type ? ` (${type})` : ''}` };
}
