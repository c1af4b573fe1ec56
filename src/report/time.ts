// Time expressions, interpreted in Europe/Paris (SPEC section 2), to Unix seconds.

import { DateTime } from 'luxon';
import { UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import { PARIS_ZONE } from '../paris-zone.js';

export type Role = 'since' | 'until';

/** `-Nd` goes back at most about 100 years: further is a typo (and past what dates can hold). */
const MAX_DAYS_AGO = 36_500;

const FORMS = 'Unix seconds, 2026-11-01, 2026-11-01T08:30[:00] (Paris time), an ISO time with Z or an offset, now, today, yesterday, this-week, last-week, this-month, last-month, month-to-date, -7d, -2w or -3m';

/** The calendar's periods by name (weeks Monday to Sunday, on the Paris calendar): as --since its
 * first second, as --until its last. `month-to-date` ends today. */
export const CALENDAR_WORDS = ['today', 'yesterday', 'this-week', 'last-week', 'this-month', 'last-month', 'month-to-date'] as const;
/** `-2w` and `-3m` go back at most about 100 years, as `-Nd` does */
const MAX_WEEKS_AGO = 5_200;
const MAX_MONTHS_AGO = 1_200;

/** A period of the Paris calendar holding `date`: its day, week (Monday first) or month. */
function period(date: DateTime, unit: 'day' | 'week' | 'month', role: Role): number {
  const bound = role === 'since' ? date.startOf(unit) : date.endOf(unit);
  return Math.floor(bound.toSeconds());
}

function usage(option: string, text: string, why: string): UsageError {
  return new UsageError(`--${option} ${JSON.stringify(text)}: ${why}`, `accepted: ${FORMS}`).about(`--${option}`);
}

/** A Paris calendar day, as the role wants it: its first second, or its last (23:59:59). */
function day(date: DateTime, role: Role): number {
  const bound = role === 'since' ? date.startOf('day') : date.endOf('day');
  return Math.floor(bound.toSeconds());
}

/** A few thousand values remembered (then forgotten all at once): a job file of 20,000 jobs reads
 * the same few times and days again and again, and luxon's calendar arithmetic was a quarter of
 * `jobs validate`'s time (test/bench/RESULTS.md, "A job file of 20,000 jobs"). */
function remembered<K, V>(compute: (key: K) => V): (key: K) => V {
  const known = new Map<K, V>();
  return (key) => {
    const hit = known.get(key);
    if (hit !== undefined) return hit;
    const value = compute(key);
    if (known.size >= 4096) known.clear();
    known.set(key, value);
    return value;
  };
}

/** Paris offsets are whole hours (since 1945): the Paris day is one all through a UTC hour. */
const HOUR_MS = 3_600_000;
/** a date, or a day counted from today: the same second whenever read (that hour, for today's) */
const DAY_WORD = /^\s*(?:\d{4}-\d{2}-\d{2}|today|yesterday|this-week|last-week|this-month|last-month|month-to-date|-\d+[dwm])\s*$/i;
const dayWord = remembered((key: string) => {
  const [role, hour, input] = key.split('\0') as [Role, string, string];
  return parseTimeNow(input, role, Number(hour));
});

export function parseTime(input: string, role: Role, nowMs: number): number {
  if (!DAY_WORD.test(input)) return parseTimeNow(input, role, nowMs);
  const hour = /^\s*\d/.test(input) ? 0 : Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  return dayWord(`${role}\0${hour}\0${input}`);
}

function parseTimeNow(input: string, role: Role, nowMs: number): number {
  const text = input.trim();
  const lower = text.toLowerCase();
  const today = DateTime.fromMillis(nowMs, { zone: PARIS_ZONE });

  if (/^\d+$/.test(text)) {
    if (text.length >= 13) {
      throw usage(role, text, 'looks like a timestamp in milliseconds; give Unix seconds (10 digits)');
    }
    if (text.length === 8 && DateTime.fromFormat(text, 'yyyyMMdd').isValid) {
      throw usage(role, text, `is ambiguous; write the date as ${text.slice(0, 4)}-${text.slice(4, 6)}-${text.slice(6)}, or give Unix seconds`);
    }
    return Number(text);
  }
  if (lower === 'now') return Math.floor(nowMs / 1000);
  if (lower === 'today') return day(today, role);
  if (lower === 'yesterday') return day(today.minus({ days: 1 }), role);
  // (luxon's weeks start on Monday, as ISO 8601's and the French calendar's)
  if (lower === 'this-week') return period(today, 'week', role);
  if (lower === 'last-week') return period(today.minus({ weeks: 1 }), 'week', role);
  if (lower === 'this-month') return period(today, 'month', role);
  if (lower === 'last-month') return period(today.minus({ months: 1 }), 'month', role);
  if (lower === 'month-to-date') return role === 'since' ? period(today, 'month', role) : day(today, role);
  const unitsAgo = /^-(\d+)([wm])$/.exec(lower);
  if (unitsAgo) {
    const count = Number(unitsAgo[1]);
    const weeks = unitsAgo[2] === 'w';
    if (count > (weeks ? MAX_WEEKS_AGO : MAX_MONTHS_AGO)) throw usage(role, text, `goes back more than ${weeks ? `${MAX_WEEKS_AGO} weeks` : `${MAX_MONTHS_AGO} months`}; give a date instead`);
    return weeks ? period(today.minus({ weeks: count }), 'week', role) : period(today.minus({ months: count }), 'month', role);
  }
  const ago = /^-(\d+)d$/.exec(lower);
  if (ago) {
    const days = Number(ago[1]);
    if (days > MAX_DAYS_AGO) throw usage(role, text, `goes back more than ${MAX_DAYS_AGO} days; give a date instead`);
    return day(today.minus({ days }), role);
  }

  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const date = DateTime.fromISO(text, { zone: PARIS_ZONE });
    if (!date.isValid) throw usage(role, text, 'is not a calendar date');
    return day(date, role);
  }

  const wall = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (wall) {
    const [, date = '', hour = '', minute = '', second = '00'] = wall;
    // hour 24 (luxon reads it as the next midnight) and other clock values no day has
    if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) throw usage(role, text, 'is not a valid date and time');
    const local = DateTime.fromISO(`${date}T${hour}:${minute}:${second}`, { zone: PARIS_ZONE });
    if (!local.isValid) throw usage(role, text, 'is not a valid date and time');
    // luxon moves a time that does not exist (the spring gap) forward: refuse it instead
    if (local.toFormat('yyyy-MM-dd HH:mm:ss') !== `${date} ${hour}:${minute}:${second}`) {
      throw usage(role, text, 'does not exist in Paris (the clocks skip that hour); give an offset, e.g. +01:00');
    }
    // the repeated hour of the autumn change: take its first occurrence (summer time)
    const hourEarlier = DateTime.fromSeconds(local.toSeconds() - 3600, { zone: PARIS_ZONE });
    const wanted = local.toFormat('yyyy-MM-dd HH:mm:ss');
    return Math.floor((hourEarlier.toFormat('yyyy-MM-dd HH:mm:ss') === wanted ? hourEarlier : local).toSeconds());
  }

  if (/^\d{4}-\d{2}-\d{2}T.+(Z|[+-]\d{2}(:?\d{2})?)$/i.test(text)) {
    // offsets run from -12:00 to +14:00 on Earth; luxon would take +25:00 and move the period
    const offset = /([+-])(\d{2}):?(\d{2})?$/.exec(text);
    if (offset && !/z$/i.test(text) && (Number(offset[2]) > 14 || Number(offset[3] ?? 0) > 59)) {
      throw usage(role, text, 'has an offset no clock uses (from -12:00 to +14:00)');
    }
    const instant = DateTime.fromISO(text, { setZone: true });
    if (!instant.isValid) throw usage(role, text, 'is not a valid ISO 8601 date-time');
    return Math.floor(instant.toSeconds());
  }

  throw usage(role, text, `is not a time this tool understands${timeSuggestion(text, lower)}`);
}

