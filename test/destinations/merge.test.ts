import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { UnexpectedResponseError, UsageError } from '../../src/errors.js';
import { Kind, type RowHandler } from '../../src/export/scanner.js';
import { CsvWriter } from '../../src/export/writers.js';
import { DEFAULT_METRICS } from '../../src/report/catalog.js';
import type { Summary } from '../../src/api/schemas.js';
import { RowSummer, WindowMerger, mergePlan, rowJson } from '../../src/destinations/merge.js';
import { parseChunk, planWindows, splitWindow, type Window } from '../../src/report/windows.js';
import { METRIC_FIELDS, byKey, collector, period, reportText, scan, type Query } from '../helpers/rows.js';

/** What a chunked run writes: each window downloaded and fed to the merger, in order. */
function mergedRun(query: Query, windows: { window: Window; origin?: Window }[], out: RowHandler = collector()): { out: RowHandler; summary?: Summary } {
  const merger = new WindowMerger(mergePlan(query.side, query.metrics, query.breakdowns, { split: true }), out);
  for (const { window, origin } of windows) {
    const summary = scan(reportText(query, window), merger.begin(window, origin ?? window));
    merger.end(window, summary);
  }
  merger.finish();
  return { out, summary: merger.summary() };
}

const chunked = (whole: Window, chunk: string) => planWindows(whole.since, whole.until, parseChunk(chunk)).map((window) => ({ window }));

describe('RANGE and untimed reports: windows summed equal one report over the whole period', () => {
  const cases: [string, Query, string][] = [
    ['RANGE by campaign and country, daily windows across the autumn change', { side: 'buyer', metrics: [...DEFAULT_METRICS.buyer], breakdowns: ['RANGE', 'CAMPAIGN', 'COUNTRY'] }, 'day'],
    ['no time breakdown, by app, weekly windows', { side: 'seller', metrics: [...DEFAULT_METRICS.seller], breakdowns: ['APP', 'OS'] }, 'week'],
    ['no breakdown at all: one row of totals, 4-day windows', { side: 'buyer', metrics: ['displays', 'revenueEuro', 'revenueDollar'], breakdowns: [] }, '4d'],
  ];
  for (const [name, query, chunk] of cases) {
    it(name, () => {
      const whole = period('2026-10-20', '2026-11-03');
      const single = collector();
      const singleSummary = scan(reportText(query, whole), single);
      const windows = chunked(whole, chunk);
      expect(windows.length).toBeGreaterThanOrEqual(3);
      const { out, summary } = mergedRun(query, windows);
      const merged = (out as ReturnType<typeof collector>).rows;
      expect(merged.length).toBe(single.rows.length);
      // exact texts: revenue sums like 1234.567891234 are written as one report writes them
      expect(byKey(merged, METRIC_FIELDS)).toEqual(byKey(single.rows, METRIC_FIELDS));
      expect(summary).toEqual(singleSummary);
      // the rows are valid JSON objects with the fields in the server's order
      expect(JSON.parse(merged[0]?.raw ?? '')).toEqual(JSON.parse(single.rows.find((row) => row.values.join() === merged[0]?.values.join())?.raw ?? 'null'));
    });
  }

  it('with one window the merge is the report itself, row for row, texts included', () => {
    const query: Query = { side: 'buyer', metrics: ['displays', 'clicks', 'revenueEuro'], breakdowns: ['RANGE', 'COUNTRY'] };
    const whole = period('2026-11-01', '2026-11-02');
    const single = collector();
    scan(reportText(query, whole), single);
    const merged = (mergedRun(query, [{ window: whole }]).out as ReturnType<typeof collector>).rows;
    expect(merged.map((row) => row.raw)).toEqual(single.rows.map((row) => row.raw));
  });

  it('goes through the CSV writer like a single report, and csv-parse reads the same table', () => {
    const query: Query = { side: 'buyer', metrics: [...DEFAULT_METRICS.buyer], breakdowns: ['RANGE', 'COUNTRY', 'OS'] };
    const whole = period('2026-03-27', '2026-03-31');
    const csv = (run: (writer: CsvWriter) => void) => {
      const writer = new CsvWriter({ delimiter: ',', bom: false, excel: false }, false);
      run(writer);
      return parse(writer.finish(), { columns: true }) as Record<string, string>[];
    };
    const single = csv((writer) => scan(reportText(query, whole), writer));
    const merged = csv((writer) => mergedRun(query, chunked(whole, 'day'), writer));
    const sort = (rows: Record<string, string>[]) => [...rows].sort((a, b) => (`${a.country}${a.os}` < `${b.country}${b.os}` ? -1 : 1));
    expect(sort(merged)).toEqual(sort(single));
    expect(merged.length).toBeGreaterThan(5);
  });
});

