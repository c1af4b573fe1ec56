// Row writers: CSV (RFC 4180: csv-stringify's output, the common cells encoded here) and NDJSON.
// Each buffers at most one batch; the caller drains it to the sink after every chunk of the
// download, so memory stays flat whatever the size of the report.

import { stringify } from 'csv-stringify/sync';
import { padRecords } from './grow.js';
import { RowSelector } from './select.js';
import { NewFieldError, type HeaderGrowth, type RowWriter } from './row-writer.js';
import { Kind, fromBytes, holdsValue, sameKeys, toBytes } from './scanner.js';
import type { Sink } from './sink.js';
import type { TypedColumn } from './typed.js';
import type { ColumnCase } from '../report/column-case.js';

// export.ts (being rewritten) imports these from here
export { NewFieldError, type RowWriter };

export interface CsvOptions {
  delimiter: string;
  bom: boolean;
  /** BOM, `;`, CRLF, decimal comma, formulas made inert */
  excel: boolean;
  /** select and order columns; other fields are left out on purpose */
  columns?: string[];
  /** the columns this request's report has, typed (only `run` knows the request): what an empty
   * report is written with, so that it has the columns and types of a non-empty one */
  schema?: readonly TypedColumn[];
  /** filled by the writers: the fields outside `columns` that held a value (not null, not "") in
   * some row. Shared by every writer of a run, which names them at its end: never dropped silently */
  dropped?: Set<string>;
  /** --column-case: the names the columns get. `columns` and `schema` keep the fields' names;
   * makeWriter (export.ts) hands its writers rows, columns and schema in the case asked for */
  columnCase?: ColumnCase;
}

/** A cell with its own csv-stringify options (passed through by `cast.object`): a negative number
 * in --excel mode, whose `-` `escape_formulas` would take for a formula start; and the empty cell
 * of a one-column record, written `""` because an empty line is no record at all to most readers. */
interface CellWithOptions {
  value: string;
  escape_formulas?: false;
  quoted_empty?: true;
}

/** The characters after which a text cell is not written as it is (csv-stringify's rules):
 * U+FEFF first (`quoted_match`), and with --excel the formula starts of `escape_formulas`. */
const FIRST_CAREFUL = '\uFEFF';
/** U+FEFF in bytes mode: its UTF-8, one char a byte */
const BOM_BYTES = '\u00EF\u00BB\u00BF';
const FORMULA_STARTS = '=+-@\t\r\uFF1D\uFF0B\uFF0D\uFF20';

function classOf(chars: string): string {
  return [...chars].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
}

/**
 * csv-stringify's output for a record of text cells, written here: the library costs about 40% of
 * a `download -o out.csv` (it casts, checks and re-reads its options for every cell), and most
 * cells need nothing done. A cell that does is encoded by the same rules as the library's (a
 * formula start gets `'`, quotes are doubled, a cell with the delimiter, a quote, a CR or LF, or a
 * leading U+FEFF is quoted); what these rules do not cover (a cell with its own options, a
 * delimiter of two UTF-16 units) goes to csv-stringify itself. Measured, and checked byte for byte
 * against csv-stringify: test/bench/RESULTS.md, "CSV encoding".
 */
export class CsvRecordEncoder {
  /** undefined: every record goes to csv-stringify */
  private readonly careful?: RegExp;
  /** a number's text (digits, `.`, `-`, `+`, `e`) never needs quoting with this delimiter */
  private readonly plainNumbers: boolean;

