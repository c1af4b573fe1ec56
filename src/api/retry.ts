// When to try a request again, and after how long (SPEC section 4): connection errors, timeouts,
// 408, 429 and 5xx except 501 are retried with exponential backoff and full jitter, honouring
// Retry-After. Pure functions, so the decisions are tested without a network.

export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 30_000;
/** a Retry-After longer than this is not waited for: the request fails instead */
export const RETRY_AFTER_CAP_MS = 5 * 60_000;

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status !== 501);
}

/** Seconds or an HTTP date, in milliseconds from `nowMs`; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Full jitter: a uniform delay between 0 and the exponential bound of this attempt (0-based). */
export function backoffMs(attempt: number, random: () => number): number {
  return Math.floor(random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt));
}

export interface RetryDecision {
  retry: boolean;
  delayMs: number;
  reason: string;
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
    if (cause.retryAfterMs > RETRY_AFTER_CAP_MS) return { retry: false, delayMs: 0, reason: `${reason}, Retry-After too long` };
    return { retry: true, delayMs: cause.retryAfterMs, reason: `${reason}, Retry-After ${Math.round(cause.retryAfterMs / 1000)}s` };
  }
  return { retry: true, delayMs: backoffMs(attempt, random), reason };
}