describe('DAILY and HOURLY: the windows\' rows one after the other', () => {
  for (const [time, chunk] of [['DAILY', 'day'], ['DAILY', 'week'], ['HOURLY', '6h'], ['HOURLY', 'day']] as const) {
    it(`${time} by country with --chunk ${chunk}, across both DST days, equals one report byte for byte`, () => {
      const query: Query = { side: 'buyer', metrics: ['displays', 'revenueEuro'], breakdowns: [time, 'COUNTRY'] };
      for (const whole of [period('2026-03-28', '2026-03-30'), period('2026-10-24', '2026-10-26')]) {
        const single = collector();
        scan(reportText(query, whole), single);
        const merged = (mergedRun(query, chunked(whole, chunk)).out as ReturnType<typeof collector>).rows;
        expect(merged.map((row) => row.raw)).toEqual(single.rows.map((row) => row.raw));
      }
    });
  }

  it('passes rows straight through: nothing is held', () => {
    const out = collector();
    const merger = new WindowMerger({ mode: 'concat', time: 'DAILY' }, out);
    const window = period('2026-11-01', '2026-11-01');
    expect(merger.begin(window)).toBe(out);
  });

  it('refuses windows out of chronological order', () => {
    const merger = new WindowMerger({ mode: 'concat', time: 'DAILY' }, collector());
    merger.begin(period('2026-11-02', '2026-11-02'));
    expect(() => merger.begin(period('2026-11-01', '2026-11-01'))).toThrow(/out of order/);
  });
});

describe('MONTHLY: a split month is summed back into one row per key', () => {
  it('equals one report when October was halved twice and November was not', () => {
    const query: Query = { side: 'buyer', metrics: [...DEFAULT_METRICS.buyer], breakdowns: ['MONTHLY', 'CAMPAIGN'] };
    const whole = period('2026-10-10', '2026-11-05');
    const [october, november] = planWindows(whole.since, whole.until, parseChunk('month')) as [Window, Window];
    const [first, second] = splitWindow(october, query.breakdowns) as [Window, Window];
    const [third, fourth] = splitWindow(second, query.breakdowns) as [Window, Window];
    const single = collector();
    scan(reportText(query, whole), single);
    const merged = (mergedRun(query, [
      { window: first, origin: october }, { window: third, origin: october }, { window: fourth, origin: october },
      { window: november },
    ]).out as ReturnType<typeof collector>).rows;
    expect(byKey(merged, METRIC_FIELDS)).toEqual(byKey(single.rows, METRIC_FIELDS));
    // October's rows all come before November's
    const months = merged.map((row) => row.values[row.keys.indexOf('date')]);
    expect(months.lastIndexOf('2026-10')).toBeLessThan(months.indexOf('2026-11'));
  });
});

