// The scanner's bytes mode (UTF-8 checked, not decoded; CSV written back as the same bytes) against
// the decoding path: the same CSV bytes for any body, however it is cut into chunks, whatever its
// text holds: any Unicode, escapes (\u ones included), a BOM, and bytes that are not UTF-8 (made
// U+FFFD by both). Both are then read back by csv-parse.

import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReportScanner } from '../../src/export/scanner.js';
import { RowSelector } from '../../src/export/select.js';
import { CsvWriter, NdjsonWriter, type CsvOptions } from '../../src/export/writers.js';

function csvOf(body: Buffer, cuts: number[], bytes: boolean, options: Partial<CsvOptions> = {}): Buffer {
  const writer = new CsvWriter({ delimiter: ',', bom: false, excel: false, ...options }, true, bytes);
  expect(writer.byteRows).toBe(bytes && !options.excel && (options.delimiter ?? ',').charCodeAt(0) < 0x80);
  return written(writer, body, cuts);
}

/** The body scanned into `writer` in pieces cut at `cuts`, and what the writer wrote, as bytes. */
function written(writer: CsvWriter | NdjsonWriter, body: Buffer, cuts: number[]): Buffer {
  const scanner = new ReportScanner(writer, undefined, writer.byteRows);
  const out: Buffer[] = [];
  const take = (text: string | Buffer) => out.push(Buffer.isBuffer(text) ? text : Buffer.from(text));
  let at = 0;
  for (const cut of [...cuts.filter((c) => c < body.length).sort((a, b) => a - b), body.length]) {
    scanner.push(body.subarray(at, cut));
    take(writer.take());
    at = cut;
  }
  scanner.end();
  take(writer.finish());
  return Buffer.concat(out);
}

const TEXT = ['a', 'é', 'Café "Le Zinc"', '–', '✨', '😀', '日本', ',', '"', '\n', '\r\n', '\\', '\uFEFF', 'x\u2028y', '\u0000'];
const text = fc.array(fc.oneof(fc.constantFrom(...TEXT), fc.string({ maxLength: 4 }), fc.string({ unit: 'binary', maxLength: 3 })), { maxLength: 4 }).map((parts) => parts.join(''));
const row = fc.record({ name: text, city: text, n: fc.integer(), v: fc.constantFrom('1.10', '-0.5e-7', '12345678901234567890', 'null') });

/** The JSON of rows, each string written raw or with some characters as \u escapes. */
function bodyOf(rows: { name: string; city: string; n: number; v: string }[], escape: boolean, bom: boolean): Buffer {
  const str = (value: string) => {
    const json = JSON.stringify(value);
    return escape ? json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
  };
  const json = `{"data":[${rows.map((r) => `{"name":${str(r.name)},"city":${str(r.city)},"n":${r.n},"v":${r.v}}`).join(',')}],"summary":{"tz":"Europe/Paris","note":"Météo"}}`;
  return Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), Buffer.from(json)]);
}