  /** `bytes`: cells hold one char a byte of UTF-8 (the scanner's bytes mode; not with --excel):
   * U+FEFF first is then its three bytes */
  constructor(private readonly delimiter: string, private readonly recordDelimiter: string, private readonly excel: boolean, private readonly bytes = false) {
    if (bytes) this.careful = new RegExp(`[${classOf(`${delimiter}"\r\n`)}]|^${BOM_BYTES}`);
    else if (delimiter.length === 1) {
      this.careful = new RegExp(`[${classOf(`${delimiter}"\r\n`)}]|^[${classOf(excel ? FIRST_CAREFUL + FORMULA_STARTS : FIRST_CAREFUL)}]`);
    }
    this.plainNumbers = !excel && !/[0-9.eE+-]/.test(delimiter);
  }

  /** every record of text cells gets its line here (none goes to csv-stringify) */
  get writesAll(): boolean {
    return this.careful !== undefined;
  }

  /** The record's line with its record delimiter, or undefined when csv-stringify must write it.
   * `kinds`, when given, are the cells' kinds: a number's cell is written as it is. */
  line(cells: readonly (string | CellWithOptions)[], kinds?: readonly Kind[]): string | undefined {
    const careful = this.careful;
    if (!careful) return undefined;
    const plainNumbers = kinds !== undefined && this.plainNumbers;
    const delimiter = this.delimiter;
    let line = '';
    for (let i = 0; i < cells.length; i++) {
      let cell = cells[i];
      if (typeof cell !== 'string') return undefined;
      if (!(plainNumbers && kinds[i] === Kind.Number) && careful.test(cell)) cell = this.encode(cell);
      line = i === 0 ? cell : line + delimiter + cell;
    }
    return line + this.recordDelimiter;
  }

  /** csv-stringify's steps for a text cell, in its order: what to do is decided on the cell as
   * received; then the formula guard, the doubled quotes, the enclosing quotes. */
  private encode(cell: string): string {
    const quote = cell.includes('"');
    const enclose = quote || cell.includes(this.delimiter) || cell.includes('\n') || cell.includes('\r') || (this.bytes ? cell.startsWith(BOM_BYTES) : cell.charCodeAt(0) === 0xfeff);
    let text = cell;
    if (this.excel && FORMULA_STARTS.includes(cell[0] as string)) text = `'${text}`;
    if (quote) text = text.replaceAll('"', '""');
    return enclose ? `"${text}"` : text;
  }
}

export class CsvWriter implements RowWriter {
  private header?: string[];
  private readonly index = new Map<string, number>();
  /** keys of the previous row, and where each lands in the header */
  private layoutKeys: string[] = [];
  private layoutSlots: number[] = [];
  /** the layout's slots are the header's columns in order (and not --excel) */
  private identity = false;
  /** records for csv-stringify, after what `pending` holds */
  private batch: (string | CellWithOptions)[][] = [];
  private pending = '';
  private readonly encoder: CsvRecordEncoder;
  private rowCount = 0;
  private readonly epochs: HeaderGrowth['epochs'] = [];
  private readonly stringifyOptions: Parameters<typeof stringify>[1];

  /** the rows come from a scanner in bytes mode, and what is written is bytes (see ReportScanner) */
  readonly byteRows: boolean;

  /** `bytesOk`: the rows may come in bytes mode (the caller's scanner follows `bytes`) */
  constructor(private readonly options: CsvOptions, private readonly canGrow: boolean, bytesOk = false) {
    this.stringifyOptions = {
      delimiter: options.excel && options.delimiter === ',' ? ';' : options.delimiter,
      record_delimiter: options.excel ? 'windows' : 'unix',
      // csv-stringify quotes on the configured record delimiter only: a lone CR, or a LF in CRLF
      // mode, would split the record for other readers (Python's csv, DuckDB). A cell starting
      // with U+FEFF is quoted too: first in the file, readers would take it for a BOM and drop it.
      quoted_match: [/[\r\n]/, /^\uFEFF/],
      // --excel: text cells, header cells included, that begin with = + - @ (ASCII or full width),
      // a tab or a CR get a leading apostrophe
      escape_formulas: options.excel,
      cast: { object: (value: object) => value as unknown as string },
    };
    const delimiter = this.stringifyOptions.delimiter as string;
    // --excel's formula starts and a delimiter beyond ASCII are text rules: not in bytes mode
    this.byteRows = bytesOk && !options.excel && delimiter.length === 1 && delimiter.charCodeAt(0) < 0x80;
    this.encoder = new CsvRecordEncoder(delimiter, options.excel ? '\r\n' : '\n', options.excel, this.byteRows);
    if (options.bom || options.excel) this.pending = this.byteRows ? BOM_BYTES : '\uFEFF';
    if (options.columns) this.setHeader(this.byteRows ? options.columns.map(toBytes) : options.columns);
  }

  get rows(): number {
    return this.rowCount;
  }

  private setHeader(header: string[]): void {
    this.header = header;
    header.forEach((name, i) => this.index.set(name, i));
    this.push([...header]);
  }

  private push(cells: (string | CellWithOptions)[]): void {
    if (cells.length === 1 && cells[0] === '') cells = [{ value: '', quoted_empty: true }];
    const line = this.encoder.line(cells);
    if (line === undefined) this.batch.push(cells);
    else this.pushLine(line);
  }

  private pushLine(line: string): void {
    if (this.batch.length) this.stringifyBatch();
    this.pending += line;
  }

  private stringifyBatch(): void {
    this.pending += stringify(this.batch, this.stringifyOptions);
    this.batch = [];
  }

  private slotsFor(keys: string[]): number[] {
    const header = this.header as string[];
    const slots = new Array<number>(keys.length);
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k] as string;
      let slot = this.index.get(key);
      if (slot === undefined) {
        if (this.options.columns) slot = -1; // not selected
        else if (!this.canGrow) throw new NewFieldError(this.byteRows ? fromBytes(key) : key, this.rowCount);
        else {
          // rows before this one keep the width they were written with; several new fields in
          // one row make one stretch
          if (this.epochs[this.epochs.length - 1]?.untilRow !== this.rowCount) {
            this.epochs.push({ untilRow: this.rowCount, columns: header.length });
          }
          slot = header.length;
          header.push(key);
          this.index.set(key, slot);
        }
      }
      slots[k] = slot;
    }
    return slots;
  }

