// A window's rows into DuckDB's appender a data chunk at a time (2,048 rows, DuckDB's vector size)
// rather than a native call per cell: numbers, dates and timestamps are written into typed arrays
// and copied into the chunk's vectors once per column per chunk; a text value is still one call
// (DuckDB keeps its bytes in the vector's own string heap); the metadata, the same for every row of
// a piece, is one constant vector (text) or one filled array (timestamps). 1,000,000 rows of the
// buyer's requested columns, stand-alone: 1.5 s against 4.6 s with a native call per cell
// (test/bench/RESULTS.md, "Loading into a database").

import type { DuckDBAppender, DuckDBDataChunk, DuckDBType } from '@duckdb/node-api';
import type { RowLayout } from '../export/typed.js';
import type { loadDuckDb, loadDuckDbBindings } from '../lazy.js';
import type { Column } from '../report/schema.js';
import { METADATA_NAMES, type Metadata, type TableAppender } from './load.js';

type DuckDb = Awaited<ReturnType<typeof loadDuckDb>>;
type Bindings = Awaited<ReturnType<typeof loadDuckDbBindings>>;
type Vector = ReturnType<Bindings['data_chunk_get_vector']>;

/** Rows of a chunk: DuckDB's vector size. */
const CHUNK_ROWS = 2048;
/** Cells (rows times columns) the appender gathers before it is flushed into the transaction's
 * storage: 8 chunks of a 16-column table. A flush is a fixed cost: every chunk (2,048 rows) took 1.2 s
 * of a 1M-row load of 14 columns, every 8 chunks 0.6 s less; the cells gathered meanwhile are
 * memory outside DuckDB's buffer pool (see emit), so a wide table flushes sooner. */
const FLUSH_CELLS = 8 * 2048 * 16;
/** 2^32, to split an integer into the two 32-bit halves of an int64 without a BigInt. */
const TWO_32 = 4294967296;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** The 32-bit word of a validity mask (64-bit words in DuckDB) that holds a row's bit. */
const WORD_OF = LITTLE_ENDIAN ? (row: number) => row >>> 5 : (row: number) => (row >>> 5) ^ 1;

/** How one column of the table is filled. */
type Slot =
  | { kind: 'int64' | 'double' | 'date' | 'timestamp'; at: number; width: number }
  | { kind: 'text'; at: number }
  | { kind: 'meta-text'; meta: 0 | 3 }
  | { kind: 'meta-time'; meta: 1 | 2 | 4 }
  | { kind: 'null' };

export class DuckDbChunkAppender implements TableAppender {
  private readonly chunk: DuckDBDataChunk;
  private readonly slots: Slot[];
  /** per table column: its values for the chunk being filled (fixed-width kinds) */
  private readonly data: ArrayBuffer[];
  private readonly i32: Int32Array[];
  private readonly f64: Float64Array[];
  private readonly i64: BigInt64Array[];
  /** per text column: its vector in the chunk, which takes each value as the row is read */
  private readonly textVectors: (Vector | undefined)[] = [];
  /** per table column: DuckDB's validity mask (bit set: a value), and whether a bit was cleared */
  private readonly masks: Uint32Array[];
  private readonly nulls: boolean[];
  private readonly allNull = new Uint32Array(CHUNK_ROWS / 32);
  private readonly blankStrings = new ArrayBuffer(CHUNK_ROWS * 16);
  private rows = 0;
  /** rows handed to the appender since its last flush */
  private unflushed = 0;
  /** per date or timestamp column: the last text read and its value */
  private readonly lastText: (string | undefined)[] = [];
  private readonly lastValue: number[] = [];
  private metadata?: Metadata;
  private metaTexts: ReturnType<Bindings['create_varchar']>[] = [];
  private closed = false;

