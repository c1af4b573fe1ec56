// A downloaded report checked against the request it answers: the period its summary names (as
// instants, whatever the offset's spelling) and its breakdowns (as a set) must be the window's.

import type { Summary } from '../api/schemas.js';
import { parisIso } from './time.js';
import type { Window } from './windows.js';

const seconds = (iso: string) => Date.parse(iso) / 1000;

/** Why the summary is not the window's, or undefined when it is (or says nothing). */
export function summaryMismatch(window: Window, breakdowns: readonly string[], summary: Summary | undefined): string | undefined {
  if (!summary) return undefined;
  const samePeriod = seconds(summary.since) === window.since && seconds(summary.until) === window.until;
  const wanted = new Set(breakdowns.map((b) => b.toUpperCase()));
  const got = new Set(summary.breakdowns.map((b) => b.toUpperCase()));
  const sameBreakdowns = wanted.size === got.size && [...wanted].every((b) => got.has(b));
  if (samePeriod && sameBreakdowns) return undefined;
  const list = (set: Set<string>) => (set.size ? [...set].join(',') : 'none');
  const what = samePeriod ? '' : `covers ${summary.since} .. ${summary.until}, not ${parisIso(window.since)} .. ${parisIso(window.until)}`;
  const by = sameBreakdowns ? '' : `${what ? '; and ' : ''}is broken down by ${list(got)}, not ${list(wanted)}`;
  return `the report downloaded ${what}${by}`;
}

/** A --param that sets the time zone: the summary's period is then in that zone, not compared. */
export const setsTimeZone = (params: Record<string, unknown>): boolean => Object.keys(params).some((name) => /^time_?zone$/i.test(name));
