// The rows of a Postgres load as `COPY ... FROM STDIN` text (postgres.ts opens the COPY): each row
// encoded straight into bytes, the window's metadata columns copied in as bytes made once, handed
// to the COPY by the batch with room for a few batches in flight.
//
// Written into a buffer rather than joined as text: a window of 1M rows was 220 MB of COPY text
// (the metadata columns are three quarters of it), joined into strings of 256 KiB and encoded
// again; the client's CPU went to those strings and their collection.

import { Kind } from '../export/scanner.js';
import type { RowLayout } from '../export/typed.js';
import type { Column } from '../report/schema.js';
import type { Metadata, TableAppender } from './load.js';

/** Bytes of COPY text gathered before a write: few writes, bounded memory. */
const BATCH_BYTES = 256 * 1024;
/** Bytes the COPY stream may hold before the rows wait for the server: a few batches, so that a
 * server (or a client) that was not scheduled for a moment does not stop the other at once. */
const IN_FLIGHT_BYTES = 4 * 1024 * 1024;

const TAB = 9;
const NEWLINE = 10;
const BACKSLASH = 92;
/** COPY's escapes of backslash, newline, carriage return and tab: the letter after a backslash */
const ESCAPES: Record<number, number> = { 92: 92, 10: 110, 13: 114, 9: 116 };
/** `\N`: NULL */
const NULL_BYTES = [BACKSLASH, 78];

/** the options pg-copy-streams hands to its stream (a Writable's) */
export const COPY_STREAM_OPTIONS = { highWaterMark: IN_FLIGHT_BYTES };

export interface CopyStream {
  write(chunk: Buffer): boolean;
  end(callback: () => void): void;
  once(event: 'drain' | 'error' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'error', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  destroy(error: Error): void;
  readonly destroyed: boolean;
}

/** A cell's text, its value checked against the column's type (null for NULL), and whether the
 * text can hold a character COPY escapes (a valid count, amount, day or instant cannot). */
interface CopyCell {
  read: (layout: RowLayout, column: number) => string | null;
  escaped: boolean;
}

/** Each column's cell, read as DuckDB's appender reads it, written as the server sent it. */
function cellsOf(columns: readonly Column[]): CopyCell[] {
  const checked = (test: (l: RowLayout, i: number) => unknown) => (l: RowLayout, i: number) => (test(l, i) === null ? null : l.texts[i] as string);
  return columns.map((column): CopyCell => {
    switch (column.type) {
      case 'int64': return { read: (l, i) => l.integer(i), escaped: false };
      case 'double': return { read: checked((l, i) => l.number(i)), escaped: false };
      case 'date': return { read: dayCell(), escaped: false };
      case 'timestamp': return { read: checked((l, i) => l.instant(i)), escaped: false };
      // the text's UTF-8 as received (bytes mode), escaped as it is written
      default: return { read: (l, i) => l.received(i), escaped: true };
    }
  });
}

/** A DAILY day: checked once for each text (a window's rows mostly share their day). */
function dayCell(): CopyCell['read'] {
  let last: string | undefined;
  return (l, i) => {
    const text = l.texts[i] as string;
    if (l.kinds[i] === Kind.String && text === last) return text;
    if (l.day(i) === null) return null;
    last = text;
    return text;
  };
}

export class CopyAppender implements TableAppender {
  private buffer = Buffer.allocUnsafe(2 * BATCH_BYTES);
  private at = 0;
  private failure?: Error;
  private readonly cells: CopyCell[];
  /** the metadata columns' bytes (with the row's end), made once per window: three dates to ISO
   * text a row were 3M conversions for 1M rows */
  private metadataOf?: Metadata;
  private metadataBytes = Buffer.alloc(0);

  constructor(private readonly stream: CopyStream, columns: readonly Column[], failed: (error: Error) => Error) {
    stream.on('error', (error: Error) => { this.failure ??= failed(error); });
    this.cells = cellsOf(columns);
  }

  row(layout: RowLayout, metadata: Metadata): void {
    if (metadata !== this.metadataOf) {
      this.metadataOf = metadata;
      this.metadataBytes = Buffer.from(`${escape(metadata[0])}\t${isoOf(metadata[1])}\t${isoOf(metadata[2])}\t${escape(metadata[3])}\t${new Date(metadata[4]).toISOString()}\n`, 'utf8');
    }
    const cells = this.cells;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i] as CopyCell;
      const text = cell.read(layout, i);
      if (text === null) this.put(NULL_BYTES);
      else if (cell.escaped) this.putEscaped(text);
      else this.putPlain(text);
      this.buffer[this.at++] = TAB;
    }
    this.room(this.metadataBytes.length);
    this.at += this.metadataBytes.copy(this.buffer, this.at);
  }

  /** Room for `bytes` more, and for the tab after them (a row of the 64 MiB cap grows the buffer). */
  private room(bytes: number): void {
    if (this.at + bytes + 1 <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.at + bytes + 1));
    this.buffer.copy(grown, 0, 0, this.at);
    this.buffer = grown;
  }

  private put(bytes: readonly number[]): void {
    this.room(bytes.length);
    for (const byte of bytes) this.buffer[this.at++] = byte;
  }

  /** a text that needs no escape (one char a byte: bytes mode, or ASCII) */
  private putPlain(text: string): void {
    this.room(text.length);
    const buffer = this.buffer;
    let at = this.at;
    for (let k = 0; k < text.length; k++) buffer[at++] = text.charCodeAt(k);
    this.at = at;
  }

  /** a text in bytes mode, COPY's escapes written as they are met */
  private putEscaped(text: string): void {
    this.room(2 * text.length);
    const buffer = this.buffer;
    let at = this.at;
    for (let k = 0; k < text.length; k++) {
      const c = text.charCodeAt(k);
      if (c === BACKSLASH || c === NEWLINE || c === 13 || c === TAB) {
        buffer[at++] = BACKSLASH;
        buffer[at++] = ESCAPES[c] as number;
      } else buffer[at++] = c;
    }
    this.at = at;
  }

  async drain(): Promise<void> {
    if (this.at >= BATCH_BYTES) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.at === 0) return;
    // the stream keeps the bytes handed to it: the next rows go into a buffer of their own
    const chunk = this.buffer.subarray(0, this.at);
    this.buffer = Buffer.allocUnsafe(2 * BATCH_BYTES);
    this.at = 0;
    if (!this.stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        const drained = () => { this.stream.off('error', failed); resolve(); };
        const failed = () => { this.stream.off('drain', drained); reject(this.failure); };
        this.stream.once('drain', drained);
        this.stream.once('error', failed);
      });
    }
    if (this.failure) throw this.failure;
  }

  private ended = false;

  async cancel(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (this.stream.destroyed) return;
    // a CopyFail: the server ends the COPY with an error, the connection is usable again
    await new Promise<void>((resolve) => {
      this.stream.once('close', () => resolve());
      this.stream.destroy(new Error('the load of this window was given up'));
    });
  }

  async finish(): Promise<void> {
    this.ended = true;
    await this.flush();
    await new Promise<void>((resolve, reject) => {
      if (this.failure) { reject(this.failure); return; }
      this.stream.once('error', () => reject(this.failure));
      this.stream.end(() => resolve());
    });
    if (this.failure) throw this.failure;
  }
}

const NEEDS_ESCAPE = /[\\\n\r\t]/;
/** COPY's text format: backslash, newline, carriage return and tab escaped; `\N` is NULL. */
const escape = (text: string) => (NEEDS_ESCAPE.test(text) ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t') : text);

const isoOf = (seconds: number) => new Date(seconds * 1000).toISOString();
