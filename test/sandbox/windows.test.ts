// Data consistent across windows: any split of a period into windows, each its own report, sums to
// the report of the whole period, row key by row key, for every time breakdown, DST days included.

import fc from 'fast-check';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { fetchReport } from '../helpers/http.js';

const paris = (iso: string) => DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toSeconds();

/** Odd, second-level edges; each period crosses a DST change and a month end. */
const PERIODS = {
  autumn: { since: paris('2026-10-22T10:17:03'), until: paris('2026-11-02T07:45:58') },
  spring: { since: paris('2026-03-27T13:00:01'), until: paris('2026-04-01T00:00:00') },
};
/** Inside the repeated hour of 2026-10-25: 02:30 in summer time, then 02:30 in winter time. */
const REPEATED_HOUR = [
  DateTime.fromISO('2026-10-25T02:30:00+02:00').toSeconds(),
  DateTime.fromISO('2026-10-25T02:30:00+01:00').toSeconds(),
];
const TIME_BREAKDOWNS = [['HOURLY'], ['DAILY'], ['MONTHLY'], ['RANGE'], []];
const REVENUE = new Set(['revenueEuro', 'valueDollar']);

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 0 });
});
afterAll(() => sandbox.close());

type Totals = Map<string, Record<string, bigint>>;

/** Sums rows by everything that is not a metric; revenue is summed exactly, in billionths. */
function totalsOf(rows: Record<string, unknown>[]): Totals {
  const totals: Totals = new Map();
  for (const row of rows) {
    const key = JSON.stringify(Object.entries(row).filter(([, value]) => typeof value !== 'number'));
    const sums = totals.get(key) ?? {};
    for (const [name, value] of Object.entries(row)) {
      if (typeof value !== 'number') continue;
      const exact = REVENUE.has(name) ? BigInt(value.toFixed(9).replace('.', '')) : BigInt(value);
      sums[name] = (sums[name] ?? 0n) + exact;
    }
    totals.set(key, sums);
  }
  return totals;
}

const sorted = (totals: Totals) => [...totals.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

async function report(since: number, until: number, breakdowns: string[]) {
  const { data } = await fetchReport(sandbox, 'buyer', {
    since, until, breakdowns: [...breakdowns, 'COUNTRY', 'CAMPAIGN'], metrics: 'displays,clicks,leads,revenueEuro,revenueDollar',
  });
  return data;
}

/** Windows [since, c1 - 1], [c1, c2 - 1], ..., [ck, until]: the API's `until` is inclusive. */
async function windowed(since: number, until: number, cuts: number[], breakdowns: string[]) {
  const edges = [since, ...[...new Set(cuts)].sort((a, b) => a - b), until + 1];
  const rows = [];
  for (let i = 0; i + 1 < edges.length; i++) rows.push(...await report(edges[i]!, edges[i + 1]! - 1, breakdowns));
  return rows;
}

describe('windows add up to the whole period', () => {
  for (const [name, period] of Object.entries(PERIODS)) {
    for (const breakdowns of TIME_BREAKDOWNS) {
      it(`${name}, ${breakdowns[0] ?? 'no time breakdown'}: any split sums to the whole, row key by row key`, async () => {
        const whole = await report(period.since, period.until, breakdowns);
        expect(whole.length).toBeGreaterThan(0);
        const expected = sorted(totalsOf(whole));
        const cut = fc.integer({ min: period.since + 1, max: period.until });
        await fc.assert(fc.asyncProperty(fc.uniqueArray(cut, { minLength: 1, maxLength: 5 }), async (cuts) => {
          expect(sorted(totalsOf(await windowed(period.since, period.until, cuts, breakdowns)))).toEqual(expected);
        }), { numRuns: 6 });
      });
    }
  }

  it.each(TIME_BREAKDOWNS.map((breakdowns) => [breakdowns.join(',') || 'no time breakdown', breakdowns] as const))('cuts at midnight, at the month end and inside the repeated hour of the DST day (%s)', async (_label, breakdowns) => {
    const { since, until } = PERIODS.autumn;
    const cuts = [paris('2026-10-25T00:00:00'), ...REPEATED_HOUR, paris('2026-10-26T00:00:00'), paris('2026-11-01T00:00:00')];
    const whole = totalsOf(await report(since, until, breakdowns));
    const parts = await windowed(since, until, cuts, breakdowns);
    expect(sorted(totalsOf(parts))).toEqual(sorted(whole));
    if (breakdowns[0] === 'HOURLY') {
      // the two 02:00 hours stay two rows, each split across the windows that cut it
      const twoAm = parts.filter((row) => String(row.date).startsWith('2026-10-25T02:00:00'));
      expect(new Set(twoAm.map((row) => row.date))).toEqual(new Set(['2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00']));
    }
  });
});