  /** `failed`: DuckDB's error as the run's (the database's name, and a hint) */
  constructor(duckdb: DuckDb, private readonly bindings: Bindings, private readonly appender: DuckDBAppender, columns: readonly Column[], order: readonly string[], private readonly failed: (error: unknown) => Error) {
    const types: DuckDBType[] = [];
    this.slots = order.map((name, c): Slot => {
      const meta = (METADATA_NAMES as readonly string[]).indexOf(name);
      if (meta === 0 || meta === 3) { types.push(duckdb.VARCHAR); return { kind: 'meta-text', meta }; }
      if (meta === 1 || meta === 2 || meta === 4) { types.push(duckdb.TIMESTAMPTZ); return { kind: 'meta-time', meta }; }
      const at = columns.findIndex((column) => column.name === name);
      // a column the export does not write: NULL, in the table's own type
      if (at < 0) { types.push(appender.columnType(c)); return { kind: 'null' }; }
      switch ((columns[at] as Column).type) {
        case 'int64': types.push(duckdb.BIGINT); return { kind: 'int64', at, width: 8 };
        case 'double': types.push(duckdb.DOUBLE); return { kind: 'double', at, width: 8 };
        case 'date': types.push(duckdb.DATE); return { kind: 'date', at, width: 4 };
        case 'timestamp': types.push(duckdb.TIMESTAMPTZ); return { kind: 'timestamp', at, width: 8 };
        default: types.push(duckdb.VARCHAR); return { kind: 'text', at };
      }
    });
    this.chunk = duckdb.DuckDBDataChunk.create(types, CHUNK_ROWS);
    this.data = this.slots.map((slot) => new ArrayBuffer('width' in slot ? CHUNK_ROWS * slot.width : slot.kind === 'meta-time' ? CHUNK_ROWS * 8 : 0));
    this.i32 = this.data.map((buffer) => new Int32Array(buffer));
    this.f64 = this.data.map((buffer) => new Float64Array(buffer, 0, buffer.byteLength >> 3));
    this.i64 = this.data.map((buffer) => new BigInt64Array(buffer, 0, buffer.byteLength >> 3));
    this.masks = this.slots.map(() => new Uint32Array(CHUNK_ROWS / 32).fill(0xffffffff));
    this.nulls = this.slots.map(() => false);
  }

  row(layout: RowLayout, metadata: Metadata): void {
    // the metadata are the same for every row of a piece: a piece of another report ends the chunk
    if (metadata !== this.metadata) {
      if (this.rows > 0) this.emit();
      this.useMetadata(metadata);
    }
    const r = this.rows;
    if (r === 0) this.startChunk();
    try {
      this.fill(layout, r);
    } catch (error) {
      // a value that does not fit its column: the row is not in the chunk, nor are its NULLs
      this.masks.forEach((mask) => { mask[WORD_OF(r)] = (mask[WORD_OF(r)] as number) | (1 << (r & 31)); });
      throw error;
    }
    if (++this.rows === CHUNK_ROWS) this.emit();
  }

  private fill(layout: RowLayout, r: number): void {
    const { slots } = this;
    for (let c = 0; c < slots.length; c++) {
      const slot = slots[c] as Slot;
      switch (slot.kind) {
        case 'int64': {
          const text = layout.integer(slot.at);
          if (text === null) this.setNull(c, r);
          // up to 15 digits, a double holds it exactly: its two halves, no BigInt
          else if (text.length <= 15 && LITTLE_ENDIAN) {
            const value = Number(text);
            const high = Math.floor(value / TWO_32);
            const words = this.i32[c] as Int32Array;
            words[2 * r] = (value - high * TWO_32) | 0;
            words[2 * r + 1] = high;
          } else (this.i64[c] as BigInt64Array)[r] = BigInt(text);
          break;
        }
        case 'double': {
          const value = layout.number(slot.at);
          if (value === null) this.setNull(c, r);
          else (this.f64[c] as Float64Array)[r] = value;
          break;
        }
        case 'date': {
          // a window's rows mostly share their date: parsed once while it repeats
          const text = layout.text(slot.at);
          if (text === null) this.setNull(c, r);
          else {
            if (text !== this.lastText[c]) { this.lastValue[c] = layout.day(slot.at) as number; this.lastText[c] = text; }
            (this.i32[c] as Int32Array)[r] = this.lastValue[c] as number;
          }
          break;
        }
        case 'timestamp': {
          const text = layout.text(slot.at);
          if (text === null) this.setNull(c, r);
          else {
            if (text !== this.lastText[c]) { this.lastValue[c] = layout.instant(slot.at) as number; this.lastText[c] = text; }
            this.setMicros(c, r, (this.lastValue[c] as number) * 1000);
          }
          break;
        }
        case 'text': {
          // into the vector's string heap at once: a JS string held for the rest of the chunk
          // outlives the young generation (a 30-column table of text peaked 50 MiB higher)
          const value = layout.text(slot.at);
          if (value === null) this.setNull(c, r);
          // a blank slot is '' already (length 0, inlined)
          else if (value !== '') this.bindings.vector_assign_string_element(this.textVectors[c] as Vector, r, value);
          break;
        }
        default: break;
      }
    }
  }

