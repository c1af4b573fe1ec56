// Edge cases of the Parquet writer that encodes its columns as rows arrive (parquet-columns.ts),
// each file read back by DuckDB (a reader this project did not write), in text and bytes mode:
// counts at the 32-bit, 53-bit and 64-bit limits and their statistics, -0 and amounts of many
// digits, empty string against null against absent, texts with NUL, escaped emoji and lone
// surrogates, a text column's dictionary at exactly its 65,536 entries and its 1 MiB, the "same as
// the previous value" path across a row group and after the dictionary gave way to PLAIN, one row,
// no row, columns all null, dates and instants over Paris's DST changes, snake-case names.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { SnakeCaseRows } from '../../src/export/case.js';
import { ParquetRowWriter } from '../../src/export/parquet.js';
import { ReportScanner } from '../../src/export/scanner.js';
import type { RowWriter } from '../../src/export/row-writer.js';
import { tempDir } from '../helpers/tmp.js';

async function written(body: string, bytes: boolean, rowGroup?: number, wrap = (w: ParquetRowWriter): RowWriter => w, writer = new ParquetRowWriter({}, rowGroup, undefined, bytes)): Promise<string> {
  const outer = wrap(writer);
  const scanner = new ReportScanner(outer, undefined, bytes);
  const out: Buffer[] = [];
  const buffer = Buffer.from(body, 'utf8');
  for (let i = 0; i < buffer.length; i += 65_521) {
    scanner.push(buffer.subarray(i, i + 65_521));
    out.push(writer.take());
  }
  scanner.end();
  out.push(writer.finish());
  const path = join(tempDir(), `e${bytes ? 'b' : 't'}.parquet`);
  writeFileSync(path, Buffer.concat(out));
  return path;
}

