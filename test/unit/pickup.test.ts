// The command a run prints to pick its report up later writes the same file from the same server.

import { describe, expect, it } from 'vitest';
import { pickUpFlags } from '../../src/jobs/outcome.js';
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
    const plain = { output: 'p.csv' };
    expect(pickUpFlags(plain, planOf(plain), { profileName: 'default', globals: DEFAULT_GLOBALS })).toEqual([]);
  });
});

describe('--columns', () => {
  it('naming a column twice is a usage error (two columns of one name, the first empty)', () => {
    expect(() => columnsOf(['date', 'clicks', 'country'], ['date,clicks,clicks'], true)).toThrow(/--columns names clicks twice/);
    expect(() => columnsOf(['date', 'clicks'], ['clicks', 'CLICKS'], true)).toThrow(/--columns names clicks twice/);
    expect(() => columnsOf([], ['x', 'x'], false)).toThrow(/names x twice/);
    expect(columnsOf(['date', 'clicks'], ['CLICKS,date'], true)).toEqual(['clicks', 'date']);
  });
});
