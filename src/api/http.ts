// The one HTTP helper: adds the token and headers, encodes bodies, applies timeouts, retries, traces
// (redacted), and turns bad answers into typed errors. Built on one keep-alive undici dispatcher.

import type { Dispatcher, buildConnector } from 'undici';
import { loadUndici } from '../lazy.js';
import type { z } from 'zod';
import { isLoopbackAddress } from '../auth/resolve.js';
import { formatDuration } from '../duration.js';
import { AuthError, ApiRejectedError, CliError, InterruptedError, NetworkError, ThrottledError, UnexpectedResponseError, UsageError } from '../errors.js';
import { encodeBody, type BodyEncoding, type Params } from './encode.js';
import { Secrets } from './redact.js';
import { decideRetry, parseRetryAfter, type RetryDecision } from './retry.js';
import { describeNetworkError, NetworkFailure } from '../network.js';
import { RETRY_AFTER_CAP_MS, sleepFor } from '../retry.js';
import { errorEnvelope } from './schemas.js';

export interface HttpConfig {
  baseUrl: string;
  timeoutMs: number;
  retries: number;
  encoding: BodyEncoding;
  userAgent: string;
  signal: AbortSignal;
  dispatcher?: Dispatcher;
  /** the process's shared keep-alive agent (a fleet's jobs share it); without it, the client makes its own */
  connections?: Connections;
  trace?: (line: string) => void;
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** the session's secrets, masked in traces and messages */
  secrets?: Secrets;
}

export interface Call {
  method: 'GET' | 'POST';
  path: string;
  params?: Params;
  /** sent as JSON whatever the encoding (the auth endpoint takes JSON) */
  json?: unknown;
  token?: string;
  /** ends the call (and its retries) early; its reason, if an Error, is what the call throws */
  signal?: AbortSignal;
  /** this call's listeners, in place of the client-wide ones (a window's task: its own events) */
  hooks?: HttpHooks;
}

export interface HttpHooks {
  /** told of every 429 about to be retried, so a chunked run slows down at once (src/engine/pool.ts) */
  onThrottle?: (retryAfterMs?: number) => void;
  /** told of every retry in one line for the user ("HTTP 503 (POST /buyer-reporting); retrying in
   * 1.2s (retry 1 of 4)") */
  onRetry?: (line: string, retry: { attempt: number; delayMs: number }) => void;
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

/** The most read of an answer that is not a download: room for over 400,000 campaigns of 300
 * bytes each; a JSON answer beyond it is an unexpected response (docs/security.md). */
const ANSWER_CAP_BYTES = 128 * 1024 * 1024;
/** The most read of an error body: only an excerpt of it is ever shown. */
const ERROR_BODY_CAP_BYTES = 64 * 1024;

/** Plain HTTP reached a socket whose remote address is not loopback: nothing was sent on it. */
export class NotLoopbackError extends Error {
  constructor(readonly host: string, readonly address: string | undefined) {
    super(`${host} connected to ${address ?? 'an unknown address'}, which is not loopback`);
  }
}

/** Wraps a connector so that a plain-HTTP connection whose peer is not a loopback address is closed
 * before anything (the token) is written on it: a name such as `x.localhost` resolves through
 * /etc/hosts and DNS, so only the address actually connected to can tell. */
export function loopbackOnly(connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) => {
    connect(options, (...args) => {
      const [error, socket] = args;
      if (error !== null || options.protocol !== 'http:' || isLoopbackAddress(socket.remoteAddress)) {
        callback(...args);
        return;
      }
      const refused = new NotLoopbackError(options.hostname, socket.remoteAddress);
      socket.destroy();
      callback(refused, null);
    });
  };
}

/** How long a socket is kept idle (a server that says less, in its Keep-Alive header, is believed):
 * a fleet's next submit finds one of the sockets its jobs left, and one kept longer than a server
 * keeps it would meet the server closing it as the request goes out. */
const KEEP_ALIVE_MS = 4_000;

/** The keep-alive agent the clients of one process share, made at the first request (undici's
 * parts are loaded then, src/lazy.ts: a command that sends none, `jobs validate`, `schema`, does not
 * pay for them). A fleet's jobs reuse each other's sockets: a job's first submit, on the hand-off's
 * path, finds one open instead of connecting. */
