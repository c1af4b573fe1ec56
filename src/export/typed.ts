// What the typed formats (Parquet, XLSX) share: a fixed set of typed columns, chosen at the first
// row, and each row's values placed in those columns. Unlike a CSV file, neither format can add a
// column once rows are written, so a field first seen later stops the export (never dropped
// silently) unless --columns chose the columns.

import { CliError, EXIT } from '../errors.js';
import { fieldType, timeOfDateValue, type ColumnType } from '../report/schema.js';
import { NewFieldError } from './row-writer.js';
import { Kind, ReportFormatError, fromBytes, holdsValue, sameKeys } from './scanner.js';

export interface TypedColumn {
  name: string;
  type: ColumnType;
}

/** The columns of the first row (or those chosen), typed from the contract; fields the contract
 * does not list are text. The `date` field's type follows its first value (DAILY, HOURLY, MONTHLY). */
function typedColumns(names: string[], keys: string[], values: string[], kinds: Kind[]): TypedColumn[] {
  const at = keys.indexOf('date');
  const time = at >= 0 && kinds[at] === Kind.String ? timeOfDateValue(values[at]) : undefined;
  return names.map((name) => ({ name, type: fieldType(name, time) }));
}

/** Whether a text is ASCII (in bytes mode: needs no decoding). A loop: 20% faster than a regexp
 * on short values (25M values of 5 to 20 chars: 0.50 s against 0.60 s). */
function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 127) return false;
  return true;
}

/** /^-?\d{1,18}$/ (a count a 64-bit integer holds whatever its digits), by hand: 1M rows of 7 counts
 * spent 0.2 s in the regexp and its call. */
