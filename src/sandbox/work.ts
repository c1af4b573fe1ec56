// How long a report takes, whether it is too large, and which days are still being restated: the
// sandbox's model of a platform that does real work per report.

import { DateTime } from 'luxon';
import { PARIS } from '../paris.js';
import type { ReportQuery } from './report.js';

export interface WorkModel {
  /** the least time a report stays in `progress` */
  readyDelayMs: number;
  /** time in `progress` per day of period (0: only readyDelayMs) */
  workMsPerDay: number;
  /** reports touching more Paris days than this fail with "too much data" */
  failOverDays?: number;
}

/** Breakdowns that add rows to compute: every one but the coarse time buckets adds 10% of work. */
const FREE_BREAKDOWNS = new Set(['RANGE', 'DAILY', 'MONTHLY']);

function breakdownFactor(breakdowns: readonly string[]): number {
  return 1 + 0.1 * breakdowns.filter((name) => !FREE_BREAKDOWNS.has(name)).length;
}

/** The period's length in days of 24 hours, to the second (a 23-hour DST day is 23/24). */
function periodDays(query: Pick<ReportQuery, 'since' | 'until'>): number {
  return (query.until - query.since + 1) / 86_400;
}

/** How many Paris calendar days the period touches: a 25-hour DST day is one day, not two. */
function calendarDays(query: Pick<ReportQuery, 'since' | 'until'>): number {
  const first = DateTime.fromSeconds(query.since, { zone: PARIS }).startOf('day');
  const last = DateTime.fromSeconds(query.until, { zone: PARIS }).startOf('day');
  return Math.round(last.diff(first, 'days').days) + 1;
}

export interface WorkPlan {
  progressMs: number;
  /** set when the report ends in `failed` instead of `ready` */
  failure?: string;
}

/** A report that is too large works as long as the largest allowed one would, then fails. */
export function planWork(query: ReportQuery, model: WorkModel): WorkPlan {
  const days = calendarDays(query);
  const tooLarge = model.failOverDays !== undefined && days > model.failOverDays;
  const workedDays = tooLarge ? (model.failOverDays as number) : periodDays(query);
  const progressMs = Math.max(model.readyDelayMs, Math.round(model.workMsPerDay * workedDays * breakdownFactor(query.breakdowns)));
  if (!tooLarge) return { progressMs };
  return {
    progressMs,
    failure: `too much data: the report covers ${days} days, more than the limit of ${model.failOverDays}; request a shorter period`,
  };
}

/** The first second whose numbers are still restated: the start of the Paris day that holds
 * `now - restateMs`, so whole days change together and older days never do. */
export function restatedFrom(nowMs: number, restateMs: number): number {
  return DateTime.fromMillis(nowMs - restateMs, { zone: PARIS }).startOf('day').toSeconds();
}
