// Parquet columns encoded as they fill (issue 32, item 2): each value is written into its column's
// own growing bytes as the row arrives (numbers little-endian, texts into a dictionary or, past its
// bound, as PLAIN bytes), never held as a JS value until the row group ends. A row group is then
// one dictionary page (texts) and one data page (v2) a column, Snappy-compressed. The buffers are
// reused from one group to the next: what a 1M-row export used to collect as garbage (arrays of
// boxed numbers, BigInts and Uint8Arrays, 10,000 rows a group) is not made.

import { ByteWriter } from 'hyparquet-writer';
import type { ColumnChunk } from 'hyparquet';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';
import { snappyCompress } from 'hyparquet-writer/src/snappy.js';
import type { ColumnType } from '../report/schema.js';

/** Growing bytes, kept from one row group to the next. */
export class Bytes {
  buf = Buffer.allocUnsafe(1024);
  view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  length = 0;

  ensure(more: number): void {
    if (this.length + more <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + more));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  get bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** 2^32, to split a safe integer into the two 32-bit halves of an int64 without a BigInt. */
const TWO_32 = 4294967296;
/** A column's dictionary ends (the group's texts so far become PLAIN) past these. */
const DICTIONARY_BYTES = 1 << 20;
const DICTIONARY_ENTRIES = 1 << 16;

/** One column of the row group being filled. */
export abstract class ColumnEncoder {
  /** one definition level a row: 1 a value, 0 a null */
  protected defs = new Uint8Array(1024);
  rows = 0;
  nulls = 0;
  readonly values = new Bytes();

  constructor(readonly name: string, readonly physical: 'BYTE_ARRAY' | 'INT64' | 'DOUBLE' | 'INT32') {}

  protected defined(value: boolean): void {
    if (this.rows === this.defs.length) {
      const grown = new Uint8Array(this.defs.length * 2);
      grown.set(this.defs);
      this.defs = grown;
    }
    this.defs[this.rows++] = value ? 1 : 0;
    if (!value) this.nulls++;
  }

  /** bytes held for the group (what a row group is sized by) */
  get size(): number {
    return this.values.length + this.rows;
  }

  /** the group's pages of this column into `out`; answers its chunk's metadata */
  write(out: PageSink, codec: 'SNAPPY'): ColumnChunk {
    const start = out.offset;
    let uncompressed = 0;
    const dictionary = this.dictionaryPage();
    let dictionaryOffset: bigint | undefined;
    if (dictionary) {
      dictionaryOffset = BigInt(out.offset);
      const compressed = snappyCompress(dictionary.bytes);
      uncompressed += out.page({ type: 'DICTIONARY_PAGE', uncompressed_page_size: dictionary.bytes.length, compressed_page_size: compressed.length, dictionary_page_header: { num_values: dictionary.count, encoding: 'PLAIN' } }, [compressed]);
    }
    const levels = new ByteWriter(Math.max(16, this.rows >> 3));
    const levelBytes = writeRleBitPackedHybrid(levels, this.defs.subarray(0, this.rows), 1);
    const values = this.dataValues();
    const compressed = snappyCompress(values);
    const dataOffset = BigInt(out.offset);
    const encoding = dictionary ? 'RLE_DICTIONARY' : 'PLAIN';
    uncompressed += out.page({
      type: 'DATA_PAGE_V2', uncompressed_page_size: levelBytes + values.length, compressed_page_size: levelBytes + compressed.length,
      data_page_header_v2: { num_values: this.rows, num_nulls: this.nulls, num_rows: this.rows, encoding, definition_levels_byte_length: levelBytes, repetition_levels_byte_length: 0, is_compressed: true },
    }, [levels.getBytes(), compressed]);
    const statistics = this.statistics();
    const chunk: ColumnChunk = {
      file_offset: BigInt(start),
      meta_data: {
        type: this.physical,
        encodings: dictionary ? ['PLAIN', 'RLE_DICTIONARY'] : ['PLAIN'],
        path_in_schema: [this.name],
        codec,
        num_values: BigInt(this.rows),
        total_compressed_size: BigInt(out.offset - start),
        total_uncompressed_size: BigInt(uncompressed),
        data_page_offset: dataOffset,
        ...(dictionaryOffset === undefined ? {} : { dictionary_page_offset: dictionaryOffset }),
        ...(statistics ? { statistics: { ...statistics, null_count: BigInt(this.nulls) } } : {}),
        encoding_stats: [...(dictionary ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []), { page_type: 'DATA_PAGE_V2', encoding, count: 1 }],
      },
    };
    this.reset();
    return chunk;
  }

