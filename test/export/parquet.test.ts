// An HOURLY report's `date` is an instant ("2026-10-25T02:00:00+01:00"): written to Parquet as a
// timestamp whose unit and UTC flag a reader must understand, so that DuckDB (a reader this
// project did not write) reads back the same instant, and the repeated hour of the autumn DST
// change stays two distinct values. A wrong unit is off by a factor of 1,000: the year 55,000, or
// 1970.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, DuckDBTimestampTZValue } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { ParquetRowWriter } from '../../src/export/parquet.js';
import { ReportScanner } from '../../src/export/scanner.js';
import { tempDir } from '../helpers/tmp.js';

const hours = [
  '2026-03-29T01:00:00+01:00', // the last hour before spring's change
  '2026-03-29T03:00:00+02:00', // the next hour
  '2026-10-25T02:00:00+02:00', // the autumn hour, first time
  '2026-10-25T02:00:00+01:00', // and second time, an hour later
  '2026-11-20T23:00:00+01:00',
  '1999-12-31T23:00:00+01:00',
  '2099-06-30T12:00:00+02:00',
];

async function parquetOf(dates: string[], rowGroup: number): Promise<string> {
  const writer = new ParquetRowWriter({}, rowGroup);
  const scanner = new ReportScanner(writer);
  scanner.push(JSON.stringify({ data: dates.map((date, i) => ({ date, clicks: i })), summary: {} }));
  scanner.end();
  const path = join(tempDir(), 'hourly.parquet');
  writeFileSync(path, Buffer.concat([writer.take(), writer.finish()]));
  return path;
}

describe('Parquet: an HOURLY date column', () => {
  it('is read back by DuckDB as a timestamp with time zone holding the same instants', async () => {
    const path = await parquetOf(hours, 3);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM '${path}'`)).getRowObjectsJson();
    expect(described.map((r) => [r.column_name, r.column_type])).toEqual([['date', 'TIMESTAMP WITH TIME ZONE'], ['clicks', 'BIGINT']]);
    const rows = (await duck.runAndReadAll(`SELECT date, clicks::INTEGER AS clicks FROM '${path}' ORDER BY clicks`)).getRows();
    const instants = rows.map(([date]) => {
      expect(date).toBeInstanceOf(DuckDBTimestampTZValue);
      return Number((date as DuckDBTimestampTZValue).micros / 1000n);
    });
    expect(instants).toEqual(hours.map((hour) => Date.parse(hour)));
    // the repeated autumn hour: two values, one hour apart
    expect((instants[3] as number) - (instants[2] as number)).toBe(3_600_000);
    // and in SQL, as a user of the file would ask
    const epochs = (await duck.runAndReadAll(`SELECT epoch_ms(date)::DOUBLE AS ms FROM '${path}' ORDER BY clicks`)).getRows();
    expect(epochs.map(([ms]) => ms)).toEqual(hours.map((hour) => Date.parse(hour)));
  });
});