describe('bytes mode', () => {
  it('writes the same CSV bytes as decoding would, for any text, escapes, BOM and chunk cuts', () => {
    fc.assert(fc.property(fc.array(row, { maxLength: 6 }), fc.boolean(), fc.boolean(), fc.array(fc.nat({ max: 400 }), { maxLength: 6 }), fc.constantFrom(',', ';', '\t', '|'), fc.boolean(),
      (rows, escape, bom, cuts, delimiter, withBom) => {
        const body = bodyOf(rows, escape, bom);
        const options = { delimiter, bom: withBom };
        const expected = csvOf(body, cuts, false, options);
        expect(csvOf(body, cuts, true, options).equals(expected)).toBe(true);
        if (rows.length) {
          const records = parse(expected, { bom: true, delimiter, relax_column_count: false }) as string[][];
          expect(records.length).toBe(rows.length + 1);
        }
      }), { numRuns: 1500 });
  });

  it('rows chosen by --columns as JSON (a spool, NDJSON): the same bytes, the same fields named as left out', () => {
    const jsonOf = (body: Buffer, cuts: number[], bytes: boolean, columns: string[]) => {
      const dropped = new Set<string>();
      const selector = new RowSelector(columns, dropped, bytes);
      const lines: string[] = [];
      const scanner = new ReportScanner({ row: (keys, values, kinds) => lines.push(selector.json(keys, values, kinds)) }, undefined, bytes);
      let at = 0;
      for (const cut of [...cuts.filter((c) => c < body.length).sort((a, b) => a - b), body.length]) {
        scanner.push(body.subarray(at, cut));
        at = cut;
      }
      scanner.end();
      return { out: Buffer.from(lines.join('\n'), bytes ? 'latin1' : 'utf8'), dropped: [...dropped], summary: scanner.members.summary };
    };
    fc.assert(fc.property(fc.array(row, { maxLength: 5 }), fc.boolean(), fc.array(fc.nat({ max: 300 }), { maxLength: 4 }), (rows, escape, cuts) => {
      // a field name beyond ASCII, chosen or left out
      const body = Buffer.from(bodyOf(rows, escape, false).toString().replaceAll('"name":', '"naïve":'));
      for (const columns of [['city', 'v', 'naïve'], ['v', 'city']]) {
        const text = jsonOf(body, cuts, false, columns);
        const bytes = jsonOf(body, cuts, true, columns);
        expect(bytes.out.equals(text.out)).toBe(true);
        expect(bytes.dropped).toEqual(text.dropped);
        if (rows.some((r) => r.name !== '') && !columns.includes('naïve')) expect(bytes.dropped).toContain('naïve');
        expect(bytes.summary).toEqual({ tz: 'Europe/Paris', note: 'Météo' });
      }
    }), { numRuns: 500 });
  });

  it('NDJSON of the rows as sent (download, every field): the same bytes as decoding would, each line JSON.parse-able', () => {
    const ndjsonOf = (body: Buffer, cuts: number[], bytes: boolean) => written(new NdjsonWriter({}, bytes), body, cuts);
    fc.assert(fc.property(fc.array(row, { maxLength: 6 }), fc.boolean(), fc.boolean(), fc.array(fc.nat({ max: 400 }), { maxLength: 6 }), fc.boolean(), (rows, escape, bom, cuts, spaced) => {
      // a server that puts whitespace (line breaks too) between tokens: each line is still one row
      const spacedBody = () => Buffer.from(`{ "data" : [\n${rows.map((r) => `  { "name" :\n ${JSON.stringify(r.name)} ,\r\n "city":${JSON.stringify(r.city)},\t"n" : ${r.n} , "v":${r.v} }`).join(' ,\n')}\n] }`);
      const body = spaced ? spacedBody() : bodyOf(rows, escape, bom);
      const expected = ndjsonOf(body, cuts, false);
      expect(ndjsonOf(body, cuts, true).equals(expected)).toBe(true);
      const lines = expected.toString('utf8').split('\n').filter((line) => line !== '');
      expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual(rows.map((r) => ({ ...r, v: JSON.parse(r.v) as unknown })));
    }), { numRuns: 1000 });
    // bytes that are not UTF-8: U+FFFD in both modes
    const body = Buffer.concat([Buffer.from('{"data":[{"a":"x'), Buffer.from([0xff, 0xc3]), Buffer.from('y","b":"é"}]}')]);
    for (let cut = 0; cut <= body.length; cut++) expect(ndjsonOf(body, [cut], true).equals(ndjsonOf(body, [cut], false))).toBe(true);
    expect(ndjsonOf(body, [], true).toString()).toBe('{"a":"x\uFFFD\uFFFDy","b":"é"}\n'.replace(/\\uFFFD/g, '\uFFFD'));
  });

  it('bytes that are not UTF-8 become U+FFFD, as the decoder makes them, wherever the chunks are cut', () => {
    const bad = [[0xff], [0xc3], [0xe2, 0x80], [0xf0, 0x9f, 0x98], [0x80, 0x80], [0xed, 0xa0, 0x80], [0xc0, 0xaf]];
    for (const bytes of bad) {
      // a U+FEFF inside a value, in the piece that is not UTF-8, stays (it is a character there)
      const body = Buffer.concat([Buffer.from('{"data":[{"a":"x\uFEFF'), Buffer.from(bytes), Buffer.from('y","b":"é'), Buffer.from(bytes), Buffer.from('"}]}')]);
      for (let cut = 0; cut <= body.length; cut++) {
        const expected = csvOf(body, [cut], false);
        expect(csvOf(body, [cut], true).equals(expected), `${Buffer.from(bytes).toString('hex')} cut at ${cut}`).toBe(true);
        expect(expected.toString()).toContain('\uFFFD');
      }
    }
    // a body ending in the middle of a character: a truncated report, in both modes
    const cutShort = Buffer.from('{"data":[{"a":"é"}]}').subarray(0, 16);
    expect(() => csvOf(cutShort, [], true)).toThrow(/ended early/);
  });

  it('names fields and quotes the body in its messages as text, not bytes', () => {
    const writer = new CsvWriter({ delimiter: ',', bom: false, excel: false, columns: ['météo'] }, false, true);
    const dropped = new Set<string>();
    const selecting = new CsvWriter({ delimiter: ',', bom: false, excel: false, columns: ['météo'], dropped }, true, true);
    const body = Buffer.from('{"data":[{"météo":"☀️","città":"Roma"}]}');
    const scanner = new ReportScanner(selecting, undefined, true);
    scanner.push(body);
    scanner.end();
    expect(Buffer.from(selecting.finish() as Buffer).toString()).toBe('météo\n☀️\n');
    expect([...dropped]).toEqual(['città']);
    const bad = new ReportScanner(writer, undefined, true);
    expect(() => bad.push(Buffer.from('{"data":[{"météo":01}]}'))).toThrow('data[0].météo: 01 is not a JSON number');
  });
});
