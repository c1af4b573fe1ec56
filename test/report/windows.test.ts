import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { parseTime } from '../../src/report/time.js';
import {
  checkChunk, checkDistinctTargets, describeWindow, parseChunk, planWindows, splitWindow, windowArgs,
  type Window,
} from '../../src/report/windows.js';

const NOW = Date.parse('2026-11-21T11:00:00Z');
/** the since/until the CLI sends for these dates */
const since = (text: string) => parseTime(text, 'since', NOW);
const until = (text: string) => parseTime(text, 'until', NOW);
const paris = (iso: string) => DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toSeconds();
const plan = (from: string, to: string, chunk: string) => planWindows(since(from), until(to), parseChunk(chunk));
const labels = (windows: Window[]) => windows.map(describeWindow);
const hours = (window: Window) => (window.until - window.since + 1) / 3600;

/** windows cover since..until exactly, without gaps or overlaps, in order */
function expectTiling(windows: Window[], from: number, to: number): void {
  expect(windows[0]?.since).toBe(from);
  expect(windows[windows.length - 1]?.until).toBe(to);
  for (let i = 1; i < windows.length; i++) expect(windows[i]?.since).toBe((windows[i - 1]?.until ?? 0) + 1);
}

describe('--chunk values', () => {
  it('reads day, week, month, Nd and Nh, case-insensitively', () => {
    expect(parseChunk('day')).toEqual({ unit: 'day', count: 1 });
    expect(parseChunk('Week')).toEqual({ unit: 'week' });
    expect(parseChunk('month')).toEqual({ unit: 'month' });
    expect(parseChunk('7d')).toEqual({ unit: 'day', count: 7 });
    expect(parseChunk('6h')).toEqual({ unit: 'hour', count: 6 });
  });

  it('refuses anything else with a usage error that lists the forms and suggests a word', () => {
    const error = (text: string) => {
      try {
        parseChunk(text);
      } catch (caught) {
        return caught as UsageError;
      }
      throw new Error(`${text} was accepted`);
    };
    expect(error('days')).toBeInstanceOf(UsageError);
    expect(error('days').message).toContain('did you mean day?');
    expect(error('mnth').message).toContain('did you mean month?');
    expect(error('0d').message).toContain('between 1 and 9999');
    expect(error('7m').hint).toContain('Nd (N days');
    expect(error('').exitCode).toBe(2);
  });
});

