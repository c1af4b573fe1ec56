// The typed columns of an export (`reporting schema`), from the catalog alone.

import { describe, expect, it } from 'vitest';
import { createTable, exportColumns, jsonSchema } from '../../src/report/schema.js';
import { argv, fakeContext } from '../helpers/ctx.js';

describe('export columns', () => {
  it('--columns requested: the bucket, the breakdown fields, the metrics; a breakdown with no field adds nothing', () => {
    const columns = exportColumns({ side: 'buyer', metrics: ['clicks', 'revenueDollar'], breakdowns: ['DAILY', 'FORMAT', 'CAMPAIGN'], requestedOnly: true });
    expect(columns.map((c) => [c.name, c.type, c.nullable, c.key])).toEqual([
      ['date', 'date', false, true],
      ['campaignId', 'string', false, true],
      ['campaignName', 'string', false, true],
      ['clicks', 'int64', false, false],
      ['valueDollar', 'double', false, false],
    ]);
  });

  it('the time bucket decides the type of date; RANGE and no time breakdown have no date', () => {
    const dateOf = (breakdowns: string[]) => exportColumns({ side: 'seller', metrics: ['displays'], breakdowns }).find((c) => c.name === 'date')?.type;
    expect([dateOf(['HOURLY']), dateOf(['DAILY']), dateOf(['MONTHLY']), dateOf(['RANGE']), dateOf(['APP'])]).toEqual(['timestamp', 'date', 'month', undefined, undefined]);
    const all = exportColumns({ side: 'seller', metrics: ['displays'], breakdowns: ['APP'] });
    expect(all.length).toBe(23); // every dimension field of the seller row, and the one metric
    expect(all.find((c) => c.name === 'city')?.nullable).toBe(true);
  });

  it('DDL per dialect: quoted names, the dialect types, the row key as a comment', () => {
    const columns = exportColumns({ side: 'buyer', metrics: ['displays', 'revenueEuro'], breakdowns: ['HOURLY', 'COUNTRY'], requestedOnly: true });
    expect(createTable(columns, 'postgres', 'ads.hourly')).toBe(
      '-- row key: date, country\nCREATE TABLE "ads"."hourly" (\n  "date"        timestamptz,\n  "country"     text,\n  "displays"    bigint,\n  "revenueEuro" double precision\n);\n');
    expect(createTable(columns, 'bigquery', 't')).toContain('`revenueEuro` FLOAT64');
    expect(createTable(columns, 'duckdb', 't')).toContain('"date"        TIMESTAMPTZ');
    const schema = jsonSchema(columns, 't') as { properties: Record<string, { type: unknown }>; required: string[] };
    expect(schema.properties.country?.type).toEqual(['string', 'null']);
    expect(schema.required).toEqual(['date', 'country', 'displays', 'revenueEuro']);
  });

  it('`reporting schema` prints a table, JSON with --json, and refuses an unknown --as', async () => {
    const { runCli } = await import('../../src/cli/program.js');
    const table = fakeContext();
    expect(await runCli(argv('schema', 'buyer', '--breakdowns', 'daily,country', '--metrics', 'clicks', '--columns', 'requested'), table.ctx)).toBe(0);
    expect(table.stdout.text).toBe('column   type       null  key\ndate     date             key\ncountry  string     yes   key\nclicks   int64\n');
    const json = fakeContext();
    expect(await runCli(argv('schema', 'seller', '--breakdowns', 'DMP', '--metrics', 'clicks', '--columns', 'requested', '--json'), json.ctx)).toBe(0);
    expect(JSON.parse(json.stdout.text)).toMatchObject({ side: 'seller', key: [], columns: [{ name: 'clicks', type: 'int64' }] });
    const unknown = fakeContext();
    expect(await runCli(argv('schema', 'buyer', '--as', 'sqlite'), unknown.ctx)).toBe(2);
    expect(unknown.stderr.text).toMatch(/unknown schema format "sqlite"/);
  });
});
