// Parquet: typed columns, Snappy-compressed, written in row groups as the download streams. Each
// value is encoded into its column as its row arrives (parquet-columns.ts), and a row group ends
// when its columns hold GROUP_BYTES, so memory holds one group's encoded bytes at most, whatever the
// width of the rows. hyparquet-writer (pure JavaScript, one dependency) gives the page headers,
// the file's metadata (Thrift) and Snappy. The bytes go to our sink (atomic file or stdout).

import { ByteWriter } from 'hyparquet-writer';
import type { ColumnChunk, FileMetaData, RowGroup, SchemaElement } from 'hyparquet';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import type { ColumnType } from '../report/schema.js';
import { boundYoungGeneration } from '../io/young-generation.js';
import { Kind, fromBytes, sameKeys } from './scanner.js';
import { encoderOf, Int64Column, NumberColumn, TextColumn, type PageSink } from './parquet-columns.js';
import { RowLayout, type TypedColumn } from './typed.js';
import type { RowWriter } from './row-writer.js';
import type { CsvOptions } from './writers.js';

/** Encoded bytes a row group holds before it is written (the columns' values, dictionaries and
 * levels, before compression): 2 MiB, some 40,000 rows of the buyer's every field. The columns'
 * buffers and their Snappy copies are allocated outside V8's heap, and freed pages stay in the
 * process: 1M rows on Node 24 peaked at 177-185 MiB with 8 MiB groups, 167-171 with 4 and 149 with 2
 * (CSV: 142); measured: test/bench/RESULTS.md, "Formats near CSV". */
const GROUP_BYTES = 2 << 20;
/** Rows a row group holds at most, whatever its bytes. */
const ROW_GROUP = 1 << 20;
/** How often (rows) a group's size is looked at. */
const SIZE_EVERY = 256;

function element(column: TypedColumn): SchemaElement {
  const base = { name: column.name, repetition_type: 'OPTIONAL' as const };
  const types: Record<ColumnType, Omit<SchemaElement, 'name'>> = {
    string: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } },
    month: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } },
    int64: { type: 'INT64' },
    double: { type: 'DOUBLE' },
    date: { type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } },
    // the instant, so that the repeated hour of the autumn DST change stays two distinct values
    timestamp: { type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } },
  };
  return { ...base, ...types[column.type] };
}

const MAGIC = Buffer.from('PAR1', 'latin1');

export class ParquetRowWriter implements RowWriter, PageSink {
  private readonly layout: RowLayout;
  private encoders: (Int64Column | NumberColumn | TextColumn)[] = [];
  private fillers: ((column: number) => void)[] = [];
  private readonly groups: RowGroup[] = [];
  private groupRows = 0;
  private out: Uint8Array[] = [];
  private opened = false;
  offset = 0;
  /** bytes mode: the keys as received, and the same as text (the columns' names) */
  private byteKeys: string[] = [];
  private textKeys: string[] = [];
  /** per date or timestamp column: the last text read and its value (a date repeats over rows) */
  private readonly lastText: (string | undefined)[] = [];
  private readonly lastValue: number[] = [];

  /** `rowGroup`: rows a group holds at most (tests make it small); `bytesOk`: the rows may come
   * in bytes mode (ReportScanner), the caller's scanner following `byteRows` */
  constructor(columns: Pick<CsvOptions, 'columns' | 'schema' | 'dropped'> = {}, private readonly rowGroup = ROW_GROUP, private readonly createdBy = 'reporting', readonly byteRows = false) {
    this.layout = new RowLayout(columns.columns, columns.schema, columns.dropped, byteRows);
  }

  get rows(): number {
    return this.layout.rows;
  }

  /** V8's young generation bounded while rows are written (io/young-generation.ts): on Node 24 it
   * grows to 64 MiB, and a 1M-row export peaked at 213 MiB without the bound */
  private unbound?: () => void;

  release(): void {
    this.unbound?.();
  }