  protected dictionaryPage(): { bytes: Uint8Array; count: number } | undefined {
    return undefined;
  }

  protected dataValues(): Uint8Array {
    return this.values.bytes;
  }

  protected statistics(): { min_value: number | bigint; max_value: number | bigint } | undefined {
    return undefined;
  }

  protected reset(): void {
    this.rows = 0;
    this.nulls = 0;
    this.values.length = 0;
  }
}

/** Where a column's pages go: the file's bytes. */
export interface PageSink {
  readonly offset: number;
  /** a page header and its parts; answers the header's size plus the uncompressed size */
  page(header: Parameters<typeof writePageHeader>[1], parts: Uint8Array[]): number;
}

/** INT64 (counts; timestamps in milliseconds): a safe integer as its two halves, others by BigInt. */
export class Int64Column extends ColumnEncoder {
  private min = Infinity;
  private max = -Infinity;
  private minBig?: bigint;
  private maxBig?: bigint;

  constructor(name: string) {
    super(name, 'INT64');
  }

  add(value: number | null): void {
    if (value === null) {
      this.defined(false);
      return;
    }
    this.defined(true);
    const v = this.values;
    v.ensure(8);
    const high = Math.floor(value / TWO_32);
    v.view.setInt32(v.length, (value - high * TWO_32) | 0, true);
    v.view.setInt32(v.length + 4, high, true);
    v.length += 8;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
  }

  /** an integer's text (up to 18 digits): by number where a double holds it exactly */
  addText(text: string | null): void {
    if (text === null || text.length <= 15) {
      this.add(text === null ? null : Number(text));
      return;
    }
    const value = BigInt(text);
    this.defined(true);
    const v = this.values;
    v.ensure(8);
    v.view.setBigInt64(v.length, value, true);
    v.length += 8;
    if (this.minBig === undefined || value < this.minBig) this.minBig = value;
    if (this.maxBig === undefined || value > this.maxBig) this.maxBig = value;
  }

  protected override statistics(): { min_value: bigint; max_value: bigint } | undefined {
    const mins = [...(this.min <= this.max ? [BigInt(this.min)] : []), ...(this.minBig === undefined ? [] : [this.minBig])];
    const maxes = [...(this.min <= this.max ? [BigInt(this.max)] : []), ...(this.maxBig === undefined ? [] : [this.maxBig])];
    if (!mins.length) return undefined;
    return { min_value: mins.reduce((a, b) => (b < a ? b : a)), max_value: maxes.reduce((a, b) => (b > a ? b : a)) };
  }

  protected override reset(): void {
    super.reset();
    this.min = Infinity;
    this.max = -Infinity;
    this.minBig = undefined;
    this.maxBig = undefined;
  }
}

/** DOUBLE (amounts) and INT32 (DATE, days since 1970-01-01). */
export class NumberColumn extends ColumnEncoder {
  private min = Infinity;
  private max = -Infinity;

  constructor(name: string, physical: 'DOUBLE' | 'INT32') {
    super(name, physical);
  }

  add(value: number | null): void {
    if (value === null) {
      this.defined(false);
      return;
    }
    this.defined(true);
    const v = this.values;
    if (this.physical === 'DOUBLE') {
      v.ensure(8);
      v.view.setFloat64(v.length, value, true);
      v.length += 8;
    } else {
      v.ensure(4);
      v.view.setInt32(v.length, value, true);
      v.length += 4;
    }
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
  }

  protected override statistics(): { min_value: number; max_value: number } | undefined {
    if (this.min > this.max) return undefined;
    // signed zeros as Parquet orders them: min -0, max +0
    return { min_value: this.min === 0 ? -0 : this.min, max_value: this.max === 0 ? 0 : this.max };
  }