let instance: DuckDBInstance | undefined;
async function query(sql: string): Promise<Record<string, unknown>[]> {
  instance ??= await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  return (await duck.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
}

const body = (rows: string[]): string => `{"data":[${rows.join(',')}],"summary":{}}`;
const MODES = [false, true];

describe('Parquet edge cases read back by DuckDB', () => {
  const counts = ['0', '-0', '2147483647', '2147483648', '-2147483648', '-2147483649', '4294967295', '4294967296', '4294967297', '-4294967296', '-4294967297',
    '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993', '999999999999999', '-999999999999999', '1000000000000000',
    '9223372036854775807', '-9223372036854775808', '9223372036854775806', '1e3', '123456789e3'];
  const asInt = (t: string) => BigInt(t.includes('e') ? Number(t) : t).toString();
  for (const bytes of MODES) {
    it(`counts at the 2^31, 2^32, 2^53 and int64 limits, their min/max per group (${bytes ? 'bytes' : 'text'} mode)`, async () => {
      const path = await written(body(counts.map((c, i) => `{"clicks":${c},"n":${i}}`)), bytes, 5);
      const back = await query(`SELECT clicks::VARCHAR AS c FROM '${path}'`);
      expect(back.map((r) => r.c)).toEqual(counts.map(asInt));
      const stats = await query(`SELECT row_group_id AS g, stats_min_value AS lo, stats_max_value AS hi FROM parquet_metadata('${path}') WHERE path_in_schema = 'clicks' ORDER BY g`);
      const groups = Array.from({ length: Math.ceil(counts.length / 5) }, (_, g) => counts.slice(g * 5, g * 5 + 5).map((c) => BigInt(asInt(c))));
      expect(stats.map((s) => [s.lo, s.hi])).toEqual(groups.map((g) => [g.reduce((a, b) => (b < a ? b : a)).toString(), g.reduce((a, b) => (b > a ? b : a)).toString()]));
      // pruning by those statistics finds each value
      for (const c of ['2147483648', '-2147483649', '4294967296', '9007199254740993', '-9223372036854775808']) {
        const found = await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE clicks = (${c})::BIGINT`);
        expect(found[0]?.n, c).toBe(counts.filter((x) => asInt(x) === c).length);
      }
    });

    it(`counts sent with a fraction or an exponent: whole ones exactly, others stop the export, never rounded (${bytes ? 'bytes' : 'text'} mode)`, async () => {
      const whole = ['2.50e1', '1.000e3', '100e-2', '0.0', '-0.0e5', '1e17', '9.223372036854775807e18', '12345678901234567800e-2'];
      const path = await written(body(whole.map((c) => `{"clicks":${c}}`)), bytes);
      expect((await query(`SELECT clicks::VARCHAR AS c FROM '${path}'`)).map((r) => r.c)).toEqual(['25', '1000', '1', '0', '0', '100000000000000000', '9223372036854775807', '123456789012345678']);
      for (const bad of ['1.0000000000000001', '4.9999999999999999', '9007199254740993.5', '1e-400', '9.3e18', '0.5']) {
        await expect(written(body(['{"clicks":1}', `{"clicks":${bad}}`]), bytes), bad).rejects.toThrow(/data\[1\]\.clicks is "[^"]+", (not a whole number|out of the range)/);
      }
    });

    it(`-0 and amounts of many digits stay the doubles sent (${bytes ? 'bytes' : 'text'} mode)`, async () => {
      const amounts = ['-0', '0', '-0.0', '-123456789.123456789', '0.1', '-0.000000001', '1234567890123456789012', '5e-324', '-1.7976931348623157e308', '9007199254740993', '-12.30', '1E+2'];
      const path = await written(body(amounts.map((a) => `{"revenueEuro":${a}}`)), bytes, 4);
      const back = await query(`SELECT revenueEuro AS v, signbit(revenueEuro) AS neg FROM '${path}'`);
      expect(back.map((r) => r.neg)).toEqual(amounts.map((a) => Object.is(Number(a), -0) || Number(a) < 0));
      expect(back.map((r) => Number(r.v))).toEqual(amounts.map(Number));
      const sums = await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE revenueEuro = 0`);
      expect(sums[0]?.n).toBe(3);
    });

    it(`empty string, null and absent fields; NUL, escaped emoji, lone surrogates, CR/LF, spaces (${bytes ? 'bytes' : 'text'} mode)`, async () => {
      const cities = ['""', 'null', undefined, '"a\\u0000b"', '"\\ud83d\\ude80 rocket"', '"\\ud800 lone"', '"lone \\udc00"', '"cr\\r\\nlf\\n"', '"  spaced  "', '" "', '"]]> < & >"', '"\\u0001\\u001f\\u007f"', '"𝄞"', '"\\u00e9t\\u00e9"', '"été"'];
      const rows = cities.map((c, i) => (c === undefined ? `{"clicks":${i}}` : `{"city":${c},"clicks":${i}}`));
      rows.unshift('{"city":"first","clicks":-1}');
      const path = await written(body(rows), bytes, 3);
      const back = await query(`SELECT city, city IS NULL AS missing FROM '${path}'`);
      const expected = ['first', ...cities.map((c) => (c === undefined || c === 'null' ? null : (JSON.parse(c) as string)))];
      // a lone surrogate has no UTF-8: it is written as U+FFFD, as Node writes any text
      const utf8 = (t: string | null) => (t === null ? null : Buffer.from(t, 'utf8').toString('utf8'));
      expect(back.map((r) => r.city)).toEqual(expected.map(utf8));
      expect(back.map((r) => r.missing)).toEqual(expected.map((t) => t === null));
    });
  }

  it('a dictionary of exactly 65,536 entries stays a dictionary; the 65,537th makes the group PLAIN, every value kept', async () => {
    for (const distinct of [65_536, 65_537]) {
      // each new value twice in a row (the "same as the previous" path), then the first ones again
      const values = Array.from({ length: distinct }, (_, i) => `v${i}`);
      const order = [...values.flatMap((v) => [v, v]), 'v0', 'v0', 'v1', `v${distinct - 1}`, `v${distinct - 1}`];
      const path = await written(body(order.map((v) => `{"city":"${v}"}`)), true);
      const encodings = await query(`SELECT encodings FROM parquet_metadata('${path}') WHERE path_in_schema = 'city'`);
      expect(encodings.map((e) => e.encodings)).toEqual([distinct === 65_536 ? 'PLAIN, RLE_DICTIONARY' : 'PLAIN']);
      const back = await query(`SELECT city FROM '${path}'`);
      expect(back.map((r) => r.city)).toEqual(order);
    }
  });

  it('a dictionary of exactly 1 MiB stays a dictionary; one byte more makes the group PLAIN, every value kept', async () => {
    // 1,024 entries of 4 + 1,020 bytes: 1 MiB exactly
    const text = (i: number, extra = 0) => `${String(i).padStart(4, '0')}${'é'.repeat(508)}${'x'.repeat(extra)}`;
    for (const extra of [0, 1]) {
      const order = Array.from({ length: 1024 }, (_, i) => text(i, i === 1023 ? extra : 0));
      const all = [...order, order[1023] as string, order[0] as string, order[0] as string, null, order[5] as string];
      for (const bytes of MODES) {
        const path = await written(body(all.map((v) => `{"city":${JSON.stringify(v)}}`)), bytes);
        const encodings = await query(`SELECT encodings FROM parquet_metadata('${path}') WHERE path_in_schema = 'city'`);
        expect(encodings.map((e) => e.encodings)).toEqual([extra === 0 ? 'PLAIN, RLE_DICTIONARY' : 'PLAIN']);
        const back = await query(`SELECT city FROM '${path}'`);
        expect(back.map((r) => r.city)).toEqual(all);
      }
    }
  });

  it('the "same as the previous" path across row groups and after PLAIN: each group its own values', async () => {
    // groups of 7 rows: a run of one value over the boundary, a group that turns PLAIN mid-way
    // (distinct values pass the 65,536 entries) and the next group back on a dictionary
    const rows: string[] = [];
    for (let i = 0; i < 20; i++) rows.push(i < 10 ? 'same' : i % 2 ? 'odd' : 'even');
    const path = await written(body(rows.map((v) => `{"city":"${v}","clicks":1}`)), true, 7);
    expect((await query(`SELECT city FROM '${path}'`)).map((r) => r.city)).toEqual(rows);
    const many = [...Array.from({ length: 70_000 }, (_, i) => `d${i}`), 'd69999', 'd69999', 'd0', 'd0', 'z', 'z'];
    const path2 = await written(body(many.map((v) => `{"city":"${v}"}`)), false, 69_999);
    const encodings = await query(`SELECT row_group_id AS g, encodings FROM parquet_metadata('${path2}') WHERE path_in_schema = 'city' ORDER BY g`);
    expect(encodings.map((e) => e.encodings)).toEqual(['PLAIN', 'PLAIN, RLE_DICTIONARY']);
    expect((await query(`SELECT city FROM '${path2}'`)).map((r) => r.city)).toEqual(many);
  });

  it('a row group that reaches 2 MiB exactly ends there; no row lost or doubled', async () => {
    // a row: its count (8 bytes + 1 level) and a text from a one-entry dictionary (4-byte index +
    // 1 level); the entry: 4 + 4,092 bytes. 149,504 rows (a multiple of 256) hold 2 MiB exactly.
    const text = 'x'.repeat(4092);
    const writer = new ParquetRowWriter({}, undefined, undefined, true);
    const rows = 600_000;
    const keys = ['city', 'clicks'];
    const kinds = [0, 1];
    const parts: Buffer[] = [];
    for (let i = 0; i < rows; i++) {
      writer.row(keys, [text, String(i)], kinds as never);
      if (i % 50_000 === 0) parts.push(writer.take());
    }
    parts.push(writer.finish());
    const path = join(tempDir(), 'g.parquet');
    writeFileSync(path, Buffer.concat(parts));
    const groups = await query(`SELECT DISTINCT row_group_id AS g, row_group_num_rows::INTEGER AS n FROM parquet_metadata('${path}') ORDER BY g`);
    expect(groups.map((g) => g.n)).toEqual([149_504, 149_504, 149_504, 149_504, 1_984]);
    const sums = await query(`SELECT count(*)::INTEGER AS n, sum(clicks)::VARCHAR AS s, count(DISTINCT clicks)::INTEGER AS d, min(length(city))::INTEGER AS lo, max(length(city))::INTEGER AS hi FROM '${path}'`);
    expect(sums[0]).toEqual({ n: rows, s: String((rows * (rows - 1)) / 2), d: rows, lo: 4092, hi: 4092 });
  });

  it('one row; no row (the columns from the request); columns all null in one group and not in the next', async () => {
    const one = await written(body(['{"date":"2026-03-29","city":"x","clicks":1,"revenueEuro":-0}']), true);
    expect(await query(`SELECT strftime(date, '%Y-%m-%d') AS date, city, clicks::INTEGER AS clicks, signbit(revenueEuro) AS neg FROM '${one}'`)).toEqual([{ date: '2026-03-29', city: 'x', clicks: 1, neg: true }]);
    const schema = [{ name: 'city', type: 'string' as const }, { name: 'clicks', type: 'int64' as const }];
    const none = await written(body([]), true, undefined, undefined, new ParquetRowWriter({ schema }, undefined, undefined, true));
    expect(await query(`SELECT count(*)::INTEGER AS n FROM '${none}'`)).toEqual([{ n: 0 }]);
    expect((await query(`SELECT column_name AS c, column_type AS t FROM (DESCRIBE SELECT * FROM '${none}')`))).toEqual([{ c: 'city', t: 'VARCHAR' }, { c: 'clicks', t: 'BIGINT' }]);
    const nulls = ['{"date":"2026-01-01","city":null,"clicks":null,"revenueEuro":null}', '{"date":null,"city":null,"clicks":null,"revenueEuro":null}',
      '{"date":"2026-01-02","city":"y","clicks":9007199254740993,"revenueEuro":1.5}', '{"date":null,"city":null,"clicks":null,"revenueEuro":null}'];
    for (const bytes of MODES) {
      const path = await written(body(nulls), bytes, 2);
      expect(await query(`SELECT strftime(date, '%Y-%m-%d') AS date, city, clicks::VARCHAR AS clicks, revenueEuro FROM '${path}'`)).toEqual([
        { date: '2026-01-01', city: null, clicks: null, revenueEuro: null }, { date: null, city: null, clicks: null, revenueEuro: null },
        { date: '2026-01-02', city: 'y', clicks: '9007199254740993', revenueEuro: 1.5 }, { date: null, city: null, clicks: null, revenueEuro: null }]);
      const stats = await query(`SELECT row_group_id::INTEGER AS g, stats_min_value AS lo, stats_max_value AS hi FROM parquet_metadata('${path}') WHERE path_in_schema = 'clicks' ORDER BY g`);
      expect(stats).toEqual([{ g: 0, lo: null, hi: null }, { g: 1, lo: '9007199254740993', hi: '9007199254740993' }]);
      // a reader that prunes by the statistics still finds the rows
      expect(await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE clicks IS NULL`)).toEqual([{ n: 3 }]);
    }
  });

  it('DAILY dates over the DST changes and far from 1970, HOURLY instants of the repeated hour, as sent', async () => {
    const days = ['2026-03-28', '2026-03-29', '2026-03-30', '2026-10-24', '2026-10-25', '2026-10-26', '1969-12-31', '1900-01-01', '2099-12-31', '2026-03-29'];
    const path = await written(body(days.map((d) => `{"date":"${d}","clicks":1}`)), true, 4);
    expect((await query(`SELECT strftime(date, '%Y-%m-%d') AS d FROM '${path}'`)).map((r) => r.d)).toEqual(days);
    const hours = ['2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00', '2026-10-25T02:00:00+01:00', '2026-10-25T00:00:00Z', '2026-03-29T02:00:00+02:00', '2026-03-29T01:59:59+01:00', '1969-12-31T23:00:00+01:00', '2026-03-29T03:00:00+0200'];
    for (const bytes of MODES) {
      const hourly = await written(body(hours.map((h) => `{"date":"${h}","clicks":1}`)), bytes, 3);
      expect((await query(`SELECT epoch_ms(date)::DOUBLE AS ms FROM '${hourly}'`)).map((r) => r.ms)).toEqual(hours.map((h) => Date.parse(h.replace(/(\d{2})(\d{2})$/, '$1:$2'))));
    }
  });

  it('DAILY dates of years before 100 stay their year; a day the month lacks stops the export, never shifted', async () => {
    const days = ['0001-01-01', '0050-06-15', '0099-12-31', '0100-01-01', '2024-02-29'];
    const path = await written(body(days.map((d) => `{"date":"${d}","clicks":1}`)), true);
    expect((await query(`SELECT strftime(date, '%Y-%m-%d') AS d FROM '${path}'`)).map((r) => r.d)).toEqual(days);
    for (const bad of ['2026-02-29', '2026-02-30', '2026-04-31', '2026-00-10', '2026-13-01', '2026-01-00']) {
      await expect(written(body(['{"date":"2026-01-01"}', `{"date":"${bad}"}`]), true), bad).rejects.toThrow(/data\[1\]\.date is "[-0-9]+", not a date/);
      await expect(written(body(['{"date":"2026-01-01T00:00:00Z"}', `{"date":"${bad}T01:00:00+01:00"}`]), false), bad).rejects.toThrow(/data\[1\]\.date is .*, not a date-time/);
    }
  });

  it('numbers, booleans and nested JSON in a text column as their JSON text; texts past the dictionary\'s 1 MiB on their own', async () => {
    const values = ['12.50', 'true', 'false', '-0', '1E+2', '{"a":"é","b":[1,null]}', '["\\u00e9"]', '"12.50"', '"true"'];
    const big = `${'€'.repeat(1_200_000)}!`;
    const rows = [...values.map((v) => `{"city":${v}}`), `{"city":${JSON.stringify(big)}}`, `{"city":${JSON.stringify(big)}}`, '{"city":"small"}', '{"city":"small"}'];
    const expected = ['12.50', 'true', 'false', '-0', '1E+2', '{"a":"é","b":[1,null]}', '["\\u00e9"]', '12.50', 'true', big, big, 'small', 'small'];
    for (const bytes of MODES) {
      const path = await written(body(rows), bytes, 11);
      expect((await query(`SELECT city FROM '${path}'`)).map((r) => r.city), String(bytes)).toEqual(expected);
    }
  });

  it('rows whose keys come in another order, or fewer, or non-ASCII, land in their own columns', async () => {
    const rows = ['{"Ünï côde":"a","clicks":1,"city":"x"}', '{"city":"y","Ünï côde":"b","clicks":2}', '{"clicks":3}', '{"city":"z","clicks":4,"Ünï côde":"c"}', '{"clicks":5,"city":"x","Ünï côde":"a"}'];
    for (const bytes of MODES) {
      const path = await written(body(rows), bytes, 2);
      expect(await query(`SELECT "Ünï côde" AS u, clicks::INTEGER AS c, city FROM '${path}'`)).toEqual([
        { u: 'a', c: 1, city: 'x' }, { u: 'b', c: 2, city: 'y' }, { u: null, c: 3, city: null }, { u: 'c', c: 4, city: 'z' }, { u: 'a', c: 5, city: 'x' }]);
    }
  });

  it('the statistics of dates and amounts let a filtering reader find every row (DuckDB prunes groups by them)', async () => {
    const days = ['1900-01-01', '1969-12-31', '1970-01-01', '2026-03-29', '0050-06-15', '2099-12-31', '2026-10-25'];
    const amounts = ['-1.7976931348623157e308', '-0', '0', '5e-324', '0.1', '-12.5', '1e300'];
    const rows = days.map((d, i) => `{"date":"${d}","revenueEuro":${amounts[i]}}`);
    const path = await written(body(rows), true, 2);
    const stats = await query(`SELECT stats_min_value AS lo, stats_max_value AS hi FROM parquet_metadata('${path}') WHERE path_in_schema = 'date' ORDER BY row_group_id`);
    expect(stats).toEqual([{ lo: '1900-01-01', hi: '1969-12-31' }, { lo: '1970-01-01', hi: '2026-03-29' }, { lo: '0050-06-15', hi: '2099-12-31' }, { lo: '2026-10-25', hi: '2026-10-25' }]);
    for (const d of days) expect((await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE date = DATE '${d}'`))[0]?.n, d).toBe(1);
    for (const a of amounts) expect((await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE revenueEuro = (${a})::DOUBLE`))[0]?.n, a).toBe(Number(a) === 0 ? 2 : 1);
    expect((await query(`SELECT count(*)::INTEGER AS n FROM '${path}' WHERE revenueEuro < 0`))[0]?.n).toBe(2);
    const hours = ['2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00', '1969-12-31T23:00:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-29T01:00:00+01:00'];
    const hourly = await written(body(hours.map((h) => `{"date":"${h}"}`)), true, 2);
    for (const h of hours) expect((await query(`SELECT count(*)::INTEGER AS n FROM '${hourly}' WHERE date = make_timestamptz(${Date.parse(h) * 1000}::BIGINT)`))[0]?.n, h).toBe(1);
  });

  it('--columns: the columns in the order chosen, one no row holds all null, fields left out not written', async () => {
    const rows = ['{"city":"a","clicks":1,"revenueEuro":0.5}', '{"revenueEuro":-0,"city":"b"}'];
    for (const bytes of MODES) {
      const dropped = new Set<string>();
      const writer = new ParquetRowWriter({ columns: ['clicks', 'nowhere', 'city'], dropped }, 1, undefined, bytes);
      const path = await written(body(rows), bytes, undefined, undefined, writer);
      expect(await query(`SELECT column_name AS c, column_type AS t FROM (DESCRIBE SELECT * FROM '${path}')`)).toEqual([{ c: 'clicks', t: 'BIGINT' }, { c: 'nowhere', t: 'VARCHAR' }, { c: 'city', t: 'VARCHAR' }]);
      expect(await query(`SELECT clicks::INTEGER AS clicks, nowhere, city FROM '${path}'`)).toEqual([{ clicks: 1, nowhere: null, city: 'a' }, { clicks: null, nowhere: null, city: 'b' }]);
      expect([...dropped]).toEqual(['revenueEuro']);
    }
  });

  it('--column-case snake: snake-case columns, types from the contract, values as sent', async () => {
    const rows = ['{"date":"2026-10-25T02:00:00+01:00","deviceBrand":"Ünï","revenueEuro":-0.5,"eyesTrackings":4294967297,"subSubPublisherId":null}'];
    for (const bytes of MODES) {
      const path = await written(body(rows), bytes, undefined, (w) => new SnakeCaseRows(w, false));
      expect(await query(`SELECT column_name AS c, column_type AS t FROM (DESCRIBE SELECT * FROM '${path}')`)).toEqual([
        { c: 'date', t: 'TIMESTAMP WITH TIME ZONE' }, { c: 'device_brand', t: 'VARCHAR' }, { c: 'revenue_euro', t: 'DOUBLE' }, { c: 'eyes_trackings', t: 'BIGINT' }, { c: 'sub_sub_publisher_id', t: 'VARCHAR' }]);
      expect(await query(`SELECT epoch_ms(date)::DOUBLE AS ms, device_brand, revenue_euro, eyes_trackings::VARCHAR AS e, sub_sub_publisher_id FROM '${path}'`)).toEqual([
        { ms: Date.parse('2026-10-25T02:00:00+01:00'), device_brand: 'Ünï', revenue_euro: -0.5, e: '4294967297', sub_sub_publisher_id: null }]);
    }
  });
});
