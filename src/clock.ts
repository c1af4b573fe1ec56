// The calendar's clock (issue 21, item 3): `REPORTING_NOW` (an ISO time or Unix seconds) moves
// what the CLI takes for "now" on the calendar (today, yesterday, -Nd, --since auto, the state's
// times, the times in logs) as an offset from the real clock, so time still passes. Timers (the
// poll's --max-wait, request timeouts, lock staleness, durations) keep the real clock: they are
// the Context's `now`. The sandbox's `--now` takes the same syntax (parseInstant).

import { DateTime } from 'luxon';
import { UsageError } from './errors.js';
import { PARIS_ZONE } from './paris-zone.js';

const FORMS = 'an ISO 8601 time (2026-11-26T03:00:00+01:00, 2026-11-26T03:00 in Paris time, 2026-11-26) or Unix seconds (1795658400)';

/**
 * An instant given as an ISO 8601 time (with Z or an offset: that instant; without: Paris wall
 * time; a date alone: its midnight in Paris) or as Unix seconds, in ms since the epoch. Anything
 * else is a usage error naming `name` (REPORTING_NOW, --now) and the accepted forms.
 */
export function parseInstant(input: string, name: string, hint?: string): number {
  const text = input.trim();
  const refuse = (why: string) => new UsageError(`${name} ${JSON.stringify(input)}: ${why}; give ${FORMS}`, hint);
  if (/^\d+$/.test(text)) {
    if (text.length >= 13) throw refuse('looks like milliseconds');
    if (text.length === 8) throw refuse('is ambiguous (a date without dashes, or seconds?)');
    return Number(text) * 1000;
  }
  // luxon reads a week date or an ordinal date too; those are ISO as well
  const at = /^\d{4}-/.test(text) ? DateTime.fromISO(text, { zone: PARIS_ZONE }) : undefined;
  if (!at?.isValid) throw refuse('is not a time');
  return at.toMillis();
}

/** An instant as a Paris ISO time with its offset, to the second. */
export function parisTime(ms: number): string {
  return DateTime.fromMillis(Math.floor(ms / 1000) * 1000, { zone: PARIS_ZONE }).toISO({ suppressMilliseconds: true, includeOffset: true }) ?? new Date(ms).toISOString();
}

export interface Calendar {
  /** ms since the epoch on the calendar: the real clock, moved by REPORTING_NOW when set */
  now(): number;
  /** REPORTING_NOW: what it says, the instant it named (when the command started), and the offset
   * from the real clock; undefined when the calendar is the real clock */
  moved?: { setting: string; startMs: number; offsetMs: number; /** startMs as a Paris ISO time: the `now` of JSON lines */ at: string };
}

/**
 * The calendar from REPORTING_NOW (unset or blank: the real clock) and the real clock. An
 * unparsable value is a usage error (exit 2), before the command does anything.
 */
export function calendarFrom(setting: string | undefined, realNow: () => number): Calendar {
  if (setting === undefined || setting.trim() === '') return { now: realNow };
  const startMs = parseInstant(setting, 'REPORTING_NOW', 'unset REPORTING_NOW to use the real clock');
  const offsetMs = startMs - realNow();
  return { now: () => realNow() + offsetMs, moved: { setting: setting.trim(), startMs, offsetMs, at: parisTime(startMs) } };
}

/** An offset as `+1d 2h 3m 4s` (`-` when the calendar is behind the real clock; whole seconds). */
export function offsetText(ms: number): string {
  let left = Math.round(Math.abs(ms) / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    const count = Math.floor(left / size);
    left -= count * size;
    if (count > 0) parts.push(`${count}${unit}`);
  }
  return `${ms < 0 ? '-' : '+'}${parts.join(' ') || '0s'}`;
}

/** The warning every command prints while REPORTING_NOW is set (-q included: a variable left in
 * a cron environment would export the same day every night). */
export function movedWarning(calendar: Calendar, realNow: number): string | undefined {
  if (!calendar.moved) return undefined;
  return `REPORTING_NOW=${calendar.moved.setting}: the calendar says ${parisTime(realNow + calendar.moved.offsetMs)}, not ${parisTime(realNow)} ` +
    '(today, yesterday, -Nd, --since auto and the times in logs follow it; timers keep the real clock); unset it for real runs';
}
