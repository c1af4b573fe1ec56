// Parquet columns encoded as they fill (src/export/parquet-columns.ts), read back by DuckDB, a
// reader this project did not write: amounts (decimals as doubles), counts up to 18 digits, nulls
// in every type, DAILY dates, HOURLY instants around Paris's DST changes, texts with accents,
// emoji, CJK and \u escapes; in text and in bytes mode (the download's), over several row groups,
// and with a text column whose distinct values outgrow the dictionary (written PLAIN).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { ParquetRowWriter } from '../../src/export/parquet.js';
import { ReportScanner } from '../../src/export/scanner.js';
import { tempDir } from '../helpers/tmp.js';

type Row = Record<string, string | number | null>;

const texts = ['Café Crème', 'Zürich – Genève', '東京', 'emoji 🚀✨', '', 'a "quoted" text', 'line\nbreak', 'tab\there'];
const counts = ['0', '7', '-3', '123456789012345', '9007199254740993', '123456789012345678', '-999999999999999999'];
const amounts = ['0', '12.34', '-0.5', '1e-7', '1234567.891', '0.1', '-0', '3.5E+10'];

/** A body as the API sends it (numbers as their JSON text), and the rows it holds. */
function bodyOf(dates: (i: number) => string | null, count: number): { body: string; rows: Row[] } {
  const rows: Row[] = [];
  const json: string[] = [];
  for (let i = 0; i < count; i++) {
    const clicks = i % 9 === 4 ? null : (counts[i % counts.length] as string);
    const revenue = i % 11 === 5 ? null : (amounts[i % amounts.length] as string);
    const city = i % 13 === 6 ? null : (texts[i % texts.length] as string);
    const date = dates(i);
    json.push(`{"date":${date === null ? 'null' : JSON.stringify(date)},"city":${city === null ? 'null' : JSON.stringify(city)},"clicks":${clicks ?? 'null'},"revenueEuro":${revenue ?? 'null'},"note":"\\u00e9t\\u00e9 ${i % 3}"}`);
    rows.push({ date, city, clicks, revenueEuro: revenue === null ? null : Number(revenue), note: `été ${i % 3}` });
  }
  return { body: `{"data":[${json.join(',')}],"summary":{}}`, rows };
}

async function written(body: string, bytes: boolean, rowGroup?: number): Promise<string> {
  const writer = new ParquetRowWriter({}, rowGroup, undefined, bytes);
  const scanner = new ReportScanner(writer, undefined, bytes);
  const out: Buffer[] = [];
  const buffer = Buffer.from(body, 'utf8');
  // cut anywhere, through multi-byte characters too
  for (let i = 0; i < buffer.length; i += 997) {
    scanner.push(buffer.subarray(i, i + 997));
    out.push(writer.take());
  }
  scanner.end();
  out.push(writer.finish());
  const path = join(tempDir(), `p${bytes ? 'b' : 't'}.parquet`);
  writeFileSync(path, Buffer.concat(out));
  return path;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  return (await duck.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
}

describe('Parquet columns encoded as they fill', () => {
  for (const bytes of [false, true]) {
    it(`every type and null reads back as sent (${bytes ? 'bytes' : 'text'} mode, several row groups)`, async () => {
      const { body, rows } = bodyOf((i) => (i % 17 === 8 ? null : `2026-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`), 500);
      const path = await written(body, bytes, 64);
      const types = await query(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '${path}')`);
      expect(types.map((t) => [t.column_name, t.column_type])).toEqual([['date', 'DATE'], ['city', 'VARCHAR'], ['clicks', 'BIGINT'], ['revenueEuro', 'DOUBLE'], ['note', 'VARCHAR']]);
      const groups = await query(`SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata('${path}')`);
      expect(Number(groups[0]?.n)).toBe(Math.ceil(500 / 64));
      const back = await query(`SELECT strftime(date, '%Y-%m-%d') AS date, city, clicks::VARCHAR AS clicks, revenueEuro, note FROM '${path}'`);
      expect(back).toEqual(rows.map((row) => ({ ...row, revenueEuro: row.revenueEuro === null ? null : Number(row.revenueEuro) })));
      // min/max on the counts, as a reader prunes by them (18 digits exactly, no double rounding)
      const stats = await query(`SELECT stats_min_value AS stats_min, stats_max_value AS stats_max FROM parquet_metadata('${path}') WHERE path_in_schema = 'clicks' AND row_group_id = 0`);
      expect(stats[0]).toEqual({ stats_min: '-999999999999999999', stats_max: '123456789012345678' });
    });
  }

  it('HOURLY instants around the DST changes in Paris stay the instants sent (bytes mode)', async () => {
    const hours = ['2026-03-29T01:00:00+01:00', '2026-03-29T03:00:00+02:00', '2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00', null];
    const { body, rows } = bodyOf((i) => hours[i % hours.length] as string | null, 40);
    const path = await written(body, true, 16);
    const back = await query(`SELECT epoch_ms(date)::DOUBLE AS ms FROM '${path}'`);
    expect(back.map((r) => r.ms)).toEqual(rows.map((r) => (r.date === null ? null : Date.parse(r.date as string))));
  });

  it('a text column whose distinct values outgrow the dictionary is written PLAIN, every value kept', async () => {
    const long = (i: number) => `${'é'.repeat(200)} ${i} 🚀`;
    const count = 3000;
    const json = Array.from({ length: count }, (_, i) => `{"city":${JSON.stringify(long(i))},"clicks":${i}}`);
    for (const bytes of [false, true]) {
      const path = await written(`{"data":[${json.join(',')}]}`, bytes);
      const encodings = await query(`SELECT DISTINCT encodings FROM parquet_metadata('${path}') WHERE path_in_schema = 'city'`);
      expect(encodings.map((e) => e.encodings)).toEqual(['PLAIN']);
      const back = await query(`SELECT city, clicks::INTEGER AS clicks FROM '${path}'`);
      expect(back).toEqual(Array.from({ length: count }, (_, i) => ({ city: long(i), clicks: i })));
    }
  });
});
