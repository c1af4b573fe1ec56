import { UsageError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export interface DurationBounds {
  /** milliseconds, inclusive */
  min: number;
  max: number;
}

/** The range of every duration option: wide enough for real use, narrow enough that no value
 * hammers the API (`--poll-interval 0`) or overflows a timer (Node's timers stop at 24.8 days). */
export const BOUNDS = {
  /** small values exist for the loopback sandbox */
  pollInterval: { min: 10, max: 3_600_000 },
  maxWait: { min: 100, max: 24 * 3_600_000 },
  timeout: { min: 100, max: 3_600_000 },
  sandboxDelay: { min: 0, max: 3_600_000 },
  sandboxLatency: { min: 0, max: 600_000 },
  /** the sandbox's work model, restatement window and report lifetime */
  sandboxWork: { min: 0, max: 3_600_000 },
  sandboxSpan: { min: 0, max: 366 * 86_400_000 },
  /** --lock-wait: how long a run waits for its state's lock (a killed pod's lease runs out meanwhile) */
  lockWait: { min: 0, max: 24 * 3_600_000 },
  /** jobs status --max-lag: a lag of less than a minute is no schedule's (`--max-lag 36`, 36 s, meant hours) */
  maxLag: { min: 60_000, max: 366 * 86_400_000 },
} as const satisfies Record<string, DurationBounds>;

/** `500ms`, `30s`, `5m`, `2h`, `3d` (24-hour days), or plain seconds (`12`, `1.5`), in milliseconds, within `bounds`. */
export function parseDuration(text: string, option: string, bounds?: DurationBounds): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) {
    throw new UsageError(`${option} wants a duration like 500ms, 30s, 5m, 2h or 3d, not "${text}"`);
  }
  const ms = Math.round(Number(match[1]) * (UNITS[match[2] ?? 's'] ?? 1000));
  if (bounds && !(ms >= bounds.min && ms <= bounds.max)) {
    // too short, without a unit: the unit was likely forgotten (`--max-lag 36` for 36 hours)
    // (where the least is a minute or more: minutes, hours and days are then the units meant)
    const bare = match[2] === undefined && ms > 0 && ms < bounds.min && bounds.min >= 60_000 ? match[1] : undefined;
    throw new UsageError(`${option} must be from ${formatDuration(bounds.min)} to ${formatDuration(bounds.max)}, not "${text}"`,
      bare === undefined ? undefined : `a number alone is seconds: give its unit, as in ${bare}m, ${bare}h or ${bare}d`);
  }
  return ms;
}

export function formatDuration(ms: number): string {
  // each unit decided on the rounded value: 999.6 ms is 1.0s, 9.96 s 10s, 59.6 s 1m, 119.6 s 2m
  if (Math.round(ms) < 1000) return `${Math.round(ms)}ms`;
  const tenths = Math.round(ms / 100) / 10;
  if (tenths < 10) return `${tenths.toFixed(1)}s`;
  const whole = Math.round(ms / 1000);
  if (whole < 60) return `${whole}s`;
  const minutes = Math.floor(whole / 60);
  const rest = whole - minutes * 60;
  // whole days from two of them (366d, not 8784h; 24h stays 24h)
  if (rest === 0 && minutes >= 2880 && minutes % 1440 === 0) return `${minutes / 1440}d`;
  if (minutes >= 60 && rest === 0 && minutes % 60 === 0) return `${minutes / 60}h`;
  return rest === 0 ? `${minutes}m` : `${minutes}m${String(rest).padStart(2, '0')}s`;
}