/** What a time written another way most likely meant: a date of another notation (25/11/2026),
 * a relative day in words (last-week) or without its minus (7d), a misspelt word (yesterdya). */
function timeSuggestion(text: string, lower: string): string {
  const dated = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$/.exec(text);
  if (dated) {
    const [first, second, year] = dated.slice(1).map(Number) as [number, number, number];
    const iso = (month: number, dayOfMonth: number) => {
      const date = DateTime.fromObject({ year, month, day: dayOfMonth }, { zone: PARIS_ZONE });
      return date.isValid ? date.toFormat('yyyy-MM-dd') : undefined;
    };
    const dayFirst = iso(second, first);
    const monthFirst = iso(first, second);
    if (dayFirst && monthFirst && dayFirst !== monthFirst) return `; did you mean ${dayFirst} (day/month) or ${monthFirst} (month/day)?`;
    const either = dayFirst ?? monthFirst;
    return either ? `; did you mean ${either}?` : '';
  }
  const yearFirst = /^(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})$/.exec(text);
  if (yearFirst) {
    const date = DateTime.fromObject({ year: Number(yearFirst[1]), month: Number(yearFirst[2]), day: Number(yearFirst[3]) }, { zone: PARIS_ZONE });
    return date.isValid ? `; did you mean ${date.toFormat('yyyy-MM-dd')}?` : '';
  }
  // the calendar's words as people spell them: `last week`, `previous_month`, `this month`, `mtd`
  const calendar = /^(this|current|last|past|previous)[\s_]*(week|month)$/.exec(lower);
  if (calendar) return `; did you mean ${calendar[1] === 'this' || calendar[1] === 'current' ? 'this' : 'last'}-${calendar[2]}?`;
  if (/^a[\s_-]?week[\s_-]?ago$/.test(lower)) return '; did you mean last-week (or -7d)?';
  if (/^(mtd|month[\s_]*to[\s_]*date)$/.test(lower)) return '; did you mean month-to-date?';
  const units = /^-?(\d+)\s*(w|weeks?|m|months?)(\s*ago)?$/.exec(lower);
  if (units) return `; did you mean -${Number(units[1])}${(units[2] as string).startsWith('w') ? 'w' : 'm'}?`;
  const days = /^-?(\d+)\s*(d|days?)?(\s*ago)?$/.exec(lower);
  if (days) return `; did you mean -${Number(days[1])}d?`;
  return /^[a-z-]+$/i.test(text) ? didYouMean(lower, ['now', ...CALENDAR_WORDS]) : '';
}

/** The last second of the Paris day holding `nowMs`. */
const endOfParisDayAt = remembered((hourMs: number) => Math.floor(DateTime.fromMillis(hourMs, { zone: PARIS_ZONE }).endOf('day').toSeconds()));
export function endOfParisDay(nowMs: number): number {
  return endOfParisDayAt(Math.floor(nowMs / HOUR_MS) * HOUR_MS);
}

export const parisDate: (seconds: number) => string = remembered((seconds: number) => DateTime.fromSeconds(seconds, { zone: PARIS_ZONE }).toFormat('yyyy-MM-dd'));

/** An instant as ISO 8601 with its Paris offset (`2026-10-25T02:00:00+01:00`). */
export function parisIso(seconds: number): string {
  return DateTime.fromSeconds(seconds, { zone: PARIS_ZONE }).toISO({ suppressMilliseconds: true }) ?? String(seconds);
}
