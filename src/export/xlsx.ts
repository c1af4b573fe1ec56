// XLSX: a workbook written as it streams. Strings are inline text cells (postal codes keep their
// zeros; `=SUM(...)` stays text, nothing to guard), counts and amounts are numbers, `date` is a
// real date (DAILY) or date-time in Paris wall time (HOURLY), the header row is bold and frozen.
//
// The sheet XML is written here, row by row into UTF-8 buffers, and zipped by fflate (the ZIP container) with Node's native zlib
// doing the deflate. Measured on 200,000 buyer rows (test/bench/RESULTS.md): exceljs's streaming
// WorkbookWriter took 13.5 s and 368 MB, excelts 30 s and 469 MB; this takes about 5 s and 120 MB.
//
// A sheet holds 1,048,576 rows: past that the rows continue on a new sheet ("report 2", ...) with
// the same header, so no row is lost and nothing has to be known up front.

import { crc32, createDeflateRaw, type DeflateRaw } from 'node:zlib';
import { Zip, ZipDeflate, strToU8, type AsyncFlateStreamHandler, type ZipInputFile } from 'fflate';
import { DateTime } from 'luxon';
import type { Kind } from './scanner.js';
import { RowLayout, type TypedColumn } from './typed.js';
import type { RowWriter } from './row-writer.js';
import type { CsvOptions } from './writers.js';
import { PARIS_ZONE } from '../paris-zone.js';
import { boundYoungGeneration } from '../io/young-generation.js';

/** Excel's rows per sheet, the header included. */
const SHEET_ROWS = 1_048_576;
/** Excel refuses longer cell text. */
const CELL_TEXT = 32_767;
/** Excel's day 0 is 1899-12-30: 1970-01-01 is day 25569. */
const EPOCH_SERIAL = 25_569;

/** A sheet's XML as UTF-8, written row by row into buffers of XML_CHUNK bytes: joining the rows'
 * strings and encoding the result took a third of an export's time. */
const XML_CHUNK = 256 * 1024;

class XmlChunks {
  private buf = Buffer.allocUnsafe(XML_CHUNK);
  private at = 0;
  full: Buffer[] = [];

  add(text: string): void {
    // a UTF-16 unit is at most 3 bytes of UTF-8
    if (this.at + text.length * 3 > this.buf.length) {
      this.close();
      if (text.length * 3 > XML_CHUNK) {
        this.full.push(Buffer.from(text, 'utf8'));
        return;
      }
    }
    this.at += this.buf.write(text, this.at, 'utf8');
  }

  /** the chunk being filled goes to `full` */
  close(): void {
    if (this.at === 0) return;
    this.full.push(this.buf.subarray(0, this.at));
    this.buf = Buffer.allocUnsafe(XML_CHUNK);
    this.at = 0;
  }

  get empty(): boolean {
    return this.at === 0 && this.full.length === 0;
  }

  /** what is written so far */
  take(): Buffer[] {
    this.close();
    const taken = this.full;
    this.full = [];
    return taken;
  }
}

interface Sheet {
  entry: NativeDeflateEntry;
  xml: XmlChunks;
  added: boolean;
  ended: boolean;
}

/** ZIP entry times are fixed, so that the same report makes the same bytes. */
const ZIP_TIME = new Date(1980, 0, 1);

const STYLE = { bold: 1, date: 2, dateTime: 3 } as const;

/** A ZIP entry deflated by native zlib as the XML arrives (fflate's own deflate is JavaScript). */
class NativeDeflateEntry implements ZipInputFile {
  size = 0;
  crc = 0;
  readonly compression = 8;
  readonly mtime = ZIP_TIME;
  ondata?: AsyncFlateStreamHandler;
  // level 1: measured about twice as fast as the default, for a file about a quarter larger
  private readonly deflate: DeflateRaw = createDeflateRaw({ level: 1 });
  private readonly ended: Promise<void>;

  constructor(readonly filename: string) {
    this.deflate.on('data', (chunk: Buffer) => this.ondata?.(null, new Uint8Array(chunk.buffer as ArrayBuffer, chunk.byteOffset, chunk.byteLength), false));
    this.ended = new Promise((resolve, reject) => {
      this.deflate.once('end', () => {
        this.ondata?.(null, new Uint8Array(0), true);
        resolve();
      });
      this.deflate.once('error', reject);
    });
  }

  /** Resolves once zlib has taken the chunk in (backpressure for the download loop). */
  write(data: Buffer): Promise<void> {
    this.size += data.length;
    this.crc = crc32(data, this.crc);
    return new Promise((resolve, reject) => {
      this.deflate.write(data, (error) => (error ? reject(error) : resolve()));
    });
  }