describe('windows on the Paris calendar', () => {
  it('one window per day, the DST days being 23 and 25 hours long', () => {
    const spring = plan('2026-03-28', '2026-03-30', 'day');
    expect(labels(spring)).toEqual(['2026-03-28', '2026-03-29', '2026-03-30']);
    expect(spring.map(hours)).toEqual([24, 23, 24]);
    const autumn = plan('2026-10-24', '2026-10-26', 'day');
    expect(autumn.map(hours)).toEqual([24, 25, 24]);
    expect(autumn[1]).toEqual({ since: paris('2026-10-25T00:00:00'), until: paris('2026-10-25T23:59:59') });
    expectTiling(autumn, since('2026-10-24'), until('2026-10-26'));
  });

  it('weeks run Monday to Sunday, the first and last clipped', () => {
    // 2026-11-04 is a Wednesday, 2026-11-20 a Friday
    const weeks = plan('2026-11-04', '2026-11-20', 'week');
    expect(labels(weeks)).toEqual(['2026-11-04..2026-11-08', '2026-11-09..2026-11-15', '2026-11-16..2026-11-20']);
    expectTiling(weeks, since('2026-11-04'), until('2026-11-20'));
  });

  it('a week across the autumn change is 7 days and 169 hours', () => {
    const [week] = plan('2026-10-19', '2026-10-25', 'week');
    expect(week && hours(week)).toBe(169);
  });

  it('months are calendar months, the leap day included', () => {
    const months = plan('2028-01-15', '2028-04-10', 'month');
    expect(labels(months)).toEqual(['2028-01-15..2028-01-31', '2028-02-01..2028-02-29', '2028-03-01..2028-03-31', '2028-04-01..2028-04-10']);
    expect(months[1] && hours(months[1])).toBe(29 * 24);
    expect(months[2] && hours(months[2])).toBe(31 * 24 - 1); // March 2028 has the spring change
    expectTiling(months, since('2028-01-15'), until('2028-04-10'));
  });

  it('Nd windows count from the first day, the last one shorter', () => {
    expect(labels(plan('2028-02-25', '2028-03-05', '3d'))).toEqual([
      '2028-02-25..2028-02-27', '2028-02-28..2028-03-01', '2028-03-02..2028-03-04', '2028-03-05',
    ]);
  });

  it('Nh windows are elapsed hours: the spring DST day is 23 one-hour windows, the autumn one 25', () => {
    const spring = plan('2026-03-29', '2026-03-29', '1h');
    expect(spring).toHaveLength(23);
    expect(spring.every((window) => hours(window) === 1)).toBe(true);
    const autumn = plan('2026-10-25', '2026-10-25', '1h');
    expect(autumn).toHaveLength(25);
    // the repeated hour stays two windows, told apart by their offset
    expect(describeWindow(autumn[2] as Window)).toBe('2026-10-25T02:00:00+02:00..2026-10-25T02:59:59+02:00');
    expect(describeWindow(autumn[3] as Window)).toBe('2026-10-25T02:00:00+01:00..2026-10-25T02:59:59+01:00');
    expect(plan('2026-10-25', '2026-10-25', '6h').map(hours)).toEqual([6, 6, 6, 6, 1]);
  });

  it('clips windows to a since/until that are not whole days', () => {
    const from = paris('2026-11-01T08:30:00');
    const to = paris('2026-11-03T12:00:00');
    const days = planWindows(from, to, parseChunk('day'));
    expect(days).toHaveLength(3);
    expect(days[0]).toEqual({ since: from, until: paris('2026-11-01T23:59:59') });
    expect(days[2]).toEqual({ since: paris('2026-11-03T00:00:00'), until: to });
    const sixHours = planWindows(from, to, parseChunk('6h'));
    expect(sixHours[0]).toEqual({ since: from, until: paris('2026-11-01T13:59:59') });
    expectTiling(sixHours, from, to);
  });

  it('a period shorter than the chunk is one window, the period itself', () => {
    expect(planWindows(since('2026-11-05'), until('2026-11-05'), parseChunk('month'))).toEqual([
      { since: since('2026-11-05'), until: until('2026-11-05') },
    ]);
  });

  it('refuses absurd window counts', () => {
    expect(() => plan('2020-01-01', '2026-01-01', '1h')).toThrow(/more than 10000 windows/);
  });
});

describe('time breakdowns and chunk sizes: a window never cuts a bucket', () => {
  const chunks = ['day', 'week', 'month', '3d', '1h', '6h', '24h'];
  const fits: Record<string, string[]> = {
    DAILY: ['day', 'week', 'month', '3d'],
    HOURLY: chunks,
    MONTHLY: ['month'],
    RANGE: chunks,
    NONE: chunks,
  };
  /** the time bucket a second falls in */
  const bucket: Record<string, (seconds: number) => string> = {
    DAILY: (s) => DateTime.fromSeconds(s, { zone: 'Europe/Paris' }).toISODate() ?? '',
    HOURLY: (s) => String(Math.floor(s / 3600)),
    MONTHLY: (s) => DateTime.fromSeconds(s, { zone: 'Europe/Paris' }).toFormat('yyyy-MM'),
  };

  for (const [time, accepted] of Object.entries(fits)) {
    for (const chunk of chunks) {
      const breakdowns = time === 'NONE' ? ['COUNTRY'] : [time, 'COUNTRY'];
      if (accepted.includes(chunk)) {
        it(`${time} with --chunk ${chunk} is accepted, and no window boundary cuts a bucket`, () => {
          expect(() => checkChunk(parseChunk(chunk), breakdowns)).not.toThrow();
          const of = bucket[time];
          if (!of) return;
          // across both DST changes and a leap day, with clipped edges
          for (const [from, to] of [['2026-03-20T05:00', '2026-04-02'], ['2026-10-20', '2026-11-03T07:30'], ['2028-02-20', '2028-03-03']] as const) {
            const windows = planWindows(since(from), until(to), parseChunk(chunk));
            for (let i = 1; i < windows.length; i++) {
              expect(of((windows[i] as Window).since)).not.toBe(of((windows[i - 1] as Window).until));
            }
          }
        });
      } else {
        it(`${time} with --chunk ${chunk} is refused, and the error says which --chunk fits`, () => {
          let error: unknown;
          try {
            checkChunk(parseChunk(chunk), breakdowns);
          } catch (caught) {
            error = caught;
          }
          expect(error).toBeInstanceOf(UsageError);
          expect((error as UsageError).message).toContain(`would cut ${time}`);
          expect((error as UsageError).hint).toContain(time === 'MONTHLY' ? '--chunk month' : '--chunk day');
        });
      }
    }
  }
});

