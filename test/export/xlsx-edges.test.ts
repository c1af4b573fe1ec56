// Edge cases of the XLSX writer that escapes only where needed and writes rows straight into UTF-8
// buffers (xlsx.ts), each workbook read back by SheetJS (a reader this project did not write), and
// its sheet XML checked where SheetJS is lenient: whitespace a reader would trim or fold without
// xml:space="preserve", every control character, the `_xHHHH_` guard, lone surrogates, emoji at the
// 32,767-character cut, rows longer than a 256 KiB buffer and rows across the buffers' ends, counts
// and amounts at their limits, -0, empty string against null against absent, DST instants in Paris
// wall time, one row, no row, --column-case snake.

import { spawnSync } from 'node:child_process';
import { strFromU8, unzipSync } from 'fflate';
import { DateTime } from 'luxon';
import XLSX from 'xlsx';
import { describe, expect, it } from 'vitest';
import { SnakeCaseRows } from '../../src/export/case.js';
import { ReportScanner } from '../../src/export/scanner.js';
import type { RowWriter } from '../../src/export/row-writer.js';
import { XlsxRowWriter } from '../../src/export/xlsx.js';
import { PYTHON } from '../helpers/python.js';

async function xlsxOf(body: string, writer = new XlsxRowWriter(), wrap = (w: XlsxRowWriter): RowWriter => w): Promise<Buffer> {
  const scanner = new ReportScanner(wrap(writer));
  const out: Buffer[] = [];
  for (let at = 0; at < body.length; at += 100_003) {
    scanner.push(body.slice(at, at + 100_003));
    out.push(Buffer.from(await writer.take()));
  }
  scanner.end();
  out.push(Buffer.from(await writer.finish()));
  return Buffer.concat(out);
}

const body = (rows: unknown[]): string => JSON.stringify({ data: rows, summary: {} });

function table(file: Buffer, sheet = 'report'): unknown[][] {
  const book = XLSX.read(file, { type: 'buffer' });
  return XLSX.utils.sheet_to_json<unknown[]>(book.Sheets[sheet] as XLSX.WorkSheet, { header: 1, raw: true, defval: null });
}

function sheetXml(file: Buffer, n = 1): string {
  return strFromU8(unzipSync(new Uint8Array(file))[`xl/worksheets/sheet${n}.xml`] as Uint8Array);
}

/** A lone surrogate has no UTF-8: Node writes U+FFFD, as every format does. */
const utf8 = (t: string) => Buffer.from(t, 'utf8').toString('utf8');