  end(): Promise<void> {
    this.deflate.end();
    return this.ended;
  }
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#13;' };

/** XML text: markup escaped, a carriage return kept (XML would fold it), control characters that
 * XML 1.0 cannot hold written as Excel's `_xHHHH_` (and a literal `_xHHHH_` protected likewise). */
function xmlText(text: string): string {
  // most cells need nothing done: one test, no replace (a third of an export's time went here)
  if (!NEEDS_ESCAPE.test(text)) return text;
  return text
    // every `_` that starts an `_xHHHH_` (either case of x: SheetJS reads `_X0041_` as "A"), the
    // overlapping ones too: `_x005f_x0041_` read back `_x005fA` when only the first was guarded
    .replace(/_(?=[xX][0-9A-Fa-f]{4}_)/g, '_x005F_')
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, (c) => `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`)
    .replace(/[&<>\r]/g, (c) => XML_ESCAPES[c] as string);
}

/** what xmlText changes: markup, a CR, the control characters and the `_xHHHH_` guard's `_` */
const NEEDS_ESCAPE = /[&<>\r_\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;
/** whitespace XML would fold or trim without xml:space="preserve" */
const NEEDS_PRESERVE = /^\s|\s$|[\t\n\r]| {2}/;

const textCell = (text: string, style = 0) =>
  `<c t="inlineStr"${style ? ` s="${style}"` : ''}><is>${NEEDS_PRESERVE.test(text) ? '<t xml:space="preserve">' : '<t>'}${xmlText(text)}</t></is></c>`;

/** A text cut at CELL_TEXT, never between the two halves of a character beyond the BMP (a lone
 * half would be written as U+FFFD). */
function cellText(text: string): string {
  const last = text.charCodeAt(CELL_TEXT - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? CELL_TEXT - 1 : CELL_TEXT);
}

const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';

function width(column: TypedColumn, first: string | undefined): number {
  const typed = column.type === 'timestamp' ? 17 : column.type === 'date' ? 11 : column.type === 'int64' || column.type === 'double' ? 10 : 0;
  return Math.min(60, Math.max(8, column.name.length + 2, typed, (first?.length ?? 0) + 2));
}

export class XlsxRowWriter implements RowWriter {
  private readonly layout: RowLayout;
  private readonly zip: Zip;
  private out: Buffer[] = [];
  private failed?: Error;
  /** the sheet rows are written to; full sheets wait in the queue until zlib has them */
  private sheet?: Sheet;
  private readonly queue: Sheet[] = [];
  private sheets = 0;
  /** rows on the current sheet, its header included */
  private sheetRows = 0;
  private header = '';
  private cols = '';
  private cells: ((column: number) => string)[] = [];
  /** HOURLY: the last value's text and its cell, since an hour repeats over many rows */
  private lastInstant = '';
  private lastInstantCell = '';

  constructor(columns: Pick<CsvOptions, 'columns' | 'schema' | 'dropped'> = {}, private readonly sheetRowLimit = SHEET_ROWS) {
    this.layout = new RowLayout(columns.columns, columns.schema, columns.dropped);
    this.zip = new Zip((error, chunk) => {
      if (error) this.failed = error;
      else if (chunk.length) this.out.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    });
  }

  get rows(): number {
    return this.layout.rows;
  }

  /** V8's young generation bounded while rows are written (io/young-generation.ts; Node 24's grows
   * to 64 MiB) */
  private unbound?: () => void;

  release(): void {
    this.unbound?.();
  }

  private prepare(firstTexts: string[]): void {
    this.unbound = boundYoungGeneration();
    const columns = this.layout.columns;
    this.header = `<row r="1">${columns.map((column) => textCell(column.name, STYLE.bold)).join('')}</row>`;
    this.cols = columns.length
      ? `<cols>${columns.map((column, i) => `<col min="${i + 1}" max="${i + 1}" width="${width(column, firstTexts[i])}" customWidth="1"/>`).join('')}</cols>`
      : '';
    const l = this.layout;
    this.cells = columns.map((column) => {
      switch (column.type) {
        case 'int64': return (c: number) => { const t = l.integer(c); return t === null ? '<c/>' : `<c><v>${t}</v></c>`; };
        case 'double': return (c: number) => { const n = l.number(c); return n === null ? '<c/>' : `<c><v>${n}</v></c>`; };
        case 'date': return (c: number) => { const d = l.day(c); return d === null ? '<c/>' : `<c s="${STYLE.date}"><v>${d + EPOCH_SERIAL}</v></c>`; };
        case 'timestamp': return (c: number) => this.instantCell(c);
        default: return (c: number) => {
          const t = l.text(c);
          return t === null ? '<c/>' : textCell(t.length > CELL_TEXT ? cellText(t) : t);
        };
      }
    });
  }

  /** An instant shown as Paris wall time (Excel has no time zones). */
  private instantCell(column: number): string {
    const text = this.layout.text(column);
    if (text === this.lastInstant && this.lastInstantCell) return this.lastInstantCell;
    const ms = this.layout.instant(column);
    if (ms === null) return '<c/>';
    const offsetMinutes = DateTime.fromMillis(ms, { zone: PARIS_ZONE }).offset;
    const serial = (ms + offsetMinutes * 60_000) / 86_400_000 + EPOCH_SERIAL;
    this.lastInstant = text as string;
    this.lastInstantCell = `<c s="${STYLE.dateTime}"><v>${serial}</v></c>`;
    return this.lastInstantCell;
  }

  private startSheet(): void {
    this.sheets++;
    this.sheet = {
      entry: new NativeDeflateEntry(`xl/worksheets/sheet${this.sheets}.xml`),
      xml: new XmlChunks(),
      added: false,
      ended: false,
    };
    this.sheet.xml.add(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet ${NS}>` +
      '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>' +
      `<sheetFormatPr defaultRowHeight="15"/>${this.cols}<sheetData>${this.header}`);
    this.queue.push(this.sheet);
    this.sheetRows = 1;
  }

  private endSheet(): void {
    if (!this.sheet) return;
    this.sheet.xml.add('</sheetData></worksheet>');
    this.sheet.ended = true;
    this.sheet = undefined;
  }

  row(keys: string[], values: string[], kinds: Kind[]): void {
    const first = this.layout.rows === 0;
    this.layout.place(keys, values, kinds);
    if (first) this.prepare(this.layout.texts);
    if (!this.sheet) this.startSheet();
    let xml = '<row>';
    for (let c = 0; c < this.cells.length; c++) xml += (this.cells[c] as (column: number) => string)(c);
    (this.sheet as Sheet).xml.add(`${xml}</row>`);
    if (++this.sheetRows >= this.sheetRowLimit) this.endSheet();
  }

  /** Hands the XML written so far to zlib, sheet by sheet, in order. */
  private async drain(): Promise<void> {
    while (this.queue.length) {
      const sheet = this.queue[0] as Sheet;
      if (!sheet.added) {
        this.zip.add(sheet.entry);
        sheet.added = true;
      }
      if (!sheet.xml.empty) {
        for (const chunk of sheet.xml.take()) await sheet.entry.write(chunk);
      }
      if (!sheet.ended) return;
      await sheet.entry.end();
      this.queue.shift();
    }
  }

  async take(): Promise<Buffer> {
    await this.drain();
    return this.collect();
  }

  private collect(): Buffer {
    if (this.failed) throw this.failed;
    const taken = this.out.length === 1 ? (this.out[0] as Buffer) : Buffer.concat(this.out);
    this.out = [];
    return taken;
  }

  async finish(): Promise<Buffer> {
    if (this.layout.rows === 0) {
      this.layout.startEmpty('XLSX');
      this.prepare([]);
    }
    if (this.sheets === 0) this.startSheet();
    this.endSheet();
    await this.drain();
    this.addParts();
    this.zip.end();
    this.release();
    return this.collect();
  }

  private addParts(): void {
    const names = Array.from({ length: this.sheets }, (_, i) => (i === 0 ? 'report' : `report ${i + 1}`));
    const file = (name: string, text: string) => {
      // deflated, not stored: some readers cannot size a stored entry that has a data descriptor
      const entry = new ZipDeflate(name);
      entry.mtime = ZIP_TIME;
      this.zip.add(entry);
      entry.push(strToU8(text), true);
    };
    const xml = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
    file('[Content_Types].xml', `${xml}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
      '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
      names.map((_, i) => `<Override PartName="/xl/worksheets/sheet${i + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`).join('') +
      '</Types>');
    file('_rels/.rels', `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>');
    file('xl/workbook.xml', `${xml}<workbook ${NS}><sheets>` +
      names.map((name, i) => `<sheet name="${name}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('') + '</sheets></workbook>');
    file('xl/_rels/workbook.xml.rels', `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
      names.map((_, i) => `<Relationship Id="rId${i + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`).join('') +
      `<Relationship Id="rId${names.length + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>`);
    file('xl/styles.xml', `${xml}<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
      '<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd hh:mm"/></numFmts>' +
      '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>' +
      '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
      '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
      '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
      '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
      '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>' +
      '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' +
      '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>' +
      '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>');
  }
}