  private open(): void {
    this.opened = true;
    this.unbound = boundYoungGeneration();
    this.push(MAGIC);
    const l = this.layout;
    this.encoders = l.columns.map((column) => encoderOf(column.name, column.type, this.byteRows));
    this.fillers = l.columns.map((column, c) => {
      const encoder = this.encoders[c];
      // bytes mode: the text's UTF-8 as received, never decoded
      if (encoder instanceof TextColumn) return this.byteRows ? (at: number) => encoder.add(l.received(at)) : (at: number) => encoder.add(l.text(at));
      if (encoder instanceof NumberColumn && column.type === 'double') return (at: number) => encoder.add(l.number(at));
      if (encoder instanceof NumberColumn) return (at: number) => encoder.add(this.cached(at, () => l.day(at)));
      if (column.type === 'timestamp') return (at: number) => (encoder as Int64Column).add(this.cached(at, () => l.instant(at)));
      return (at: number) => (encoder as Int64Column).addText(l.integer(at));
    });
  }

  /** a date's or an instant's value, parsed once while its text repeats */
  private cached(column: number, parse: () => number | null): number | null {
    const text = this.layout.received(column);
    if (text === null) return null;
    if (text !== this.lastText[column]) {
      this.lastValue[column] = parse() as number;
      this.lastText[column] = text;
    }
    return this.lastValue[column] as number;
  }

  row(keys: string[], values: string[], kinds: Kind[]): void {
    if (this.byteRows && !sameKeys(keys, this.byteKeys)) {
      this.textKeys = keys.map(fromBytes);
      this.byteKeys = keys;
    }
    this.layout.place(this.byteRows ? this.textKeys : keys, values, kinds);
    if (!this.opened) this.open();
    const fillers = this.fillers;
    for (let c = 0; c < fillers.length; c++) (fillers[c] as (column: number) => void)(c);
    this.groupRows++;
    if (this.groupRows >= this.rowGroup || (this.groupRows % SIZE_EVERY === 0 && this.groupSize() >= GROUP_BYTES)) this.writeGroup();
  }

  private groupSize(): number {
    let size = 0;
    for (const encoder of this.encoders) size += encoder.size;
    return size;
  }

  private push(bytes: Uint8Array): void {
    this.out.push(bytes);
    this.offset += bytes.length;
  }

  page(header: Parameters<typeof writePageHeader>[1], parts: Uint8Array[]): number {
    const writer = new ByteWriter(64);
    writePageHeader(writer, header);
    const headerBytes = writer.getBytes();
    this.push(headerBytes);
    for (const part of parts) this.push(part);
    return headerBytes.length + header.uncompressed_page_size;
  }

  private writeGroup(): void {
    const rows = this.groupRows;
    if (rows === 0) return;
    const start = this.offset;
    const columns: ColumnChunk[] = this.encoders.map((encoder) => encoder.write(this, 'SNAPPY'));
    let total = 0n;
    for (const chunk of columns) total += chunk.meta_data?.total_uncompressed_size ?? 0n;
    this.groups.push({ columns, total_byte_size: total, num_rows: BigInt(rows), total_compressed_size: BigInt(this.offset - start) });
    this.groupRows = 0;
  }

  take(): Buffer {
    const taken = Buffer.concat(this.out);
    this.out = [];
    return taken;
  }

  finish(): Buffer {
    if (!this.opened) {
      this.layout.startEmpty('Parquet');
      this.open();
    }
    this.writeGroup();
    const columns = this.layout.columns;
    const metadata: FileMetaData = {
      version: 2,
      created_by: this.createdBy,
      schema: [{ name: 'root', num_children: columns.length }, ...columns.map(element)],
      num_rows: BigInt(this.layout.rows),
      row_groups: this.groups,
      metadata_length: 0,
    };
    const writer = new ByteWriter();
    writeMetadata(writer, metadata);
    this.push(writer.getBytes());
    this.push(MAGIC);
    this.release();
    return this.take();
  }
}