describe('XLSX edge cases read back by SheetJS', () => {
  const whitespace = [' ', '  ', '\t', '\n', '\r', '\r\n', ' a', 'a ', 'a  b', 'a\tb', 'a\nb', 'a b', '\u00a0x\u00a0', 'x\u3000', '\t\u0001'];
  it('text with whitespace XML would trim or fold carries xml:space="preserve", and reads back as sent', async () => {
    const file = await xlsxOf(body(whitespace.map((city, i) => ({ city, clicks: i }))));
    expect(table(file).slice(1).map((r) => r[0])).toEqual(whitespace);
    // every <t> without xml:space holds no XML whitespace a reader may trim or fold
    const plain = [...sheetXml(file).matchAll(/<t>([^<]*)<\/t>/g)].map((m) => m[1] as string);
    expect(plain.length).toBeGreaterThan(2);
    for (const t of plain) expect(t, JSON.stringify(t)).not.toMatch(/^[ \t\n\r]|[ \t\n\r]$|[\t\n\r]|  |&#13;/);
  });

  it('every control character, U+FFFE/U+FFFF, markup, ]]> and `_xHHHH_` texts read back as sent', async () => {
    const controls = Array.from({ length: 32 }, (_, c) => `<${String.fromCharCode(c)}>`);
    const texts = [...controls, '\u007f', '\ufffe', '\uffff', ']]>', '<![CDATA[', '&amp;', '&#0;', '_x0041_', '_x005F_', '_x005f_x0041_', '__x0041__', '_X0041_', '_x00', '_x004G_', 'a_b_', '_'];
    const file = await xlsxOf(body(texts.map((city) => ({ city }))));
    expect(table(file).slice(1).map((r) => r[0])).toEqual(texts);
    expect(sheetXml(file)).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/);
    if (!PYTHON) return;
    // a strict XML 1.0 parser (expat) takes the sheet, and its texts, `_xHHHH_` decoded as Excel
    // does (left to right), are the texts sent
    const parsed = spawnSync(PYTHON, ['-c', EXPAT_TEXTS], { input: Buffer.from(sheetXml(file), 'utf8'), encoding: 'utf8' });
    expect(parsed.stderr).toBe('');
    const decoded = (JSON.parse(parsed.stdout) as string[]).map((t) => t.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))));
    expect(decoded).toEqual(['city', ...texts]);
  });

  it('empty string, null and absent; NUL, emoji, lone surrogates, CR/LF', async () => {
    const rows = [{ city: 'first', clicks: 1 }, { city: '', clicks: 2 }, { city: null, clicks: 3 }, { clicks: 4 }, { city: 'a\u0000b', clicks: 5 },
      { city: '🚀 𝄞 👩‍👩‍👧', clicks: 6 }, { city: '\ud800 lone', clicks: 7 }, { city: 'lone \udc00', clicks: 8 }, { city: 'cr\r\nlf\n', clicks: 9 }];
    const file = await xlsxOf(body(rows));
    const back = table(file).slice(1);
    expect(back.map((r) => r[1])).toEqual(rows.map((r) => r.clicks));
    expect(back.map((r) => r[0])).toEqual(['first', '', null, null, 'a\u0000b', '🚀 𝄞 👩‍👩‍👧', utf8('\ud800 lone'), utf8('lone \udc00'), 'cr\r\nlf\n']);
    const book = XLSX.read(file, { type: 'buffer' });
    expect((book.Sheets.report as XLSX.WorkSheet).A3?.t).toBe('s');
  });

  it('a text longer than a cell holds is cut at 32,767 characters, never through an emoji', async () => {
    const long = `${'a'.repeat(32_766)}😀tail`;
    const file = await xlsxOf(body([{ city: long }, { city: `${'é'.repeat(32_767)}x` }]));
    const back = table(file).slice(1).map((r) => r[0] as string);
    expect(back[1]).toBe('é'.repeat(32_767));
    expect(back[0]).toBe('a'.repeat(32_766));
  });

  it('rows longer than a 256 KiB buffer, and rows of 3-byte characters across the buffers\' ends', async () => {
    const wide = Object.fromEntries(Array.from({ length: 12 }, (_, c) => [`f${c}`, `${c}${'€'.repeat(32_000)}`]));
    const rows: Record<string, string>[] = [wide];
    for (let i = 0; i < 3000; i++) rows.push(Object.fromEntries(Array.from({ length: 12 }, (_, c) => [`f${c}`, `${i}€${'€'.repeat((i * 7 + c) % 97)}🚀`])));
    rows.push(wide);
    const file = await xlsxOf(body(rows));
    const back = table(file);
    expect(back[0]).toEqual(Object.keys(wide));
    expect(back.slice(1)).toEqual(rows.map((r) => Object.values(r)));
  });

  it('counts up to 2^53 and amounts of many digits read back as the doubles sent; -0 as 0', async () => {
    const counts = [0, 2147483647, 2147483648, -2147483649, 4294967295, 4294967296, 4294967297, 9007199254740991, -9007199254740991];
    const amounts = ['-0', '-123456789.123456789', '0.1', '-0.000000001', '5e-324', '-1.7976931348623157e308', '1234567890123456789012', '1E+2', '-12.30'];
    const rows = counts.map((c, i) => `{"clicks":${c},"revenueEuro":${amounts[i]}}`);
    const file = await xlsxOf(`{"data":[${rows.join(',')}]}`);
    const back = table(file).slice(1);
    expect(back.map((r) => r[0])).toEqual(counts);
    expect(back.map((r) => r[1])).toEqual(amounts.map((a) => Number(a) + 0));
  });

  it('a count sent as 1.0000000000000001 stops the export, never written as 1; 2.50e1 is 25', async () => {
    await expect(xlsxOf('{"data":[{"clicks":1},{"clicks":1.0000000000000001}]}')).rejects.toThrow(/data\[1\]\.clicks is "1.0000000000000001", not a whole number/);
    expect(table(await xlsxOf('{"data":[{"clicks":2.50e1},{"clicks":-1.5e2}]}'))).toEqual([['clicks'], [25], [-150]]);
  });

  it('DAILY dates and HOURLY instants over Paris\'s DST changes, in Paris wall time', async () => {
    const days = ['2026-03-28', '2026-03-29', '2026-03-30', '2026-10-25', '2026-10-26', '1970-01-01', '1900-03-01', '2099-12-31'];
    const daily = table(await xlsxOf(body(days.map((date) => ({ date })))));
    expect(daily.slice(1).map((r) => r[0])).toEqual(days.map((d) => Date.parse(d) / 86_400_000 + 25_569));
    const hours = ['2026-10-25T02:00:00+02:00', '2026-10-25T02:00:00+01:00', '2026-10-25T02:00:00+01:00', '2026-10-25T00:00:00Z', '2026-03-29T01:00:00+01:00', '2026-03-29T03:00:00+02:00', null, '2026-03-29T03:00:00+02:00'];
    const hourly = table(await xlsxOf(body(hours.map((date, i) => ({ date, clicks: i })))));
    const wall = (h: string) => {
      const t = DateTime.fromISO(h, { zone: 'Europe/Paris' });
      return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute) / 86_400_000 + 25_569;
    };
    expect(hourly.slice(1).map((r) => r[0])).toEqual(hours.map((h) => (h === null ? null : wall(h))));
    expect(hourly.slice(1).map((r) => r[1])).toEqual(hours.map((_, i) => i));
  });

  it('a day its month lacks stops the export, never shifted to the next month', async () => {
    await expect(xlsxOf(body([{ date: '2026-01-01' }, { date: '2026-02-30' }]))).rejects.toThrow(/data\[1\]\.date is "2026-02-30", not a date/);
    await expect(xlsxOf(body([{ date: '2026-01-01T00:00:00Z' }, { date: '2026-04-31T01:00:00+02:00' }]))).rejects.toThrow(/data\[1\]\.date is .*, not a date-time/);
  });

  it('one row; no row (the columns from the request, a header only); --column-case snake', async () => {
    expect(table(await xlsxOf(body([{ city: ' x ', clicks: 1 }])))).toEqual([['city', 'clicks'], [' x ', 1]]);
    const schema = [{ name: 'city', type: 'string' as const }, { name: 'revenueEuro', type: 'double' as const }];
    expect(table(await xlsxOf(body([]), new XlsxRowWriter({ schema })))).toEqual([['city', 'revenueEuro']]);
    const snake = await xlsxOf(body([{ deviceBrand: 'Ünï', revenueEuro: -0.5, eyesTrackings: 4294967297, subSubPublisherId: null }]), undefined, (w) => new SnakeCaseRows(w, false));
    expect(table(snake)).toEqual([['device_brand', 'revenue_euro', 'eyes_trackings', 'sub_sub_publisher_id'], ['Ünï', -0.5, 4294967297, null]]);
  });

  it('rows that fill a sheet exactly leave no empty sheet after it', async () => {
    const file = await xlsxOf(body(Array.from({ length: 4 }, (_, i) => ({ city: `c${i}` }))), new XlsxRowWriter({}, 5));
    expect(XLSX.read(file, { type: 'buffer' }).SheetNames).toEqual(['report']);
    expect(table(file)).toEqual([['city'], ['c0'], ['c1'], ['c2'], ['c3']]);
  });

  it('numbers, booleans and nested JSON in a text column as their JSON text, as text cells; --columns', async () => {
    const values = ['12.50', 'true', 'false', '-0', '1E+2', '{"a":"é","b":[1,null]}', '"12.50"', '"007"'];
    const file = await xlsxOf(`{"data":[${values.map((v, i) => `{"postalcode":${v},"clicks":${i},"city":"x"}`).join(',')}]}`, new XlsxRowWriter({ columns: ['postalcode', 'nowhere', 'clicks'] }));
    expect(table(file)).toEqual([['postalcode', 'nowhere', 'clicks'], ...values.map((v, i) => [v.startsWith('"') ? JSON.parse(v) : v, null, i])]);
    const sheet = XLSX.read(file, { type: 'buffer' }).Sheets.report as XLSX.WorkSheet;
    expect(values.map((_, i) => sheet[`A${i + 2}`]?.t)).toEqual(values.map(() => 's'));
  });

  it('rows over several sheets keep their order and values, the header on each', async () => {
    const rows = Array.from({ length: 9 }, (_, i) => ({ date: i % 2 ? '2026-10-25T02:00:00+01:00' : '2026-10-25T02:00:00+02:00', city: `c${i}` }));
    const file = await xlsxOf(body(rows), new XlsxRowWriter({}, 5));
    const serial = Date.UTC(2026, 9, 25, 2) / 86_400_000 + 25_569;
    expect(table(file)).toEqual([['date', 'city'], ...rows.slice(0, 4).map((r) => [serial, r.city])]);
    expect(table(file, 'report 2')).toEqual([['date', 'city'], ...rows.slice(4, 8).map((r) => [serial, r.city])]);
    expect(table(file, 'report 3')).toEqual([['date', 'city'], [serial, 'c8']]);
  });
});

/** Prints, as JSON, the text of every <t> element of the XML on stdin (Python's expat). */
const EXPAT_TEXTS = [
  'import sys, json, xml.dom.minidom',
  'doc = xml.dom.minidom.parseString(sys.stdin.buffer.read())',
  'print(json.dumps(["".join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE) for t in doc.getElementsByTagName("t")]))',
].join('\n');
