// --column-case snake over the whole catalog: every field a row, a metric or --columns can name
// gets one sensible snake-case name of its own, and a snake-case column is typed as its field.

import { describe, expect, it } from 'vitest';
import { ROW_FIELDS, SIDES, columnNames, metricsOf } from '../../src/report/catalog.js';
import { catalogFieldNames, fieldOfColumn, snakeCase } from '../../src/report/column-case.js';
import { fieldType } from '../../src/report/schema.js';
import { fromBytes, toBytes } from '../../src/export/scanner.js';
import { SNAKE_NAMES } from '../helpers/column-case.js';

const every = [...new Set([...columnNames(SIDES), ...SIDES.flatMap((side) => metricsOf(side))])];

describe('snake case over the catalog', () => {
  it('covers every field of both sides, every metric and date', () => {
    expect(new Set(catalogFieldNames())).toEqual(new Set(every));
    for (const side of SIDES) for (const field of ROW_FIELDS[side]) expect(catalogFieldNames()).toContain(field.name);
  });

  it('gives each field a name of lower-case letters, digits and underscores, one field a name (injective), and the names the docs list', () => {
    const names = every.map(snakeCase);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(new Set(names).size).toBe(every.length);
    // no snake name is another field's camel name: a column's field is never ambiguous
    for (const field of every) {
      const other = every.find((name) => name !== field && name === snakeCase(field));
      expect(other, field).toBeUndefined();
    }
    // the examples, acronyms and digits, and the whole table, written by hand
    expect(snakeCase('revenueEuro')).toBe('revenue_euro');
    expect(snakeCase('eyesTrackings')).toBe('eyes_trackings');
    expect(Object.fromEntries(every.map((field) => [field, snakeCase(field)]))).toEqual(Object.fromEntries(every.map((field) => [field, SNAKE_NAMES[field]])));
  });

  it('splits acronyms and digits as words; leaves snake names and other characters alone', () => {
    expect(snakeCase('CPMValue')).toBe('cpm_value');
    expect(snakeCase('adID')).toBe('ad_id');
    expect(snakeCase('HTTPServer2X')).toBe('http_server_2_x');
    expect(snakeCase('level10Name')).toBe('level_10_name');
    expect(snakeCase('already_snake')).toBe('already_snake');
    expect(snakeCase('foo_Bar')).toBe('foo_bar');
    expect(snakeCase('Ville')).toBe('ville');
    expect(snakeCase('prixTTC€')).toBe('prix_ttc€');
  });

  it('converts a name in the scanner\'s bytes mode to the bytes of the converted text', () => {
    for (const name of ['régionName', 'prixTTC€', 'été2026Total', 'ÉtéFoo', '日本Market']) {
      expect(fromBytes(snakeCase(toBytes(name)))).toBe(snakeCase(name));
    }
  });

  it('types a snake-case column as its field: amounts double, counts int64, date by the time breakdown', () => {
    for (const field of every) expect(fieldOfColumn(snakeCase(field))).toBe(field);
    expect(fieldType('revenue_euro', undefined)).toBe('double');
    expect(fieldType('value_dollar', undefined)).toBe('double');
    expect(fieldType('eyes_trackings', undefined)).toBe('int64');
    expect(fieldType('admin_level_1', undefined)).toBe('string');
    expect(fieldType('date', 'DAILY')).toBe('date');
    expect(fieldType('not_a_field', undefined)).toBe('string');
  });
});