function isShortInteger(text: string): boolean {
  const from = text.charCodeAt(0) === 45 ? 1 : 0;
  const digits = text.length - from;
  if (digits < 1 || digits > 18) return false;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** A `YYYY-MM-DD` day's midnight UTC in milliseconds, NaN for a day its month lacks. Date.UTC
 * alone read years 0-99 as 1900-1999 and rolled 2026-02-30 over to March 2nd (Date.parse too). */
function calendarDay(text: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return Number.NaN;
  const [year, month, day] = [Number(match[1]), Number(match[2]) - 1, Number(match[3])];
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month && date.getUTCDate() === day ? date.getTime() : Number.NaN;
}

/** A JSON number with a fraction or an exponent as the digits of the integer it is exactly
 * (`2.50e1` -> `25`), or undefined when it is not whole. By Number(), `1.0000000000000001` was
 * written as 1 and `1e17` refused. Exponents past 40 are not whole counts worth spelling out. */
function wholeDigits(text: string): string | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return undefined;
  const fraction = match[3] ?? '';
  const shift = Number(match[4] ?? 0) - fraction.length;
  const digits = (match[2] as string) + fraction;
  if (shift > 40) return /^0+$/.test(digits) ? '0' : undefined;
  if (shift >= 0) return `${match[1]}${digits}${'0'.repeat(shift)}`;
  const cut = digits.length + shift;
  if (!/^0*$/.test(digits.slice(Math.max(0, cut)))) return undefined;
  return `${match[1]}${cut > 0 ? digits.slice(0, cut) : '0'}`;
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** Places each row's values into fixed columns; missing fields are null. */
export class RowLayout {
  readonly columns: TypedColumn[] = [];
  private readonly index = new Map<string, number>();
  private layoutKeys: string[] = [];
  private slots: number[] = [];
  /** per column, for the current row: the value's text and kind */
  readonly texts: string[] = [];
  readonly kinds: Kind[] = [];
  rows = 0;

  /** `bytes`: the values are in bytes mode (ReportScanner), the keys text; text() answers text */
  constructor(private readonly selected?: string[], private readonly schema?: readonly TypedColumn[], private readonly dropped?: Set<string>, private readonly bytes = false) {}

  get started(): boolean {
    return this.columns.length > 0 || this.rows > 0;
  }

  /** Fixes the columns: those chosen, else the first row's fields. */
  start(keys: string[], values: string[], kinds: Kind[]): void {
    const names = this.selected ?? [...keys];
    this.columns.push(...typedColumns(names, keys, values, kinds));
    names.forEach((name, i) => this.index.set(name, i));
  }

  /** No row came: the columns a row would have had, typed as the request's report (the schema), in
   * the order chosen, if any. `format` names the output for the error when neither is known. */
  startEmpty(format: string): void {
    if (this.columns.length > 0) return;
    if (!this.schema && !this.selected) {
      // a file without columns is no table: DuckDB and Excel refuse it
      throw new CliError(`the report has no rows, and without its request (which \`download\` does not know) the columns of a ${format} file are unknown: nothing was written`, EXIT.network,
        'name the columns with --columns, or export it with `reporting run`, which knows them');
    }
    const types = new Map(this.schema?.map((column) => [column.name, column.type]));
    const names = this.selected ?? [...types.keys()];
    this.columns.push(...names.map((name) => ({ name, type: types.get(name) ?? fieldType(name, undefined) })));
    names.forEach((name, i) => this.index.set(name, i));
  }

  /** Spreads a row over the columns (texts and kinds), in column order. */
  place(keys: string[], values: string[], kinds: Kind[]): void {
    if (this.rows === 0 && this.columns.length === 0) this.start(keys, values, kinds);
    if (!sameKeys(keys, this.layoutKeys)) {
      this.slots = keys.map((key) => {
        const slot = this.index.get(key);
        if (slot !== undefined) return slot;
        if (this.selected) return -1;
        throw new NewFieldError(key, this.rows);
      });
      this.layoutKeys = keys; // never changed once handed on (RowHandler): compared by identity next
    }
    const width = this.columns.length;
    if (this.kinds.length !== width) {
      this.texts.length = width;
      this.kinds.length = width;
    }
    this.kinds.fill(Kind.Null);
    for (let k = 0; k < keys.length; k++) {
      const slot = this.slots[k] as number;
      if (slot < 0) {
        // a field left out that held a value: named at the end of the run
        if (holdsValue(values[k] as string, kinds[k] as Kind)) this.dropped?.add(keys[k] as string);
        continue;
      }
      this.texts[slot] = values[k] as string;
      this.kinds[slot] = kinds[k] as Kind;
    }
    this.rows++;
  }

  private fail(column: number, what: string): never {
    const name = this.columns[column]?.name ?? '?';
    const text = this.texts[column] as string;
    throw new ReportFormatError(`data[${this.rows - 1}].${name} is ${JSON.stringify(this.bytes ? fromBytes(text) : text)}, ${what}`);
  }

  /** The value of a count column as an integer's text (null for null). */
  integer(column: number): string | null {
    const kind = this.kinds[column];
    if (kind === Kind.Null) return null;
    const text = this.texts[column] as string;
    if (kind === Kind.Number) {
      if (isShortInteger(text)) return text;
      if (/^-?\d+$/.test(text)) {
        const value = BigInt(text);
        if (value >= INT64_MIN && value <= INT64_MAX) return text;
        return this.fail(column, 'out of the range of a 64-bit integer');
      }
      const whole = wholeDigits(text);
      if (whole !== undefined) {
        const value = BigInt(whole);
        if (value >= INT64_MIN && value <= INT64_MAX) return value.toString();
        return this.fail(column, 'out of the range of a 64-bit integer');
      }
    }
    return this.fail(column, 'not a whole number (a count is written as a 64-bit integer)');
  }

  /** The value of an amount column (null for null): a double, as Parquet's DOUBLE and a workbook's
   * number cell hold it. One that a double cannot hold is an error, never Infinity or a silent 0;
   * past 15 to 17 significant digits a double rounds (the docs' format table says so). */
  number(column: number): number | null {
    const kind = this.kinds[column];
    if (kind === Kind.Null) return null;
    if (kind !== Kind.Number) return this.fail(column, 'not a number');
    const text = this.texts[column] as string;
    const value = Number(text);
    if (!Number.isFinite(value)) return this.fail(column, 'out of the range of a double (the column\'s type): it would be written as Infinity');
    if (value === 0 && /[1-9]/.test(text.replace(/[eE].*$/, ''))) return this.fail(column, 'too small for a double (the column\'s type): it would be written as 0');
    return value;
  }

  /** A text column: strings as they are, numbers and booleans as their JSON text, nested values as compact JSON. */
  text(column: number): string | null {
    if (this.kinds[column] === Kind.Null) return null;
    const text = this.texts[column] as string;
    return this.bytes && !isAscii(text) ? fromBytes(text) : text;
  }

  /** A text column's value as received: in bytes mode, its UTF-8 one char a byte. */
  received(column: number): string | null {
    return this.kinds[column] === Kind.Null ? null : (this.texts[column] as string);
  }

  /** A DAILY `date`: days since 1970-01-01. */
  day(column: number): number | null {
    if (this.kinds[column] === Kind.Null) return null;
    const text = this.texts[column] as string;
    const ms = calendarDay(text);
    if (this.kinds[column] !== Kind.String || Number.isNaN(ms)) return this.fail(column, 'not a date (YYYY-MM-DD) like the first row\'s');
    return ms / 86_400_000;
  }

  /** An HOURLY `date`: the instant, in milliseconds since the epoch. */
  instant(column: number): number | null {
    if (this.kinds[column] === Kind.Null) return null;
    const text = this.texts[column] as string;
    const ms = timeOfDateValue(text) === 'HOURLY' && !Number.isNaN(calendarDay(text.slice(0, 10))) ? Date.parse(text) : Number.NaN;
    if (this.kinds[column] !== Kind.String || Number.isNaN(ms)) return this.fail(column, 'not a date-time with an offset like the first row\'s');
    return ms;
  }
}
