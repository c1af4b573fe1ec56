// The bounds and values of the chunked and recurring runs' flags, apart from the modules that use
// them so that declaring the flags loads nothing else.

import { UsageError } from '../errors.js';

export const MAX_CONCURRENCY = 16;
/**
 * Measured (test/bench/RESULTS.md, "Chunked runs"): against a platform that runs 8 reports at once,
 * wall time falls as 1/N up to 8; 16 is 15% slower than 8 (429s, halving, Retry-After), 4 twice as
 * slow. Overshooting a platform's limit costs little (AIMD settles under it), undershooting costs
 * in proportion, so the default is 8.
 */
export const DEFAULT_CONCURRENCY = 8;

/** --log-format's values (src/engine/log.ts writes them). */
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** REPORTING_LOG_FORMAT: the log's format where --log-format is not given (a pod's environment
 * makes every command's stderr JSON); undefined when unset. */
export function logFormatFrom(env: Record<string, string | undefined>): LogFormat | undefined {
  const value = env.REPORTING_LOG_FORMAT?.trim().toLowerCase();
  if (!value) return undefined;
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new UsageError(`REPORTING_LOG_FORMAT=${JSON.stringify(env.REPORTING_LOG_FORMAT)} is not a log format`, `set it to ${LOG_FORMATS.join(' or ')}, or unset it`);
}

/** `--lookback 3d` or `3`: a number of Paris calendar days, 0 to 366. */
export function parseLookback(text: string): number {
  const match = /^\s*(\d+)\s*d?\s*$/i.exec(text);
  const days = match ? Number(match[1]) : Number.NaN;
  if (!Number.isInteger(days) || days > 366) {
    throw new UsageError(`--lookback wants a number of days from 0 to 366, like 3d, not "${text}"`, 'for example --lookback 3d re-fetches the three days before the new ones').about('--lookback');
  }
  return days;
}
