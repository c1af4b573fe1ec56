import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROW_FIELDS } from '../../src/report/catalog.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { call, fetchReport, withSandbox } from '../helpers/http.js';

const NOV_1 = 1793487600; // 2026-11-01T00:00:00+01:00
const NOV_20_END = 1795215599; // 2026-11-20T23:59:59+01:00
const SPRING_DAY = [1774738800, 1774821599]; // 2026-03-29, 23 hours
const AUTUMN_DAY = [1792879200, 1792969199]; // 2026-10-25, 25 hours

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 10 });
});
afterAll(() => sandbox.close());

const sum = (rows: Record<string, unknown>[], field: string) =>
  rows.reduce((total, row) => total + (row[field] as number), 0);

describe('row shape', () => {
  it('buyer rows carry exactly the contract\'s fields, `date` first, and only the metrics asked for', async () => {
    const { data } = await fetchReport(sandbox, 'buyer', {
      since: NOV_1, until: NOV_20_END, metrics: 'displays,revenueDollar', breakdowns: ['DAILY', 'CAMPAIGN'],
    });
    const dimensionFields = ROW_FIELDS.buyer.filter((field) => field.type !== 'number').map((field) => field.name);
    expect(Object.keys(data[0]!)).toEqual(['date', ...dimensionFields, 'displays', 'valueDollar']);
    expect(data[0]!.campaignName).toEqual(expect.any(String));
    expect(data[0]!.campaignName).not.toBe('');
    // a dimension that was not asked for: null where the contract allows it, else an empty string
    expect(data[0]!.country).toBeNull();
    expect(data[0]!.advertiser).toBe('');
  });

  it('seller rows carry the seller fields; eyesTrackings is accepted for the seller too', async () => {
    const { data } = await fetchReport(sandbox, 'seller', {
      since: NOV_1, until: NOV_20_END, metrics: 'requests,eyesTrackings', breakdowns: ['RANGE', 'APP', 'ZONE'],
    });
    const dimensionFields = ROW_FIELDS.seller.filter((field) => field.type !== 'number').map((field) => field.name);
    expect(Object.keys(data[0]!)).toEqual([...dimensionFields, 'eyesTrackings', 'requests']);
    expect(data.every((row) => typeof row.zoneHash === 'string' && row.zoneHash !== '')).toBe(true);
  });

  it('omitting metrics gives every metric of the side', async () => {
    const { data } = await fetchReport(sandbox, 'seller', { since: NOV_1, until: NOV_20_END });
    expect(data).toHaveLength(1);
    for (const field of ['requests', 'displays', 'clicks', 'downloads', 'leads', 'landings', 'revenueEuro', 'valueDollar']) {
      expect(data[0]![field]).toEqual(expect.any(Number));
    }
    expect(data[0]).not.toHaveProperty('eyesTrackings');
  });

  it('uses believable, tricky values: accents, quotes, commas, emoji, line breaks, nulls', async () => {
    const { data } = await fetchReport(sandbox, 'buyer', {
      since: NOV_1, until: NOV_20_END, breakdowns: ['CAMPAIGN', 'ADVERTISER', 'ADUNIT', 'CITY'],
    });
    const text = JSON.stringify(data);
    expect(text).toMatch(/[éèÎô]/);
    const strings = data.flatMap((row) => Object.values(row).filter((value): value is string => typeof value === 'string'));
    expect(strings.some((value) => value.includes('"'))).toBe(true);
    expect(strings.some((value) => value.includes(','))).toBe(true);
    expect(strings.some((value) => /\p{Extended_Pictographic}/u.test(value))).toBe(true);
    expect(data.some((row) => String(row.adName).includes('\n'))).toBe(true);
    expect(data.some((row) => row.city === null)).toBe(true);
  });
});

describe('time buckets in Europe/Paris', () => {
  it('a HOURLY report of 2026-03-29 has 23 hours', async () => {
    const { data } = await fetchReport(sandbox, 'buyer', { since: SPRING_DAY[0]!, until: SPRING_DAY[1]!, breakdowns: ['HOURLY'], metrics: 'displays' });
    expect(data.map((row) => row.date)).toHaveLength(23);
    expect(data[0]!.date).toBe('2026-03-29T00:00:00+01:00');
    expect(data[2]!.date).toBe('2026-03-29T03:00:00+02:00');
    expect(data[22]!.date).toBe('2026-03-29T23:00:00+02:00');
  });

  it('a HOURLY report of 2026-10-25 has 25 hours, the repeated 02:00 as two rows', async () => {
    const { data } = await fetchReport(sandbox, 'buyer', { since: AUTUMN_DAY[0]!, until: AUTUMN_DAY[1]!, breakdowns: ['HOURLY'], metrics: 'displays' });
    const dates = data.map((row) => row.date);
    expect(dates).toHaveLength(25);
    expect(dates.slice(1, 5)).toEqual([
      '2026-10-25T01:00:00+02:00', '2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00', '2026-10-25T03:00:00+01:00',
    ]);
  });

  it('DAILY and MONTHLY buckets are Paris dates; RANGE has no date field', async () => {
    const daily = await fetchReport(sandbox, 'buyer', { since: AUTUMN_DAY[0]!, until: NOV_20_END, breakdowns: ['DAILY'], metrics: 'displays' });
    expect(daily.data[0]!.date).toBe('2026-10-25');
    expect(daily.data.at(-1)!.date).toBe('2026-11-20');
    expect(daily.data).toHaveLength(27);
    const monthly = await fetchReport(sandbox, 'buyer', { since: AUTUMN_DAY[0]!, until: NOV_20_END, breakdowns: ['MONTHLY'], metrics: 'displays' });
    expect(monthly.data.map((row) => row.date)).toEqual(['2026-10', '2026-11']);
    const range = await fetchReport(sandbox, 'buyer', { since: AUTUMN_DAY[0]!, until: NOV_20_END, breakdowns: ['RANGE'], metrics: 'displays' });
    expect(range.data).toHaveLength(1);
    expect(range.data[0]).not.toHaveProperty('date');
  });

  it('summary since/until carry the Paris offset of each instant', async () => {
    const { summary } = await fetchReport(sandbox, 'buyer', { since: AUTUMN_DAY[0]!, until: AUTUMN_DAY[1]!, breakdowns: ['DAILY'] });
    expect(summary.since).toBe('2026-10-25T00:00:00+02:00');
    expect(summary.until).toBe('2026-10-25T23:59:59+01:00');
    expect(summary.breakdowns).toEqual(['DAILY']);
  });
});