  /** A new chunk: its text vectors blank (no stale string where a NULL will be). */
  private startChunk(): void {
    const b = this.bindings;
    this.slots.forEach((slot, c) => {
      if (slot.kind !== 'text') return;
      const vector = b.data_chunk_get_vector(this.chunk.chunk, c);
      b.copy_data_to_vector(vector, 0, this.blankStrings, 0, CHUNK_ROWS * 16);
      this.textVectors[c] = vector;
    });
  }

  private setNull(column: number, row: number): void {
    const mask = this.masks[column] as Uint32Array;
    const word = WORD_OF(row);
    mask[word] = (mask[word] as number) & ~(1 << (row & 31));
    this.nulls[column] = true;
  }

  private setMicros(column: number, row: number, micros: number): void {
    if (LITTLE_ENDIAN && Number.isSafeInteger(micros)) {
      const high = Math.floor(micros / TWO_32);
      const words = this.i32[column] as Int32Array;
      words[2 * row] = (micros - high * TWO_32) | 0;
      words[2 * row + 1] = high;
    } else (this.i64[column] as BigInt64Array)[row] = BigInt(micros);
  }

  private useMetadata(metadata: Metadata): void {
    this.metadata = metadata;
    this.metaTexts = [this.bindings.create_varchar(metadata[0]), this.bindings.create_varchar(metadata[3])];
    // the window's since and until (seconds) and the load's time (milliseconds), in microseconds
    const micros = [0, metadata[1] * 1_000_000, metadata[2] * 1_000_000, 0, metadata[4] * 1000];
    this.slots.forEach((slot, c) => {
      if (slot.kind !== 'meta-time') return;
      for (let r = 0; r < CHUNK_ROWS; r++) this.setMicros(c, r, micros[slot.meta] as number);
    });
  }

  /** The rows gathered into the chunk, the chunk into the appender, and every FLUSH_CELLS on into the
   * transaction's storage (a ROLLBACK still drops them), which DuckDB bounds by its memory_limit.
   * Left to itself the appender gathers 204,800 rows (100 chunks) in memory outside DuckDB's buffer
   * pool: with about 30 text columns, 200 MB more at the peak (373 MiB against 204 MiB flushing
   * every 2,048 rows, test/bench/RESULTS.md). */
  private emit(): void {
    try {
      this.hand();
    } catch (error) {
      throw this.failed(error);
    }
  }

  private hand(): void {
    const b = this.bindings;
    const rows = this.rows;
    const raw = this.chunk.chunk;
    b.data_chunk_set_size(raw, rows);
    this.slots.forEach((slot, c) => {
      const vector = b.data_chunk_get_vector(raw, c);
      switch (slot.kind) {
        case 'meta-text': b.vector_reference_value(vector, this.metaTexts[slot.meta === 0 ? 0 : 1] as ReturnType<Bindings['create_varchar']>); return;
        case 'null': this.validity(vector, this.allNull, rows); return;
        case 'text': break;
        default: b.copy_data_to_vector(vector, 0, this.data[c] as ArrayBuffer, 0, rows * ('width' in slot ? slot.width : 8));
      }
      if (this.nulls[c]) {
        this.validity(vector, this.masks[c] as Uint32Array, rows);
        (this.masks[c] as Uint32Array).fill(0xffffffff);
        this.nulls[c] = false;
      }
    });
    this.appender.appendDataChunk(this.chunk);
    this.unflushed += rows;
    if (this.unflushed * this.slots.length >= FLUSH_CELLS) {
      this.appender.flushSync();
      this.unflushed = 0;
    }
    // the vectors back to flat and valid, their string heaps freed
    b.data_chunk_reset(raw);
    this.rows = 0;
  }

  private validity(vector: Vector, mask: Uint32Array, rows: number): void {
    this.bindings.vector_ensure_validity_writable(vector);
    this.bindings.copy_data_to_vector_validity(vector, 0, mask.buffer as ArrayBuffer, mask.byteOffset, Math.ceil(rows / 64) * 8);
  }

  async drain(): Promise<void> {
    // row() hands each full chunk over
  }

  async finish(): Promise<void> {
    try {
      if (this.rows > 0) this.hand();
      this.appender.flushSync();
      this.closed = true;
      this.appender.closeSync();
    } catch (error) {
      // the rows DuckDB refused are dropped now: an appender freed with rows in it has them flushed
      // by DuckDB then, into whatever transaction its connection is in (the next window's)
      await this.cancel().catch(() => undefined);
      throw this.failed(error);
    }
  }

  async cancel(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.appender.clear();
    this.appender.closeSync();
  }
}
