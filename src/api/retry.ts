// When to try a request again, and after how long (SPEC section 4): connection errors, timeouts,
// 408, 429 and 5xx except 501 are retried with exponential backoff and full jitter, honouring
// Retry-After. Pure functions, so the decisions are tested without a network; the numbers are the
// one retry policy's (src/retry.ts, POLICY.http).

import { backoffDelay, POLICY, RETRY_AFTER_CAP_MS, retryAfterFloorMs } from '../retry.js';

export { RETRY_AFTER_CAP_MS } from '../retry.js';

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status !== 501);
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** The three HTTP-date forms of RFC 9110 section 5.6.7 (IMF-fixdate, RFC 850, asctime), and
 * nothing else: Date.parse alone accepts text such as "soon 5". */
const HTTP_DATE = new RegExp(
  `^(?:${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT`
  + `|(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \\d{2}-${MONTH}-\\d{2} ${TIME} GMT`
  + `|${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4})$`,
);

/** Delta-seconds or an HTTP-date, in milliseconds from `nowMs`; undefined when absent or not one
 * of those (a fraction, a word, a negative number). */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  if (!HTTP_DATE.test(text)) return undefined;
  const date = Date.parse(/GMT$/.test(text) ? text : `${text} GMT`);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** The least wait before retry `attempt` (0-based) when the server names a wait: half the
 * exponential bound, so a `Retry-After: 0` or a past date cannot spend every retry at once. */
export function backoffFloorMs(attempt: number): number {
  return retryAfterFloorMs(attempt);
}

/** Full jitter: a uniform delay between 0 and the exponential bound of this attempt (0-based). */
export function backoffMs(attempt: number, random: () => number): number {
  return backoffDelay(POLICY.http, attempt, random);
}

export interface RetryDecision {
  retry: boolean;
  delayMs: number;
  reason: string;
  /** not retried only because the server's Retry-After is beyond RETRY_AFTER_CAP_MS */
  waitTooLong?: boolean;
}

export function decideRetry(
  attempt: number,
  retries: number,
  cause: { status?: number; retryAfterMs?: number; network?: string },
  random: () => number,
): RetryDecision {
  const reason = cause.status !== undefined ? `HTTP ${cause.status}` : (cause.network ?? 'network error');
  if (cause.status !== undefined && !isRetryableStatus(cause.status)) return { retry: false, delayMs: 0, reason };
  if (attempt >= retries) return { retry: false, delayMs: 0, reason };
  if (cause.retryAfterMs !== undefined) {
    if (cause.retryAfterMs > RETRY_AFTER_CAP_MS) return { retry: false, delayMs: 0, reason: `${reason}, Retry-After too long`, waitTooLong: true };
    const delayMs = Math.max(cause.retryAfterMs, backoffFloorMs(attempt));
    return { retry: true, delayMs, reason: `${reason}, Retry-After ${Math.round(cause.retryAfterMs / 1000)}s` };
  }
  return { retry: true, delayMs: backoffMs(attempt, random), reason };
}