  row(keys: string[], values: string[], kinds: Kind[]): void {
    if (!this.header) this.setHeader([...keys]);
    if (!sameKeys(keys, this.layoutKeys)) {
      this.layoutSlots = this.slotsFor(keys);
      this.layoutKeys = keys; // never changed once handed on (RowHandler): compared by identity next
      this.identity = !this.options.excel && isIdentity(this.layoutSlots, (this.header as string[]).length);
    }
    const header = this.header as string[];
    const excel = this.options.excel;
    let cells: (string | CellWithOptions)[];
    if (this.identity && header.length === values.length && values.length > 1 && this.encoder.writesAll) {
      // the common case: the row's own cells, in the header's order; numbers need no check
      this.pushLine(this.encoder.line(values, kinds) as string);
      this.rowCount++;
      return;
    }
    if (!excel && isIdentity(this.layoutSlots, header.length)) cells = values;
    else {
      cells = new Array<string | CellWithOptions>(header.length).fill('');
      for (let k = 0; k < values.length; k++) {
        const slot = this.layoutSlots[k] as number;
        if (slot < 0) {
          if (holdsValue(values[k] as string, kinds[k] as Kind)) this.noteDropped(keys[k] as string);
          continue;
        }
        const value = values[k] as string;
        if (excel && kinds[k] === Kind.Number) {
          const decimal = value.replace('.', ',');
          cells[slot] = decimal.startsWith('-') ? { value: decimal, escape_formulas: false } : decimal;
        } else cells[slot] = value;
      }
    }
    this.push(cells);
    this.rowCount++;
  }

  /** the fields left out seen so far, as the rows have them (in bytes mode: bytes) */
  private readonly droppedSeen = new Set<string>();

  /** A field left out that held a value, named once as text (converting every row's was 40% of a
   * run's time in bytes mode). */
  private noteDropped(key: string): void {
    if (this.droppedSeen.has(key)) return;
    this.droppedSeen.add(key);
    this.options.dropped?.add(this.byteRows ? fromBytes(key) : key);
  }

  take(): string | Buffer {
    if (this.batch.length) this.stringifyBatch();
    const text = this.pending;
    this.pending = '';
    // bytes mode: each char is a byte of the output's UTF-8
    return this.byteRows ? Buffer.from(text, 'latin1') : text;
  }

  finish(): string | Buffer {
    // an empty report: the header it would have had
    if (!this.header && this.options.schema) this.setHeader(this.options.schema.map((column) => (this.byteRows ? toBytes(column.name) : column.name)));
    return this.take();
  }

  /** How the header grew, if it did after rows were written. */
  growth(): HeaderGrowth | undefined {
    if (this.epochs.length === 0 || !this.header) return undefined;
    return { header: this.header, epochs: this.epochs };
  }

  /** The header line, as written (text, in bytes mode too). */
  headerLine(header: string[]): string {
    return stringify([this.byteRows ? header.map(fromBytes) : header], this.stringifyOptions);
  }

  /** A header that grew after rows were written: the file gets the full header, and earlier rows
   * empty cells for the new fields. */
  async complete(sink: Sink): Promise<void> {
    const growth = this.growth();
    if (!growth || !sink.rewrite) return;
    const headerLine = this.headerLine(growth.header);
    await sink.rewrite((input) => padRecords(input, growth, headerLine, (this.stringifyOptions?.delimiter ?? ',') as string));
  }
}

function isIdentity(slots: number[], width: number): boolean {
  if (slots.length !== width) return false;
  for (let i = 0; i < slots.length; i++) if (slots[i] !== i) return false;
  return true;
}

export class NdjsonWriter implements RowWriter {
  private pending: string[] = [];
  rows = 0;
  /** with --columns: the chosen fields, else the rows as received */
  private readonly selector?: RowSelector;

  /** `byteRows`: rows in the scanner's bytes mode, written back as the body's own bytes (no UTF-8
   * decoded, then encoded again: 1M rows 1.20x the CSV time before, test/bench/RESULTS.md) */
  constructor(options: Pick<CsvOptions, 'columns' | 'dropped'> = {}, readonly byteRows = false) {
    if (options.columns) this.selector = new RowSelector(options.columns, options.dropped, byteRows);
  }

  row(keys: string[], values: string[], kinds: Kind[], raw: string): void {
    this.pending.push(this.selector ? this.selector.json(keys, values, kinds) : raw);
    this.rows++;
  }

  take(): string | Buffer {
    if (this.pending.length === 0) return '';
    const text = `${this.pending.join('\n')}\n`;
    this.pending = [];
    return this.byteRows ? Buffer.from(text, 'latin1') : text;
  }

  finish(): string | Buffer {
    return this.take();
  }
}

/** For JSON output the body is copied as received: this only counts rows while the scanner checks it. */
export class CountingWriter implements RowWriter {
  rows = 0;
  /** the values are not read: bytes mode when the caller allows it */
  constructor(readonly byteRows = false) {}
  row(): void {
    this.rows++;
  }
  take(): string {
    return '';
  }
  finish(): string {
    return '';
  }
}