export class Connections {
  private agent?: Promise<Dispatcher>;

  constructor(private readonly timeoutMs: number) {}

  dispatcher(): Promise<Dispatcher> {
    this.agent ??= loadUndici().then(({ Agent, buildConnector: connector }) =>
      new Agent({ connect: loopbackOnly(connector({ timeout: this.timeoutMs })), keepAliveTimeout: KEEP_ALIVE_MS }));
    return this.agent;
  }

  async close(): Promise<void> {
    if (this.agent) await (await this.agent).close().catch(() => undefined);
  }
}

export class Http {
  /** the dispatcher given, or the connections' agent */
  private dispatcher?: Promise<Dispatcher>;
  /** the connections given, or this client's own (closed with it) */
  private readonly connections: Connections;
  private readonly ownsConnections: boolean;
  readonly secrets: Secrets;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** the client-wide listeners (a call's own `hooks` take their place): the factory shows each
   * retry on stderr, but with -q or -v (whose trace says it) */
  onThrottle?: HttpHooks['onThrottle'];
  onRetry?: HttpHooks['onRetry'];

  constructor(readonly config: HttpConfig) {
    if (config.dispatcher) this.dispatcher = Promise.resolve(config.dispatcher);
    this.ownsConnections = config.connections === undefined;
    this.connections = config.connections ?? new Connections(config.timeoutMs);
    this.secrets = config.secrets ?? new Secrets();
    this.now = config.now ?? Date.now;
    this.random = config.random ?? Math.random;
    this.sleep = config.sleep ?? sleepFor;
  }

  async close(): Promise<void> {
    if (this.ownsConnections) await this.connections.close();
  }

  private dispatcherOf(): Promise<Dispatcher> {
    this.dispatcher ??= this.connections.dispatcher();
    return this.dispatcher;
  }

  trace(line: string): void {
    this.config.trace?.(this.secrets.redact(line));
  }

  /** Sends a call, retrying what SPEC section 4 says to retry; resolves with a 2xx answer whose
   * body is left to stream (a download: the caller watches its throughput). */
  async send(call: Call): Promise<Answer> {
    return this.exchange(call, undefined);
  }

  /** Sends a call and validates its JSON answer against a schema; the whole answer, body included,
   * must arrive within --timeout, and may be at most ANSWER_CAP_BYTES. */
  async json<S extends z.ZodType>(call: Call, schema: S): Promise<z.output<S>> {
    return this.exchange(call, async (answer) => {
      const { text, cut } = await readCapped(answer.body, ANSWER_CAP_BYTES);
      if (cut) {
        throw new UnexpectedResponseError(`${call.path} answered more than ${ANSWER_CAP_BYTES / 1024 / 1024} MiB: not read further`);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        this.trace(`  unexpected body: ${this.excerpt(text)}`);
        throw new UnexpectedResponseError(`${call.path} answered something unexpected: not JSON`, this.excerpt(text));
      }
      const result = schema.safeParse(parsed);
      if (!result.success) {
        this.trace(`  unexpected body: ${this.excerpt(text)}`);
        const issue = result.error.issues[0];
        const where = issue?.path.length ? issue.path.join('.') : 'the body';
        throw new UnexpectedResponseError(`${call.path} answered something unexpected: ${where}: ${issue?.message ?? 'invalid'}`, this.excerpt(text));
      }
      return result.data as z.output<S>;
    });
  }

  /** The retry loop. With `consume`, each attempt (request and reading of the answer) has a deadline
   * of --timeout; without it, the headers have (headersTimeout) and the body is the caller's. */
  private async exchange<T>(call: Call, consume: ((answer: Answer) => Promise<T>) | undefined): Promise<T> {
    const { url, headers, body } = this.request(call);
    const timeout = formatDuration(this.config.timeoutMs);
    // what stops the call for good: Ctrl-C, or the caller's own signal (a --max-wait)
    const stop = call.signal ? AbortSignal.any([this.config.signal, call.signal]) : this.config.signal;

    for (let attempt = 0; ; attempt++) {
      // stopped before its first attempt: the call never went out (a submit's intent is taken back)
      this.throwIfStopped(call, attempt === 0);
      const started = this.now();
      this.trace(`> ${call.method} ${url.pathname}${body !== undefined ? ` ${body}` : ''}${call.token ? ' (Authorization: ***)' : ''}`);
      const deadline = new AbortController();
      const timer = setTimeout(
        () => deadline.abort(new NetworkFailure(`no complete answer within ${timeout} (--timeout)`)),
        this.config.timeoutMs,
      );
      const signal = AbortSignal.any([stop, deadline.signal]);
      let answer: Answer;
      let text = '';
      let cut = false;
      try {
        const [{ request }, dispatcher] = await Promise.all([loadUndici(), this.dispatcherOf()]);
        this.throwIfStopped(call, attempt === 0);
        const response = await request(url, {
          method: call.method,
          headers,
          body,
          dispatcher,
          headersTimeout: this.config.timeoutMs,
          bodyTimeout: this.config.timeoutMs,
          signal,
        });
        answer = { status: response.statusCode, headers: response.headers, body: response.body };
        this.trace(`< ${answer.status} ${call.method} ${url.pathname} ${this.now() - started}ms`);
        if (answer.status >= 200 && answer.status < 300) {
          if (!consume) return answer as T;
          return await consume(answer);
        }
        ({ text, cut } = await readCapped(answer.body, ERROR_BODY_CAP_BYTES).catch(() => ({ text: '', cut: false })));
      } catch (error) {
        if (error instanceof InterruptedError && error.unsent) throw error;
        this.throwIfStopped(call);
        if (error instanceof CliError) throw error;
        const network = this.networkFailure(error, call, url, started);
        const decision = decideRetry(attempt, this.config.retries, { network }, this.random);
        if (!decision.retry) {
          throw new NetworkError(
            `${call.method} ${url.pathname}: ${network} (${url.host}) after ${attempt + 1} attempt${attempt ? 's' : ''}`,
            'check the base URL and your connection; --timeout and --retries adjust the patience',
          );
        }
        await this.pause(attempt, decision, call, url.pathname, stop);
        continue;
      } finally {
        clearTimeout(timer);
      }
      const retryAfterMs = this.refusal(answer, text, cut);
      const decision = decideRetry(attempt, this.config.retries, { status: answer.status, retryAfterMs }, this.random);
      if (!decision.retry) throw this.refused(answer, text, attempt, call, url, decision, retryAfterMs);
      if (answer.status === 429) (call.hooks ?? this).onThrottle?.(retryAfterMs);
      await this.pause(attempt, decision, call, url.pathname, stop);
    }
  }

  /** A call's URL, headers and body (encoded as --body says, or JSON). */
  private request(call: Call): { url: URL; headers: Record<string, string>; body: string | undefined } {
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
    return { url, headers, body };
  }

  /** A request that got no answer, described (and traced); a refused plain-HTTP address is a usage error. */
  private networkFailure(error: unknown, call: Call, url: URL, started: number): string {
    const refused = causeOf(error, NotLoopbackError);
    if (refused) {
      throw new UsageError(
        `refusing to send a token over plain HTTP: ${refused.message}`,
        'use https://; plain http:// is allowed only to loopback addresses such as the sandbox',
      );
    }
    const network = describeNetworkError(error) ?? 'the request failed';
    const detail = network === 'the request failed' && error instanceof Error ? ` (${error.name}: ${error.message})` : '';
    this.trace(`< ${call.method} ${url.pathname} failed after ${this.now() - started}ms: ${network}${detail}`);
    return network;
  }

  /** An answer that is not 2xx: traced; a rejected token thrown; else its Retry-After, if any. */
  private refusal(answer: Answer, text: string, cut: boolean): number | undefined {
    this.trace(`  body: ${this.excerpt(text, cut)}`);
    const failure = this.describeFailure(answer, text);
    if (answer.status === 401 || answer.status === 403 || failure.errorId === 'NOAUTH') {
      throw new TokenRejectedError(`the API rejected the token (HTTP ${answer.status}${failure.message ? `: ${failure.message}` : ''})`);
    }
    return parseRetryAfter(headerText(answer.headers['retry-after']), this.now());
  }

  /** The error of an answer not retried (any more). */
  private refused(answer: Answer, text: string, attempt: number, call: Call, url: URL, decision: RetryDecision, retryAfterMs: number | undefined): CliError {
    const failure = this.describeFailure(answer, text);
    const what = `${call.method} ${url.pathname}: HTTP ${answer.status}${failure.message ? `: ${failure.message}` : ''}${failure.errorId ? ` (${failure.errorId})` : ''}`;
    if (decision.waitTooLong && retryAfterMs !== undefined) {
      // more --retries would not help: say what the server asked for
      const message = `${what}; it asks to retry in ${formatDuration(retryAfterMs)} (Retry-After), longer than the ${formatDuration(RETRY_AFTER_CAP_MS)} this tool waits`;
      return answer.status === 429 ? new ThrottledError(message, undefined, 'try again later') : new NetworkError(message, 'try again later');
    }
    if (answer.status === 429) {
      return new ThrottledError(`${what}, after ${attempt + 1} attempt${attempt ? 's' : ''}`, retryAfterMs, 'the server is failing; try again later, or raise --retries');
    }
    if (answer.status >= 500 || answer.status === 408) {
      return new NetworkError(`${what}, after ${attempt + 1} attempt${attempt ? 's' : ''}`, 'the server is failing; try again later, or raise --retries');
    }
    return new ApiRejectedError(what, answer.status, failure.errorId);
  }

  /** The wait before the next attempt; ended early by Ctrl-C or the call's own signal. */
  private async pause(attempt: number, decision: RetryDecision, call: Call, path: string, stop: AbortSignal): Promise<void> {
    const delay = `${(decision.delayMs / 1000).toFixed(1)}s`;
    this.trace(`  retry ${attempt + 1} of ${this.config.retries} in ${delay} (${decision.reason})`);
    (call.hooks ?? this).onRetry?.(this.secrets.redact(`${decision.reason} (${call.method} ${path}); retrying in ${delay} (retry ${attempt + 1} of ${this.config.retries})`), { attempt: attempt + 2, delayMs: decision.delayMs });
    try {
      await this.sleep(decision.delayMs, stop);
    } catch (error) {
      this.throwIfStopped(call);
      throw error;
    }
  }

  /** Ctrl-C is an interruption; a call's own signal (a --max-wait) ends with the error it holds. */
  private throwIfStopped(call: Call, unsent = false): void {
    if (this.config.signal.aborted) throw Object.assign(new InterruptedError(String(this.config.signal.reason)), { unsent });
    if (call.signal?.aborted) {
      const reason: unknown = call.signal.reason;
      throw reason instanceof Error ? reason : new InterruptedError(String(reason));
    }
  }

  /** A one-line excerpt of a body, secrets masked (see Secrets.excerpt). */
  excerpt(text: string, cut = false): string {
    return this.secrets.excerpt(text, 300, cut);
  }

  /** The server's message from the error envelope, or a description of a body of another shape. */
  private describeFailure(answer: Answer, text: string): { message?: string; errorId?: string } {
    try {
      const envelope = errorEnvelope.safeParse(JSON.parse(text));
      if (envelope.success) {
        return { message: this.secrets.redact(envelope.data.response.error), errorId: envelope.data.response.error_id && this.secrets.redact(envelope.data.response.error_id) };
      }
    } catch {
      // not JSON: an HTML page from a proxy, or nothing, or cut at ERROR_BODY_CAP_BYTES
    }
    const type = headerText(answer.headers['content-type'])?.split(';')[0];
    if (!text.trim()) return {};
    return { message: `the body was not the API's error envelope${type ? ` (${type})` : ''}` };
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The first error of a class in a chain of causes. */
function causeOf<E extends Error>(error: unknown, type: new (...args: never[]) => E): E | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof type) return current;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

/** Reads at most `cap` bytes of a body, then lets go of the rest (the connection is closed). Each
 * chunk is decoded as it comes, so the bytes and the text are not both held whole. */
export async function readCapped(body: AsyncIterable<Uint8Array>, cap: number): Promise<{ text: string; cut: boolean }> {
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.length > cap) {
      parts.push(decoder.decode(chunk.subarray(0, cap - size)));
      return { text: parts.join(''), cut: true };
    }
    parts.push(decoder.decode(chunk, { stream: true }));
    size += chunk.length;
  }
  parts.push(decoder.decode());
  return { text: parts.join(''), cut: false };
}
