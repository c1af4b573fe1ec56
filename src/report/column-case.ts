// --column-case: the names the columns of an export get. `camel` keeps the contract's field names
// (`revenueEuro`, as the API sends them); `snake` writes them as warehouses want them
// (`revenue_euro`, no quoting in Postgres). Pure functions over the catalog: help and completion
// read COLUMN_CASES without loading anything more.

import { ROW_FIELDS, SIDES, metricsOf } from './catalog.js';

export const COLUMN_CASES = ['camel', 'snake'] as const;
export type ColumnCase = (typeof COLUMN_CASES)[number];

/**
 * A field name in snake case: a word starts at an upper-case letter after a lower-case letter or a
 * digit (`revenueEuro` -> `revenue_euro`), at the last capital of an acronym followed by a word
 * (`CPMValue` -> `cpm_value`), and at a digit after a letter (`adminLevel1` -> `admin_level_1`);
 * ASCII letters are lower-cased. Other characters are left as they are, so that a name in the
 * scanner's bytes mode (one char a byte of UTF-8) converts to the bytes of the converted text.
 */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1_')
    .replace(/([A-Za-z])(?=[0-9])/g, '$1_')
    .replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}

/** A column's name in the case asked for. */
export const columnName = (name: string, columnCase: ColumnCase | undefined): string => (columnCase === 'snake' ? snakeCase(name) : name);

/** Every field name the catalog knows: the row fields of both sides, `date`, the metrics. */
export function catalogFieldNames(): string[] {
  return [...new Set(['date', ...SIDES.flatMap((side) => [...ROW_FIELDS[side].map((field) => field.name), ...metricsOf(side)])])];
}

let camelOf: Map<string, string> | undefined;

/** The catalog's field whose snake-case name this is (`revenue_euro` -> `revenueEuro`), or the name
 * itself: what types a column of a snake-case export (the test over the catalog holds the mapping
 * to one field a name). */
export function fieldOfColumn(name: string): string {
  camelOf ??= new Map(catalogFieldNames().map((field) => [snakeCase(field), field]));
  return camelOf.get(name) ?? name;
}
