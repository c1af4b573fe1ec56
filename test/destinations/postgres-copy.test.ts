// The COPY text a Postgres load sends (src/load/postgres-copy.ts), against a stream that keeps what
// it is given: rows encoded straight into bytes, a row larger than the batch, COPY's escapes and
// NULLs, and the rows waiting while the stream is full. Read back by Postgres in table.test.ts
// and table-bytes.test.ts.

import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Kind, toBytes } from '../../src/export/scanner.js';
import { RowLayout } from '../../src/export/typed.js';
import type { Metadata } from '../../src/load/load.js';
import { CopyAppender, type CopyStream } from '../../src/load/postgres-copy.js';
import type { Column } from '../../src/report/schema.js';

const COLUMNS: Column[] = [
  { name: 'date', type: 'date', nullable: true, key: true },
  { name: 'clicks', type: 'int64', nullable: true, key: false },
  { name: 'revenue', type: 'double', nullable: true, key: false },
  { name: 'name', type: 'string', nullable: true, key: false },
];
const NAMES = COLUMNS.map((column) => column.name);
const METADATA: Metadata = ['r1', Date.parse('2026-11-01T00:00:00Z') / 1000, Date.parse('2026-11-01T23:59:59Z') / 1000, 'scope;a\tb', Date.parse('2026-11-02T03:00:00Z')];
const METADATA_TEXT = 'r1\t2026-11-01T00:00:00.000Z\t2026-11-01T23:59:59.000Z\tscope;a\\tb\t2026-11-02T03:00:00.000Z\n';

/** A COPY stream that keeps each chunk; full (write answers false) until `drain()`. */
class Kept extends EventEmitter implements CopyStream {
  chunks: Buffer[] = [];
  full = false;
  destroyed = false;
  write(chunk: Buffer): boolean {
    this.chunks.push(Buffer.from(chunk));
    return !this.full;
  }
  end(callback: () => void): void {
    setImmediate(callback);
  }
  destroy(error: Error): void {
    this.destroyed = true;
    this.emit('error', error);
    this.emit('close');
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function appenderOn(stream: Kept): { append(values: (string | null)[]): void; appender: CopyAppender } {
  const appender = new CopyAppender(stream, COLUMNS, (error) => new Error(`refused: ${error.message}`));
  const layout = new RowLayout(NAMES, COLUMNS, undefined, true);
  return {
    appender,
    append(values) {
      // bytes mode: a text's UTF-8 one char a byte, as the scanner hands it on
      const kinds = values.map((value, i) => (value === null ? Kind.Null : i === 1 || i === 2 ? Kind.Number : Kind.String));
      layout.place(NAMES, values.map((value) => toBytes(value ?? '')), kinds);
      appender.row(layout, METADATA);
    },
  };
}

describe('the COPY text of a Postgres load', () => {
  it('writes each row in COPY text: escapes, NULLs, UTF-8 as received, a row far larger than a batch, the metadata after each', async () => {
    const stream = new Kept();
    const { append, appender } = appenderOn(stream);
    const long = `${'é\\x\t'.repeat(200_000)}end`;
    append(['2026-11-01', '12', '3.5', 'Café\nbar\r\\']);
    append(['2026-11-01', null, null, null]);
    append(['2026-11-02', '-7', '1e3', long]);
    append(['2026-11-02', '0', '0', '']);
    await appender.drain();
    await appender.finish();
    const escapedLong = long.replace(/\\/g, '\\\\').replace(/\t/g, '\\t');
    expect(stream.text()).toBe([
      `2026-11-01\t12\t3.5\tCafé\\nbar\\r\\\\\t${METADATA_TEXT}`,
      `2026-11-01\t\\N\t\\N\t\\N\t${METADATA_TEXT}`,
      `2026-11-02\t-7\t1e3\t${escapedLong}\t${METADATA_TEXT}`,
      `2026-11-02\t0\t0\t\t${METADATA_TEXT}`,
    ].join(''));
  });

  it('a value that does not fit its column is the report\'s error, the same day again included', () => {
    const { append } = appenderOn(new Kept());
    append(['2026-11-01', '1', '1', 'a']);
    expect(() => append(['2026-11-01', '1.5', '1', 'a'])).toThrow(/data\[1\]\.clicks is "1.5", not a whole number/);
    expect(() => append(['2026-02-30', '1', '1', 'a'])).toThrow(/data\[2\]\.date is "2026-02-30", not a date/);
  });

  it('rows wait while the stream is full, and go on once it drains; a failure of the COPY is the error of the next wait', async () => {
    const stream = new Kept();
    const { append, appender } = appenderOn(stream);
    stream.full = true;
    const text = 'x'.repeat(1000);
    for (let k = 0; k < 300; k++) append(['2026-11-01', String(k), '1', text]);
    let waited = true;
    const drained = appender.drain().then(() => { waited = false; });
    await new Promise((resolve) => setImmediate(resolve));
    expect(waited).toBe(true);
    stream.full = false;
    stream.emit('drain');
    await drained;
    expect(stream.text().split('\n').length - 1).toBe(300);

    stream.full = true;
    for (let k = 0; k < 300; k++) append(['2026-11-01', String(k), '1', text]);
    const failed = appender.drain();
    stream.emit('error', new Error('the server went away'));
    await expect(failed).rejects.toThrow('refused: the server went away');
  });
});
