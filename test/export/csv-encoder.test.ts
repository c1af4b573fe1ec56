// The CSV cells encoded by hand must be csv-stringify's bytes exactly: arbitrary cells (every
// character csv-stringify treats apart, at the start, inside and at the end of a cell), every
// delimiter --delimiter accepts, with and without --excel, against csv-stringify configured as the
// CSV writer configures it.

import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CsvRecordEncoder, CsvWriter } from '../../src/export/writers.js';
import { Kind } from '../../src/export/scanner.js';

const SPECIAL = ['"', '""', ',', ';', '\t', '|', "'", ' ', '\r', '\n', '\r\n', '\uFEFF', '=', '+', '-', '@', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20',
  '😀', '\uD83D', 'é', '\u2028', 'a', '0', '1.5', 'x'];
const cell = fc.array(fc.oneof(fc.constantFrom(...SPECIAL), fc.string({ maxLength: 3 })), { maxLength: 5 }).map((parts) => parts.join(''));
const DELIMITERS = [',', ';', '\t', '|', "'", ' ', 'x', '-', '=', '\\', ']', '^', '😀', '\u2028'];

function reference(delimiter: string, excel: boolean) {
  return (records: string[][]) => stringify(records, {
    delimiter,
    record_delimiter: excel ? 'windows' : 'unix',
    quoted_match: [/[\r\n]/, /^\uFEFF/],
    escape_formulas: excel,
    cast: { object: (value: object) => value as unknown as string },
  });
}

describe('CsvRecordEncoder', () => {
  it('writes what csv-stringify writes, for any text cells and delimiter', () => {
    fc.assert(fc.property(fc.array(cell, { minLength: 1, maxLength: 6 }), fc.constantFrom(...DELIMITERS), fc.boolean(), (cells, delimiter, excel) => {
      const encoder = new CsvRecordEncoder(delimiter, excel ? '\r\n' : '\n', excel);
      const expected = reference(delimiter, excel)([cells]);
      const line = encoder.line(cells);
      // a delimiter of two UTF-16 units is left to csv-stringify
      if (delimiter.length > 1) expect(line).toBeUndefined();
      else expect(line).toBe(expected);
    }), { numRuns: 3000 });
  });

  it('leaves a cell with its own options to csv-stringify', () => {
    const encoder = new CsvRecordEncoder(';', '\r\n', true);
    expect(encoder.line(['a', { value: '-1,5', escape_formulas: false }])).toBeUndefined();
    expect(encoder.line(['=1', '-2', 'a"b', 'c;d', '\uFEFFe'])).toBe(`'=1;'-2;"a""b";"c;d";"\uFEFFe"\r\n`);
  });
});

describe('CsvWriter', () => {
  it('writes the bytes of csv-stringify for whole reports, rows going either way mixed', () => {
    const value = fc.oneof(
      cell.map((text) => ({ text, kind: Kind.String })),
      fc.constantFrom('0', '-1.25', '1.10', '-0.5e-7', '3').map((text) => ({ text, kind: Kind.Number })),
    );
    fc.assert(fc.property(fc.array(fc.array(value, { minLength: 2, maxLength: 2 }), { minLength: 1, maxLength: 8 }), fc.boolean(), fc.constantFrom(',', ';', '\t', '😀', '.', '-', 'e', 'E', '+', '0', '7'), (rows, excel, delimiter) => {
      const csv = { delimiter: excel ? ';' : delimiter, bom: false, excel };
      const writer = new CsvWriter(csv, true);
      let written = '';
      for (const row of rows) {
        writer.row(['a', 'b'], row.map((v) => v.text), row.map((v) => v.kind));
        if (row[0]?.text === '0') written += writer.take();
      }
      written += writer.finish();
      const records = [['a', 'b'], ...rows.map((row) => row.map((v) => (excel && v.kind === Kind.Number
        ? (v.text.startsWith('-') ? { value: v.text.replace('.', ','), escape_formulas: false } : v.text.replace('.', ','))
        : v.text)))];
      expect(written).toBe((excel ? '\uFEFF' : '') + reference(csv.delimiter, excel)(records as string[][]));
    }), { numRuns: 1000 });
  });
});
