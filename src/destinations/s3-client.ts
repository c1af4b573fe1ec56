// What reporting sets on the S3 client (objects.ts clientFor): a quiet logger; its retries under the
// one retry policy (src/retry.ts), --retries of them (the SDK's own default is 2), each wait
// POLICY.s3 (POLICY.s3Throttled after a throttled answer) made of the run's clock, sleep and
// randomness, where the SDK would sleep on its own timer. Which answers are
// retried stays the SDK's judgement (a throttled or transient answer: 429, 500, 502, 503, 504, a
// reset connection, a timeout). And a missing region, which the SDK says only in words, is found by
// asking the client for its region: the failure then carries our code, REGION_MISSING.

import type { S3Client } from '@aws-sdk/client-s3';
import { backoffDelay, POLICY, REAL_WAITS, type Waits } from '../retry.js';

export type { Waits } from '../retry.js';

/** The SDK's log lines go nowhere: stderr carries only reporting's own lines. (Not named
 * NoOpLogger: the SDK prints to the console when it sees that one.) */
export class QuietLogger {
  trace(): void {}
  debug(): void {}
  info(): void {}
  warn(): void {}
  error(): void {}
}

/** what a failure for want of a region is named (objectError reads it) */
export const REGION_MISSING = 'RegionMissing';

/** a retry's wait is not cut short by us (the SDK races it with the request's own abort signal) */
const NEVER = new AbortController().signal;

/** The SDK's retry token: its retries so far; the wait before the next one (ours is slept already). */
interface Token {
  getRetryCount(): number;
  getRetryDelay(): number;
}

interface ErrorInfo {
  errorType: 'TRANSIENT' | 'THROTTLING' | 'SERVER_ERROR' | 'CLIENT_ERROR';
  retryAfterHint?: Date;
}

const token = (count: number): Token => ({ getRetryCount: () => count, getRetryDelay: () => 0 });

/** A Retry-After hint is followed, within 5 s more than the backoff (the SDK's rule). */
const RETRY_AFTER_SLACK_MS = 5000;

/** The wait before S3 retry `count + 1` (0-based `count`). */
export function s3DelayMs(count: number, info: ErrorInfo, waits: Pick<Waits, 'now' | 'random'>): number {
  const delay = backoffDelay(info.errorType === 'THROTTLING' ? POLICY.s3Throttled : POLICY.s3, count, waits.random);
  if (!info.retryAfterHint) return delay;
  return Math.max(delay, Math.min(info.retryAfterHint.getTime() - waits.now(), delay + RETRY_AFTER_SLACK_MS));
}

/** The SDK's retry strategy (its RetryStrategyV2 interface): `retries` retries after the first
 * attempt, throttled and transient failures only, waiting through `waits`. */
export function s3RetryStrategy(retries: number, waits: Waits) {
  return {
    acquireInitialRetryToken: async (): Promise<Token> => token(0),
    refreshRetryTokenForRetry: async (previous: Token, info: ErrorInfo): Promise<Token> => {
      const count = previous.getRetryCount();
      if ((info.errorType !== 'THROTTLING' && info.errorType !== 'TRANSIENT') || count >= retries) throw new Error('no retry');
      await waits.sleep(s3DelayMs(count, info, waits), NEVER);
      return token(count + 1);
    },
    recordSuccess: (): void => undefined,
  };
}

/** The client's settings for its retries: --retries after a first attempt, waits through `waits`. */
export function s3Retries(retries: number, waits: Waits = REAL_WAITS) {
  return { maxAttempts: retries + 1, retryStrategy: s3RetryStrategy(retries, waits) };
}

/** Names a failure for want of a region by our code: a failure no server answered (no HTTP
 * status), of a client that has no region. */
export function nameMissingRegion(client: S3Client): S3Client {
  client.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (error) {
      if (error instanceof Error && (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined && !(await client.config.region().then((region) => !!region, () => false))) {
        error.name = REGION_MISSING;
      }
      throw error;
    }
  }, { step: 'initialize', name: 'reportingRegionMissing' });
  return client;
}
