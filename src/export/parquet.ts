// Parquet through hyparquet-writer (pure JavaScript, one dependency; measured in test/bench): typed
// columns, Snappy-compressed, written in row groups of ROW_GROUP rows as the download streams, so
// memory holds one row group at most. The bytes go to our sink (atomic file or stdout), never
// through the library's own file writer.

import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { ColumnSource, SchemaElement, Writer } from 'hyparquet-writer';
import type { ColumnType } from '../report/schema.js';
import { collectGarbage } from '../gc.js';
import type { Kind } from './scanner.js';
import { RowLayout, type TypedColumn } from './typed.js';
import type { RowWriter } from './row-writer.js';
import type { CsvOptions } from './writers.js';

/** Rows per row group. Peak RSS grows with it (measured on 600,000 buyer rows without the network:
 * 170 MB at 5,000, 176 MB at 10,000, 205 MB at 20,000, 248 MB at 50,000); retained memory stays
 * flat at each. */
const ROW_GROUP = 10_000;

type Value = Uint8Array | number | bigint | null;

/** Distinct texts kept encoded per column: dimension values repeat, and encoding each occurrence
 * anew was a third of the time (garbage collection); bounded so memory stays flat. */
const TEXT_CACHE = 4096;

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

const encoder = new TextEncoder();

/**
 * A row group leaves tens of megabytes of short-lived arrays behind, which V8 collects late: a
 * 1M-row export peaked at 212 MiB with nothing retained beyond 16 MiB. A full collection every few
 * groups keeps the peak flat (measured: test/bench/RESULTS.md, "Parquet memory").
 */
const GC_EVERY_GROUPS = 4;

export class ParquetRowWriter implements RowWriter {
  private groups = 0;
  private readonly layout: RowLayout;
  private readonly bytes: Writer & { index: number } = new ByteWriter();
  private writer?: ParquetWriter;
  private data: Value[][] = [];
  private readers: ((column: number) => Value)[] = [];
  private out: Buffer[] = [];

  constructor(columns: Pick<CsvOptions, 'columns' | 'schema' | 'dropped'> = {}, private readonly rowGroup = ROW_GROUP, private readonly createdBy = 'reporting') {
    this.layout = new RowLayout(columns.columns, columns.schema, columns.dropped);
    // hyparquet-writer calls flush() after each row group: move its bytes out to the sink
    this.bytes.flush = () => {
      this.out.push(Buffer.from(this.bytes.getBytes()));
      this.bytes.index = 0;
    };
  }

  get rows(): number {
    return this.layout.rows;
  }

  private open(): void {
    const columns = this.layout.columns;
    this.writer = new ParquetWriter({
      writer: this.bytes,
      schema: [{ name: 'root', num_children: columns.length }, ...columns.map(element)],
      createdBy: this.createdBy,
    });
    this.data = columns.map(() => []);
    const l = this.layout;
    this.readers = columns.map((column) => {
      switch (column.type) {
        case 'int64': return (c: number) => { const t = l.integer(c); return t === null ? null : BigInt(t); };
        case 'double': return (c: number) => l.number(c);
        case 'date': return (c: number) => l.day(c);
        case 'timestamp': return (c: number) => { const ms = l.instant(c); return ms === null ? null : BigInt(ms); };
        default: {
          const cache = new Map<string, Uint8Array>();
          return (c: number) => {
            const text = l.text(c);
            if (text === null) return null;
            let bytes = cache.get(text);
            if (!bytes) {
              if (cache.size >= TEXT_CACHE) cache.clear();
              bytes = encoder.encode(text);
              cache.set(text, bytes);
            }
            return bytes;
          };
        }
      }
    });
  }

  row(keys: string[], values: string[], kinds: Kind[]): void {
    this.layout.place(keys, values, kinds);
    if (!this.writer) this.open();
    for (let c = 0; c < this.readers.length; c++) (this.data[c] as Value[]).push((this.readers[c] as (column: number) => Value)(c));
    if ((this.data[0]?.length ?? 0) >= this.rowGroup) this.writeGroup();
  }

  private writeGroup(): void {
    const count = this.data[0]?.length ?? 0;
    if (!this.writer || count === 0) return;
    const columnData: ColumnSource[] = this.layout.columns.map((column, c) => ({
      name: column.name,
      data: this.data[c] as Value[],
      // min/max where readers prune by them (dates, counts, amounts); on text they cost 16% of the
      // time (600,000 rows: 18.6 s with them, 15.6 s without) for little use
      statistics: column.type !== 'string' && column.type !== 'month',
    }));
    void this.writer.write({ columnData, rowGroupSize: count });
    this.data = this.layout.columns.map(() => []);
    if (++this.groups % GC_EVERY_GROUPS === 0) collectGarbage();
  }

  take(): Buffer {
    const taken = this.out.length === 1 ? (this.out[0] as Buffer) : Buffer.concat(this.out);
    this.out = [];
    return taken;
  }

  finish(): Buffer {
    if (!this.writer) {
      this.layout.startEmpty('Parquet');
      this.open();
    }
    this.writeGroup();
    void (this.writer as ParquetWriter).finish();
    this.bytes.flush?.();
    return this.take();
  }
}