describe('aggregation', () => {
  it('totals agree across breakdowns', async () => {
    const totals = [];
    for (const breakdowns of [[], ['RANGE'], ['DAILY', 'COUNTRY'], ['HOURLY', 'CITY', 'DEVICEMODEL'], ['MONTHLY', 'CAMPAIGN', 'ADUNIT']]) {
      const { data } = await fetchReport(sandbox, 'buyer', { since: NOV_1, until: NOV_20_END, breakdowns, metrics: 'displays,clicks,revenueEuro' });
      totals.push({ displays: sum(data, 'displays'), clicks: sum(data, 'clicks'), euros: Math.round(sum(data, 'revenueEuro') * 1e6) });
    }
    expect(totals[0]!.displays).toBeGreaterThan(0);
    for (const total of totals) expect(total).toEqual(totals[0]);
  });

  it('is additive to the second: [a, b] plus [b+1, c] equals [a, c]', async () => {
    const a = NOV_1 + 3 * 3600 + 17;
    const b = a + 5000;
    const c = b + 7777;
    const total = async (since: number, until: number) =>
      sum((await fetchReport(sandbox, 'buyer', { since, until, metrics: 'displays' })).data, 'displays');
    const [first, second, whole] = [await total(a, b), await total(b + 1, c), await total(a, c)];
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
    expect(first + second).toBe(whole);
  });

  it('applies filters: a country filter keeps only that country', async () => {
    const all = await fetchReport(sandbox, 'buyer', { since: NOV_1, until: NOV_20_END, breakdowns: ['COUNTRY'], metrics: 'displays' });
    const france = all.data.find((row) => row.country === 'France')!;
    const filtered = await fetchReport(sandbox, 'buyer', { since: NOV_1, until: NOV_20_END, breakdowns: ['COUNTRY'], metrics: 'displays', countryId: ['3017382'] });
    expect(filtered.data).toEqual([france]);
    const two = await fetchReport(sandbox, 'seller', { since: NOV_1, until: NOV_20_END, breakdowns: ['OS'], metrics: 'displays', osId: ['1'], carrier: ['Orange', 'AT&T'] });
    expect(two.data.map((row) => row.os)).toEqual(['iOS']);
  });

  it('gives the same data for form and JSON bodies', async () => {
    const fields = { since: NOV_1, until: NOV_20_END, breakdowns: ['DAILY', 'COUNTRY'], metrics: 'displays,clicks', countryId: ['3017382', '2921044'] };
    const form = await fetchReport(sandbox, 'buyer', fields, 'form');
    const json = await fetchReport(sandbox, 'buyer', fields, 'json');
    expect(form.data.length).toBeGreaterThan(20);
    expect(json).toEqual(form);
  });

  it('has data for any period, past or future', async () => {
    for (const [since, until] of [[946681200, 946767599], [2524604400, 2524690799]]) {
      const { data } = await fetchReport(sandbox, 'buyer', { since: since!, until: until!, breakdowns: ['CAMPAIGN'], metrics: 'displays' });
      expect(data.length).toBeGreaterThan(0);
    }
  });
});

describe('determinism', () => {
  const fields = { since: NOV_1, until: NOV_20_END, breakdowns: ['DAILY', 'APP'], metrics: 'displays,revenueEuro' };
  it('the same seed answers the same report, byte for byte, from another server', async () => {
    const here = await fetchReport(sandbox, 'seller', fields);
    const there = await withSandbox({ seed: 42 }, (other) => fetchReport(other, 'seller', fields));
    expect(JSON.stringify(there)).toBe(JSON.stringify(here));
    const reseeded = await withSandbox({ seed: 7 }, (other) => fetchReport(other, 'seller', fields));
    expect(JSON.stringify(reseeded)).not.toBe(JSON.stringify(here));
  });

  it('the campaign list is the same on every server with the same seed', async () => {
    const here = await call(sandbox, '/campaigns');
    const there = await withSandbox({}, (other) => call(other, '/campaigns'));
    expect(there.text).toBe(here.text);
  });
});
