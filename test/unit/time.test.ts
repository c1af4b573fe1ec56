import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { parseTime } from '../../src/report/time.js';
import { UsageError } from '../../src/errors.js';

const paris = (iso: string) => DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toSeconds();
const at = (iso: string) => Date.parse(iso);
const NOW = at('2026-11-21T11:00:00Z'); // 12:00 in Paris

describe('time expressions, in Europe/Paris', () => {
  it('passes Unix seconds through unchanged', () => {
    expect(parseTime('1793487600', 'since', NOW)).toBe(1793487600);
  });

  it('a date is its first second as --since and its last second (23:59:59) as --until', () => {
    expect(parseTime('2026-11-01', 'since', NOW)).toBe(paris('2026-11-01T00:00:00'));
    expect(parseTime('2026-11-01', 'until', NOW)).toBe(paris('2026-11-01T23:59:59'));
  });

  it('gets DST days right: 23 hours in spring, 25 in autumn', () => {
    const span = (day: string) => parseTime(day, 'until', NOW) - parseTime(day, 'since', NOW) + 1;
    expect(span('2026-03-29')).toBe(23 * 3600);
    expect(span('2026-10-25')).toBe(25 * 3600);
    expect(span('2026-11-01')).toBe(24 * 3600);
    expect(parseTime('2026-10-25', 'since', NOW)).toBe(Date.parse('2026-10-24T22:00:00Z') / 1000);
    expect(parseTime('2026-10-25', 'until', NOW)).toBe(Date.parse('2026-10-25T22:59:59Z') / 1000);
  });

  it('handles month ends and leap days', () => {
    expect(parseTime('2026-02-28', 'until', NOW)).toBe(paris('2026-02-28T23:59:59'));
    expect(parseTime('2028-02-29', 'since', NOW)).toBe(paris('2028-02-29T00:00:00'));
    expect(() => parseTime('2026-02-29', 'since', NOW)).toThrow(/not a calendar date/);
    expect(parseTime('2026-12-31', 'until', NOW) + 1).toBe(parseTime('2027-01-01', 'since', NOW));
  });

  it('now, today, yesterday and -Nd follow the Paris calendar, not UTC', () => {
    expect(parseTime('now', 'since', NOW)).toBe(NOW / 1000);
    expect(parseTime('today', 'since', NOW)).toBe(paris('2026-11-21T00:00:00'));
    expect(parseTime('yesterday', 'until', NOW)).toBe(paris('2026-11-20T23:59:59'));
    expect(parseTime('-7d', 'since', NOW)).toBe(paris('2026-11-14T00:00:00'));
    // 00:30 in Paris on 1 November is still 31 October in UTC
    const justAfterMidnight = at('2026-10-31T23:30:00Z');
    expect(parseTime('today', 'since', justAfterMidnight)).toBe(paris('2026-11-01T00:00:00'));
    expect(parseTime('yesterday', 'since', justAfterMidnight)).toBe(paris('2026-10-31T00:00:00'));
    // the day after the autumn change: yesterday had 25 hours
    const monday = at('2026-10-26T08:00:00Z');
    expect(parseTime('yesterday', 'until', monday) - parseTime('yesterday', 'since', monday) + 1).toBe(25 * 3600);
  });

  it('calendar words: weeks Monday to Sunday and months of the Paris calendar, first second as --since, last as --until', () => {
    // NOW: Saturday 21 November 2026, 12:00 in Paris
    const both = (word: string, now = NOW) => [parseTime(word, 'since', now), parseTime(word, 'until', now)];
    expect(both('this-week')).toEqual([paris('2026-11-16T00:00:00'), paris('2026-11-22T23:59:59')]);
    expect(both('last-week')).toEqual([paris('2026-11-09T00:00:00'), paris('2026-11-15T23:59:59')]);
    expect(both('this-month')).toEqual([paris('2026-11-01T00:00:00'), paris('2026-11-30T23:59:59')]);
    expect(both('last-month')).toEqual([paris('2026-10-01T00:00:00'), paris('2026-10-31T23:59:59')]);
    expect(both('month-to-date')).toEqual([paris('2026-11-01T00:00:00'), paris('2026-11-21T23:59:59')]);
    expect(both('-1w')).toEqual(both('last-week'));
    expect(both('-0w')).toEqual(both('this-week'));
    expect(both('-2w')).toEqual([paris('2026-11-02T00:00:00'), paris('2026-11-08T23:59:59')]);
    expect(both('-1m')).toEqual(both('last-month'));
    expect(both('-11m')).toEqual([paris('2025-12-01T00:00:00'), paris('2025-12-31T23:59:59')]);
    expect(both('LAST-MONTH')).toEqual(both('last-month'));
    // the month of the autumn change holds an hour more; a week across it, too
    const [since, until] = both('last-month');
    expect((until as number) - (since as number) + 1).toBe(31 * 86_400 + 3600);
    const afterChange = at('2026-10-27T10:00:00Z'); // Tuesday
    const [weekSince, weekUntil] = both('last-week', afterChange);
    expect((weekUntil as number) - (weekSince as number) + 1).toBe(7 * 86_400 + 3600);
    // Monday 00:30 in Paris is still Sunday in UTC: this week starts that Monday
    expect(parseTime('this-week', 'since', at('2026-11-22T23:30:00Z'))).toBe(paris('2026-11-23T00:00:00'));
    // January's last month is December of the year before
    expect(both('last-month', at('2027-01-15T12:00:00Z'))).toEqual([paris('2026-12-01T00:00:00'), paris('2026-12-31T23:59:59')]);
  });

  it('reads Paris wall times, with or without seconds, and ISO instants with offsets', () => {
    expect(parseTime('2026-11-01T08:30', 'since', NOW)).toBe(paris('2026-11-01T08:30:00'));
    expect(parseTime('2026-07-01 08:30:15', 'since', NOW)).toBe(Date.parse('2026-07-01T06:30:15Z') / 1000);
    expect(parseTime('2026-11-01T08:30:00Z', 'since', NOW)).toBe(Date.parse('2026-11-01T08:30:00Z') / 1000);
    expect(parseTime('2026-11-01T08:30:00+05:00', 'since', NOW)).toBe(Date.parse('2026-11-01T03:30:00Z') / 1000);
    // the repeated hour of the autumn change: the first one (+02:00), unless an offset says otherwise
    expect(parseTime('2026-10-25T02:30', 'since', NOW)).toBe(Date.parse('2026-10-25T00:30:00Z') / 1000);
    expect(parseTime('2026-10-25T02:30:00+01:00', 'since', NOW)).toBe(Date.parse('2026-10-25T01:30:00Z') / 1000);
  });

  it.each([
    ['1793487600000', /milliseconds/],
    ['20261101', /ambiguous; write the date as 2026-11-01/],
    ['2026-03-29T02:30', /does not exist in Paris/],
    ['next tuesday', /not a time this tool understands$/],
    ['2026-13-01', /not a calendar date/],
    // the other ways people write a day, answered with the way this tool reads it
    ['25/11/2026', /understands; did you mean 2026-11-25\?$/],
    ['11/25/2026', /understands; did you mean 2026-11-25\?$/],
    ['03/04/2026', /understands; did you mean 2026-04-03 \(day\/month\) or 2026-03-04 \(month\/day\)\?$/],
    ['25.11.2026', /understands; did you mean 2026-11-25\?$/],
    ['2026/11/25', /understands; did you mean 2026-11-25\?$/],
    ['2026-11-1', /understands; did you mean 2026-11-01\?$/],
    ['2026-2-30', /understands$/],
    ['31/02/2026', /understands$/],
    ['last week', /understands; did you mean last-week\?$/],
    ['previous_month', /understands; did you mean last-month\?$/],
    ['this month', /understands; did you mean this-month\?$/],
    ['lastweek', /understands; did you mean last-week\?$/],
    ['a week ago', /understands; did you mean last-week \(or -7d\)\?$/],
    ['mtd', /understands; did you mean month-to-date\?$/],
    ['2 weeks ago', /understands; did you mean -2w\?$/],
    ['3 months', /understands; did you mean -3m\?$/],
    ['this-weak', /understands; did you mean this-week\?$/],
    ['-5201w', /more than 5200 weeks/],
    ['7d', /understands; did you mean -7d\?$/],
    ['-7', /understands; did you mean -7d\?$/],
    ['3 days ago', /understands; did you mean -3d\?$/],
    ['yesterdya', /understands; did you mean yesterday\?$/],
    ['', /not a time/],
  ])('refuses %j with a usage error that says what is expected', (input, message) => {
    try {
      parseTime(input, 'since', NOW);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).message).toMatch(message);
      expect((error as UsageError).hint).toMatch(/accepted: Unix seconds, 2026-11-01/);
    }
  });

  it('refuses offsets no clock uses and hour 24, instead of moving the period', () => {
    for (const [text, message] of [
      ['2026-11-01T08:30:00+25:00', /has an offset no clock uses/],
      ['2026-11-01T08:30:00+99:99', /has an offset no clock uses/],
      ['2026-11-01T24:00', /is not a valid date and time/],
      ['2026-11-01T08:60', /is not a valid date and time/],
    ] as const) {
      expect(() => parseTime(text, 'since', NOW), text).toThrow(message);
    }
    expect(parseTime('2026-11-01T08:30:00+14:00', 'since', NOW)).toBe(Date.parse('2026-10-31T18:30:00Z') / 1000);
    expect(parseTime('2026-11-01T08:30:00-12:00', 'since', NOW)).toBe(Date.parse('2026-11-01T20:30:00Z') / 1000);
  });
});