  protected override reset(): void {
    super.reset();
    this.min = Infinity;
    this.max = -Infinity;
  }
}

/** BYTE_ARRAY (UTF8): a dictionary of the group's texts and their indices, or PLAIN past its bound.
 * `bytes`: the texts are bytes mode's (one char a byte of UTF-8), else text. */
export class TextColumn extends ColumnEncoder {
  private dictionary = new Map<string, number>();
  /** the dictionary's entries, PLAIN (a 4-byte length, then the bytes) */
  private readonly entries = new Bytes();
  private indices = new Int32Array(1024);
  private count = 0;
  /** the dictionary was given up for this group: `values` holds PLAIN texts */
  private plain = false;
  /** the last text added and its index in the dictionary */
  private lastText?: string;
  private lastIndex = 0;

  constructor(name: string, private readonly bytes: boolean) {
    super(name, 'BYTE_ARRAY');
  }

  override get size(): number {
    return this.values.length + this.entries.length + this.count * 4 + this.rows;
  }

  add(text: string | null): void {
    if (text === null) {
      this.defined(false);
      return;
    }
    this.defined(true);
    if (this.plain) {
      this.appendPlain(this.values, text);
      return;
    }
    // a dimension's value often repeats from one row to the next: no hashing then
    if (text === this.lastText) {
      this.indexed(this.lastIndex);
      return;
    }
    let index = this.dictionary.get(text);
    if (index === undefined) {
      index = this.dictionary.size;
      this.dictionary.set(text, index);
      this.appendPlain(this.entries, text);
      if (this.entries.length > DICTIONARY_BYTES || index >= DICTIONARY_ENTRIES) {
        this.indexed(index);
        this.givePlain();
        return;
      }
    }
    this.lastText = text;
    this.lastIndex = index;
    this.indexed(index);
  }

  private indexed(index: number): void {
    if (this.count === this.indices.length) {
      const grown = new Int32Array(this.indices.length * 2);
      grown.set(this.indices);
      this.indices = grown;
    }
    this.indices[this.count++] = index;
  }

  private appendPlain(to: Bytes, text: string): void {
    const length = this.bytes ? text.length : Buffer.byteLength(text, 'utf8');
    to.ensure(4 + length);
    to.view.setUint32(to.length, length, true);
    if (this.bytes) to.buf.write(text, to.length + 4, length, 'latin1');
    else to.buf.write(text, to.length + 4, length, 'utf8');
    to.length += 4 + length;
  }

  /** The dictionary too large for this group: its values so far become PLAIN texts. */
  private givePlain(): void {
    const starts = new Int32Array(this.dictionary.size);
    for (let i = 0, at = 0; i < starts.length; i++) {
      starts[i] = at;
      at += 4 + this.entries.view.getUint32(at, true);
    }
    const v = this.values;
    for (let i = 0; i < this.count; i++) {
      const at = starts[this.indices[i] as number] as number;
      const length = 4 + this.entries.view.getUint32(at, true);
      v.ensure(length);
      this.entries.buf.copy(v.buf, v.length, at, at + length);
      v.length += length;
    }
    this.plain = true;
    this.lastText = undefined;
    this.dictionary = new Map();
    this.entries.length = 0;
    this.count = 0;
  }

  /** no dictionary: given up, or no value in the group (its data page then holds no value) */
  private get undictionaried(): boolean {
    return this.plain || this.dictionary.size === 0;
  }

  protected override dictionaryPage(): { bytes: Uint8Array; count: number } | undefined {
    return this.undictionaried ? undefined : { bytes: this.entries.bytes, count: this.dictionary.size };
  }

  protected override dataValues(): Uint8Array {
    if (this.undictionaried) return this.values.bytes;
    const bitWidth = this.dictionary.size > 1 ? Math.ceil(Math.log2(this.dictionary.size)) : 1;
    const page = new ByteWriter(this.count + 16);
    page.appendUint8(bitWidth);
    writeRleBitPackedHybrid(page, this.indices.subarray(0, this.count), bitWidth);
    return page.getBytes();
  }

  protected override reset(): void {
    super.reset();
    this.dictionary = new Map();
    this.entries.length = 0;
    this.count = 0;
    this.plain = false;
    this.lastText = undefined;
  }
}

/** The encoder of a column of the export's type. */
export function encoderOf(name: string, type: ColumnType, bytes: boolean): Int64Column | NumberColumn | TextColumn {
  switch (type) {
    case 'int64':
    case 'timestamp': return new Int64Column(name);
    case 'double': return new NumberColumn(name, 'DOUBLE');
    case 'date': return new NumberColumn(name, 'INT32');
    default: return new TextColumn(name, bytes);
  }
}
