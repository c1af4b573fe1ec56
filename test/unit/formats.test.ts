// The Parquet and XLSX writers on their own: row groups and sheet overflow, with small limits so
// that the behaviour of a multi-million-row report is seen on ten rows. Read back by DuckDB and
// SheetJS.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import XLSX from 'xlsx';
import { describe, expect, it } from 'vitest';
import { ParquetRowWriter } from '../../src/export/parquet.js';
import { ReportScanner } from '../../src/export/scanner.js';
import type { RowWriter } from '../../src/export/writers.js';
import { XlsxRowWriter } from '../../src/export/xlsx.js';
import { tempDir } from '../helpers/tmp.js';

const rows = Array.from({ length: 10 }, (_, i) => ({ date: `2026-11-${String(i + 1).padStart(2, '0')}`, city: `c${i}`, clicks: i }));
const body = JSON.stringify({ data: rows, summary: {} });

/** Drives a writer as the export loop does: a chunk, then take(), to the end. */
async function write(writer: RowWriter, path: string): Promise<void> {
  const scanner = new ReportScanner(writer);
  const out: Buffer[] = [];
  for (let i = 0; i < body.length; i += 50) {
    scanner.push(body.slice(i, i + 50));
    out.push(Buffer.from(await writer.take()));
  }
  scanner.end();
  out.push(Buffer.from(await writer.finish()));
  writeFileSync(path, Buffer.concat(out));
}

describe('typed writers', () => {
  it('Parquet: one row group per ROW_GROUP rows, all rows in order', async () => {
    const path = join(tempDir(), 'r.parquet');
    await write(new ParquetRowWriter({}, 3), path);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const groups = (await duck.runAndReadAll(`SELECT DISTINCT row_group_id FROM parquet_metadata('${path}')`)).getRows();
    expect(groups.length).toBe(4);
    const back = (await duck.runAndReadAll(`SELECT strftime(date, '%Y-%m-%d') AS date, city, clicks::INTEGER AS clicks FROM '${path}'`)).getRowObjectsJson();
    expect(back).toEqual(rows);
  });

  it('XLSX: past the rows of a sheet, the rows go on in a new sheet with the same header', async () => {
    const path = join(tempDir(), 'r.xlsx');
    await write(new XlsxRowWriter({}, 4), path);
    const book = XLSX.readFile(path);
    expect(book.SheetNames).toEqual(['report', 'report 2', 'report 3', 'report 4']);
    const all = book.SheetNames.flatMap((name) => {
      const table = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets[name] as XLSX.WorkSheet, { header: 1, raw: true });
      expect(table[0]).toEqual(['date', 'city', 'clicks']);
      expect(table.length).toBeLessThanOrEqual(4);
      return table.slice(1).map((row) => [row[1], row[2]]);
    });
    expect(all).toEqual(rows.map((row) => [row.city, row.clicks]));
  });

  it('an empty report gives a valid file with the chosen columns', async () => {
    const dir = tempDir();
    const empty = JSON.stringify({ data: [] });
    for (const [writer, file] of [[new ParquetRowWriter({ columns: ['date', 'clicks'] }), 'e.parquet'], [new XlsxRowWriter({ columns: ['date', 'clicks'] }), 'e.xlsx']] as const) {
      const scanner = new ReportScanner(writer);
      scanner.push(empty);
      scanner.end();
      writeFileSync(join(dir, file), Buffer.from(await writer.finish()));
    }
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM '${join(dir, 'e.parquet')}'`)).getRowObjectsJson();
    expect(described.map((r) => [r.column_name, r.column_type])).toEqual([['date', 'VARCHAR'], ['clicks', 'BIGINT']]);
    const sheet = XLSX.readFile(join(dir, 'e.xlsx')).Sheets.report as XLSX.WorkSheet;
    expect(XLSX.utils.sheet_to_json(sheet, { header: 1 })).toEqual([['date', 'clicks']]);
  });
});
