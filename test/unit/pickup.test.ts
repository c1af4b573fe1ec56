// The command a run prints to pick its report up later writes the same file from the same server.

import { describe, expect, it } from 'vitest';
import { pickUpFlags } from '../../src/engine/outcome.js';
import { columnsOf, planOutput, resolveRequestedColumns, PLACEHOLDERS } from '../../src/export/output.js';
import { columnNames } from '../../src/report/catalog.js';
import { DEFAULT_GLOBALS } from '../../src/factory.js';

const request = { side: 'buyer' as const, metrics: ['displays', 'clicks'], breakdowns: ['DAILY', 'COUNTRY'] };
const planOf = (output: Parameters<typeof planOutput>[0]) => resolveRequestedColumns(planOutput(output, PLACEHOLDERS, columnNames(['buyer'])), request);

describe('the pick-up command of a run', () => {
  it('carries the profile, base URL, format, CSV options and the columns as names', () => {
    const output = { output: 'e.out', format: 'json' };
    expect(pickUpFlags(output, planOf(output), { profileName: 's6', globals: { ...DEFAULT_GLOBALS, baseUrl: 'http://127.0.0.1:9' } }))
      .toEqual(['--profile', 's6', '--base-url', 'http://127.0.0.1:9', '--format', 'json']);
    const excel = { output: 'e.csv', excel: true, columns: ['requested'] };
    expect(pickUpFlags(excel, planOf(excel), { profileName: 'default', globals: DEFAULT_GLOBALS }))
      .toEqual(['--excel', '--columns', 'date,country,displays,clicks']);
    // the default (the requested columns) is written out: the journal that lets download know the
    // request is kept an hour only
    const plain = { output: 'p.csv' };
    expect(pickUpFlags(plain, planOf(plain), { profileName: 'default', globals: DEFAULT_GLOBALS })).toEqual(['--columns', 'date,country,displays,clicks']);
    // every field is said too: download's own default would be the requested columns
    const all = { output: 'a.parquet', columns: ['all'] };
    expect(pickUpFlags(all, planOf(all), { profileName: 'default', globals: DEFAULT_GLOBALS })).toEqual(['--columns', 'all']);
    const ndjson = { output: 'n.ndjson', columns: ['ALL'] };
    expect(pickUpFlags(ndjson, planOf(ndjson), { profileName: 'default', globals: DEFAULT_GLOBALS })).toEqual([]);
    // --column-case snake: download would write the names as received otherwise
    const snake = { output: 's.csv', columnCase: 'snake' as const };
    expect(pickUpFlags(snake, planOf(snake), { profileName: 'default', globals: DEFAULT_GLOBALS })).toEqual(['--column-case', 'snake', '--columns', 'date,country,displays,clicks']);
  });
});

describe('--columns', () => {
  it('naming a column twice is a usage error (two columns of one name, the first empty)', () => {
    expect(() => columnsOf(['date', 'clicks', 'country'], ['date,clicks,clicks'], true)).toThrow(/--columns names clicks twice/);
    expect(() => columnsOf(['date', 'clicks'], ['clicks', 'CLICKS'], true)).toThrow(/--columns names clicks twice/);
    expect(() => columnsOf([], ['x', 'x'], false)).toThrow(/names x twice/);
    expect(columnsOf(['date', 'clicks'], ['CLICKS,date'], true)).toEqual(['clicks', 'date']);
  });

  it('takes a field by its snake-case name too (--column-case snake\'s columns), as the field', () => {
    expect(columnsOf(['date', 'revenueEuro', 'adminLevel1'], ['revenue_euro,admin_level_1,DATE'], true)).toEqual(['revenueEuro', 'adminLevel1', 'date']);
    expect(() => columnsOf(['date', 'revenueEuro'], ['revenue_euros'], true)).toThrow(/no row has a field "revenue_euros"/);
  });

  it('takes the words requested and all alone, in any case, never mixed with names', () => {
    expect(columnsOf(['date'], ['All'], true)).toEqual(['all']);
    expect(columnsOf(['date'], ['REQUESTED'], true)).toEqual(['requested']);
    expect(() => columnsOf(['date', 'clicks'], ['all,clicks'], true)).toThrow(/not a mix of them/);
    expect(() => columnsOf(['date'], ['requested', 'all'], true)).toThrow(/not a mix of them/);
  });

  it('defaults to the requested columns in CSV, Parquet and XLSX: date, breakdowns in their order, metrics as asked', () => {
    const asked = { side: 'buyer' as const, metrics: ['clicks', 'revenueDollar', 'displays'], breakdowns: ['COUNTRY', 'DAILY', 'CAMPAIGN'] };
    for (const output of ['r.csv', 'r.parquet', 'r.xlsx']) {
      const plan = resolveRequestedColumns(planOutput({ output }, PLACEHOLDERS, columnNames(['buyer'])), asked);
      expect(plan.csv.columns).toEqual(['date', 'country', 'campaignId', 'campaignName', 'clicks', 'valueDollar', 'displays']);
    }
    // JSON and NDJSON keep the rows as received
    for (const output of ['r.json', 'r.ndjson']) expect(resolveRequestedColumns(planOutput({ output }, PLACEHOLDERS, columnNames(['buyer'])), asked).csv.columns).toBeUndefined();
    // without the request (download of a report nothing describes): every field
    expect(resolveRequestedColumns(planOutput({ output: 'r.csv' }, PLACEHOLDERS, columnNames(['buyer']))).csv.columns).toBeUndefined();
    expect(() => resolveRequestedColumns(planOutput({ output: 'r.csv', columns: ['requested'] }, PLACEHOLDERS, columnNames(['buyer'])))).toThrow(/--columns requested needs the request/);
  });
});