describe('what cannot be merged', () => {
  it('refuses up front to sum a metric it does not know to be additive (--no-validate)', () => {
    const error = (() => {
      try {
        mergePlan('buyer', ['displays', 'ctr'], ['RANGE', 'COUNTRY'], { split: true });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toContain('"ctr" is a metric this tool does not know to be additive');
    expect((error as UsageError).hint).toContain('run without --chunk');
    // with DAILY the rows are not summed: any metric is fine
    expect(mergePlan('buyer', ['ctr'], ['DAILY'], { split: true })).toEqual({ mode: 'concat', time: 'DAILY' });
    // MONTHLY sums only when a month is split
    expect(() => mergePlan('buyer', ['ctr'], ['MONTHLY'], { split: true })).toThrow(expect.objectContaining({ hint: expect.stringContaining('--no-split') }));
    expect(mergePlan('buyer', ['ctr'], ['MONTHLY'], { split: false }).mode).toBe('concat');
    expect(mergePlan('seller', ['eyesTrackings', 'revenueDollar'], [], { split: true })).toEqual({ mode: 'sum' });
  });

  it('fails on a number field the contract does not name, rather than treating it as a dimension', () => {
    const summer = new RowSummer();
    expect(() => scan('{"data":[{"country":"FR","ctr":0.5,"displays":3}]}', summer)).toThrow(UnexpectedResponseError);
    expect(() => scan('{"data":[{"country":"FR","displays":"3"}]}', new RowSummer())).toThrow(/holds the text "3"/);
  });
});

describe('the summer', () => {
  it('keys on dimension values whatever the field order, null apart from "", unknown text fields as dimensions', () => {
    const summer = new RowSummer();
    scan(`{"data":[
      {"country":"FR","os":null,"tier":"gold","displays":1,"revenueEuro":0.1},
      {"os":null,"revenueEuro":0.2,"country":"FR","tier":"gold","displays":2},
      {"country":"FR","os":"","tier":"gold","displays":5,"revenueEuro":null},
      {"country":"FR","os":null,"tier":"silver","displays":7}
    ]}`, summer);
    const out = collector();
    expect(summer.flush(out)).toBe(3);
    expect(out.rows.map((row) => JSON.parse(row.raw))).toEqual([
      { country: 'FR', os: null, tier: 'gold', displays: 3, revenueEuro: 0.3 },
      { country: 'FR', os: '', tier: 'gold', displays: 5, revenueEuro: null },
      { country: 'FR', os: null, tier: 'silver', displays: 7 },
    ]);
    expect(out.rows[0]?.raw).toBe('{"country":"FR","os":null,"tier":"gold","displays":3,"revenueEuro":0.3}');
    expect(summer.size).toBe(0);
  });

  it('a metric field that appears only in a later window is added to the row', () => {
    const summer = new RowSummer();
    scan('{"data":[{"country":"FR","displays":1}]}', summer);
    scan('{"data":[{"country":"FR","displays":2,"clicks":4}]}', summer);
    const out = collector();
    summer.flush(out);
    expect(out.rows[0]?.raw).toBe('{"country":"FR","displays":3,"clicks":4}');
  });

  it('holds one entry per distinct key, not per row: 60 windows of the same 40 keys', () => {
    const summer = new RowSummer();
    const body = JSON.stringify({ data: Array.from({ length: 40 }, (_, i) => ({ country: `C${i}`, displays: i, revenueEuro: 0.01 })) });
    for (let w = 0; w < 60; w++) scan(body, summer);
    expect(summer.rows).toBe(2400);
    expect(summer.size).toBe(40);
    const out = collector();
    summer.flush(out);
    expect(JSON.parse(out.rows[39]?.raw ?? '')).toEqual({ country: 'C39', displays: 39 * 60, revenueEuro: 0.6 });
  });

  it('rowJson writes strings escaped, nulls, numbers and nested values as JSON', () => {
    expect(rowJson(['a', 'b', 'c', 'd', 'e'], ['x"y\n', '', '1e3', 'true', '[1,2]'], [Kind.String, Kind.Null, Kind.Number, Kind.Boolean, Kind.Json]))
      .toBe('{"a":"x\\"y\\n","b":null,"c":1e3,"d":true,"e":[1,2]}');
  });
});

describe('a key is its values and their kinds (issue 34, a surviving mutant)', () => {
  it('the text "1" and the number 1 of one dimension are two rows, never summed together', () => {
    const query: Query = { side: 'buyer', metrics: ['displays'], breakdowns: ['CAMPAIGN'] };
    const whole = period('2026-11-01', '2026-11-02');
    const [first, second] = chunked(whole, 'day').map(({ window }) => window) as [Window, Window];
    const text = (campaignId: string) => `{"data":[{"campaignId":${campaignId},"displays":5}],"summary":{"displays":5}}`;
    const out = collector();
    const merger = new WindowMerger(mergePlan(query.side, query.metrics, query.breakdowns, { split: true }), out);
    merger.end(first, scan(text('"1"'), merger.begin(first, first)));
    merger.end(second, scan(text('1'), merger.begin(second, second)));
    merger.finish();
    expect(out.rows.map((row) => JSON.parse(row.raw) as unknown)).toEqual([{ campaignId: '1', displays: 5 }, { campaignId: 1, displays: 5 }]);
  });
});