describe('bisection', () => {
  it('halves on a day boundary, down to one day', () => {
    const month: Window = { since: since('2026-03-01'), until: until('2026-03-31') };
    const [first, second] = splitWindow(month, ['DAILY']) ?? [];
    expect(labels([first as Window, second as Window])).toEqual(['2026-03-01..2026-03-16', '2026-03-17..2026-03-31']);
    const dst: Window = { since: since('2026-03-29'), until: until('2026-03-30') };
    expect(labels(splitWindow(dst, []) ?? [])).toEqual(['2026-03-29', '2026-03-30']);
    expect(splitWindow({ since: since('2026-03-29'), until: until('2026-03-29') }, ['RANGE'])).toBeUndefined();
    // a clipped piece of one day is one day too
    expect(splitWindow({ since: paris('2026-03-29T08:00:00'), until: until('2026-03-29') }, [])).toBeUndefined();
  });

  it('with HOURLY, halves on a whole hour, down to one hour, the DST day included', () => {
    const day: Window = { since: since('2026-10-25'), until: until('2026-10-25') };
    const halves = splitWindow(day, ['HOURLY', 'COUNTRY']);
    expect(halves?.map(hours)).toEqual([13, 12]);
    let window: Window = day;
    let splits = 0;
    for (let next = splitWindow(window, ['HOURLY']); next; next = splitWindow(window, ['HOURLY'])) {
      window = next[0];
      splits++;
    }
    expect(hours(window)).toBe(1);
    expect(splits).toBe(5); // 25 -> 13 -> 7 -> 4 -> 2 -> 1
  });

  it('repeated halving tiles the original window exactly', () => {
    const original: Window = { since: paris('2028-02-10T09:15:00'), until: until('2028-03-05') };
    const pieces: Window[] = [];
    const queue = [original];
    while (queue.length > 0) {
      const window = queue.shift() as Window;
      const halves = splitWindow(window, []);
      if (halves) queue.unshift(...halves);
      else pieces.push(window);
    }
    expect(pieces).toHaveLength(25);
    expectTiling(pieces, original.since, original.until);
  });
});

describe('helpers for the run command', () => {
  it('windowArgs gives dates for whole days and seconds otherwise', () => {
    expect(windowArgs({ since: since('2026-03-29'), until: until('2026-03-30') })).toEqual({ since: '2026-03-29', until: '2026-03-30' });
    expect(windowArgs({ since: 1793487600, until: 1793491199 })).toEqual({ since: '1793487600', until: '1793491199' });
  });

  it('refuses per-window files that two windows would share', () => {
    const date = (window: Window) => DateTime.fromSeconds(window.since, { zone: 'Europe/Paris' }).toISODate() ?? '';
    expect(() => checkDistinctTargets(plan('2026-11-01', '2026-11-03', 'day'), (w) => `out-${date(w)}.csv`)).not.toThrow();
    expect(() => checkDistinctTargets(plan('2026-11-01', '2026-11-01', '6h'), (w) => `out-${date(w)}.csv`)).toThrow(/both be written to out-2026-11-01.csv/);
  });
});
