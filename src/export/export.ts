// Streaming a downloaded report into its output: from the socket, through the scanner, into the
// writer, into the sink, chunk by chunk. A body that breaks off is a BodyBrokenError, which the
// download job (src/engine/download.ts) retries from the start.

import { describeNetworkError, NetworkFailure } from '../network.js';
import { formatDuration } from '../duration.js';
import { summary as summarySchema, type Summary } from '../api/schemas.js';
import { CliError, NetworkError, UnexpectedResponseError } from '../errors.js';
import type { Format } from './output.js';
import { Kind, ReportFormatError, ReportScanner, type RowHandler } from './scanner.js';
import { casedColumns } from '../report/schema.js';
import { snakeCase } from '../report/column-case.js';
import { SnakeCaseRows } from './case.js';
import { RowSelector } from './select.js';
import type { Sink } from './sink.js';
import { CountingWriter, CsvWriter, NdjsonWriter, NewFieldError, type CsvOptions, type RowWriter } from './writers.js';

export interface ExportResult {
  rows: number;
  /** bytes of JSON received */
  bytes: number;
  summary?: Summary;
}

export type Progress = (rows: number, bytes: number) => void;

/** A download is stalled when, over --timeout of time spent waiting for it, less than this many
 * bytes a second arrived (a server trickling one byte a second never trips the idle timeout). */
export const STALL_FLOOR_BYTES_PER_S = 1024;

/** The body, failing as stalled when its throughput stays below the floor for `windowMs` of waiting.
 * Only time spent waiting on the server counts: a slow output (a pipe to a pager) is not a stall. */
export async function* stallGuarded(
  body: AsyncIterable<Uint8Array>,
  windowMs: number,
  now: () => number = () => performance.now(),
): AsyncGenerator<Uint8Array> {
  let waited = 0;
  let bytes = 0;
  let asked = now();
  for await (const chunk of body) {
    waited += now() - asked;
    bytes += chunk.length;
    if (waited >= windowMs) {
      if (bytes < (STALL_FLOOR_BYTES_PER_S * waited) / 1000) {
        throw new NetworkFailure(`the download stalled: ${bytes} bytes in ${formatDuration(waited)}, under ${STALL_FLOOR_BYTES_PER_S} bytes a second (--timeout)`);
      }
      waited = 0;
      bytes = 0;
    }
    yield chunk;
    asked = now();
  }
}

/** A failure of the connection while the body streamed: worth another try. */
export class BodyBrokenError extends NetworkError {}

/** `bytesOk`: a CSV writer may take rows in bytes mode (see ReportScanner); scanners follow
 * `bytesOf(writer)`. `jsonRows`: JSON is written from the rows (merged windows), never copied. */
async function makeWriter(format: Format, csv: CsvOptions, sink: Sink, bytesOk = false, jsonRows = false): Promise<RowWriter> {
  if (csv.columnCase !== 'snake') return namedWriter(format, csv, sink, bytesOk, jsonRows);
  // --column-case snake: the writer gets rows whose keys are the columns' names, and the columns
  // chosen (and the schema of an empty report) so named; JSON is then written from the rows
  const named: CsvOptions = { ...csv, columns: csv.columns?.map(snakeCase), schema: csv.schema && casedColumns(csv.schema, 'snake') };
  const writer = await namedWriter(format, named, sink, bytesOk, true);
  return new SnakeCaseRows(writer, (format === 'json' || format === 'ndjson') && !csv.columns);
}

/** The writer of a format, fed rows whose keys are the columns' names. */
async function namedWriter(format: Format, csv: CsvOptions, sink: Sink, bytesOk: boolean, jsonRows: boolean): Promise<RowWriter> {
  if (format === 'csv') return new CsvWriter(csv, sink.rewrite !== undefined, bytesOk);
  if (format === 'ndjson') return new NdjsonWriter(csv, bytesOk);
  // JSON with --columns: written from the rows (the body is copied as received otherwise)
  if (format === 'json' && (csv.columns || jsonRows)) return new JsonRowsWriter(csv, bytesOk);
  // loaded only when asked for: the Parquet and XLSX libraries stay out of every other run
  if (format === 'parquet') return new (await import('./parquet.js')).ParquetRowWriter(csv, undefined, undefined, bytesOk);
  if (format === 'xlsx') return new (await import('./xlsx.js')).XlsxRowWriter(csv);
  return new CountingWriter(bytesOk);
}

const bytesOf = (writer: RowWriter) => writer.byteRows === true;

/** Errors of the scanner and writers as the CLI reports them. */
function checked<T>(format: Format, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ReportFormatError) throw new UnexpectedResponseError(`the downloaded report is not what the contract describes: ${error.message}`);
    if (error instanceof NewFieldError) {
      const message = format === 'csv' ? error.message : `row ${error.row + 1} has a field "${error.field}" that earlier rows did not have, and ${format} fixes its columns at the first row`;
      throw new CliError(message, 5, format === 'csv' ? 'write to a file with -o (the header is then completed), or choose the columns with --columns' : 'choose the columns with --columns, or write CSV or NDJSON');
    }
    throw error;
  }
}

/** The end of an output: the writer's tail, then what only the end can tell (a CSV header that grew). */
async function finishRows(writer: RowWriter, sink: Sink): Promise<void> {
  const tail = await writer.finish();
  if (tail.length) await sink.write(tail);
  await writer.complete?.(sink);
}

/** A report written from rows rather than copied: `{"data":[...],"summary":...}`, rows as sent. */
class JsonRowsWriter implements RowWriter {
  private pending = '';
  private started = false;
  /** with --columns: the chosen fields, else the rows as sent */
  private readonly selector?: RowSelector;

  constructor(options: Pick<CsvOptions, 'columns' | 'dropped'> = {}, readonly byteRows = false) {
    if (options.columns) this.selector = new RowSelector(options.columns, options.dropped, byteRows);
  }

  row(keys: string[], values: string[], kinds: Kind[], raw: string): void {
    this.pending += (this.started ? ',' : '{"data":[') + (this.selector ? this.selector.json(keys, values, kinds) : raw);
    this.started = true;
  }

  take(): string | Buffer {
    const text = this.pending;
    this.pending = '';
    return this.byteRows ? Buffer.from(text, 'latin1') : text;
  }

  finish(): string {
    return this.started ? '' : '{"data":[';
  }
}

/**
 * Rows from several downloads into one output (a chunked run's merged file, or one window's file
 * made of its pieces): the same writers as one report, drained to the sink as rows come.
 */
export class RowOutput {
  private constructor(readonly sink: Sink, private readonly format: Format, readonly writer: RowWriter) {}

  /** `bytesOk`: every row reaches the writer from replay()'s scanner as it was scanned (nothing in
   * between reads the values, as summing would), so they may be in bytes mode */
  static async open(sink: Sink, format: Format, csv: CsvOptions, bytesOk = false): Promise<RowOutput> {
    return new RowOutput(sink, format, await makeWriter(format, csv, sink, bytesOk, true));
  }

  /** A downloaded body (a spool file) replayed through the scanner into `handler`, whose rows
   * end up in this output; drained after every chunk. Answers the scanner (rows, summary). */
  async replay(body: AsyncIterable<Buffer>, handler: RowHandler): Promise<ReportScanner> {
    const scanner = new ReportScanner(handler, undefined, bytesOf(this.writer));
    for await (const chunk of body) {
      checked(this.format, () => scanner.push(chunk));
      await this.drain();
    }
    checked(this.format, () => scanner.end());
    await this.drain();
    return scanner;
  }

  /** Writes what the writer holds. */
  async drain(): Promise<void> {
    const out = await checked(this.format, () => this.writer.take());
    if (out.length) await this.sink.write(out);
  }

  /** Ends the output (JSON: with `summary`) and makes it visible. */
  async close(summary?: unknown): Promise<void> {
    await this.drain();
    if (this.format === 'json') await this.sink.write(`${await this.writer.finish()}],"summary":${JSON.stringify(summary ?? null)}}`);
    else await finishRows(this.writer, this.sink);
    await this.sink.commit();
  }
}

export async function writeReport(
  body: AsyncIterable<Uint8Array>,
  sink: Sink,
  format: Format,
  csv: CsvOptions,
  progress?: Progress,
): Promise<ExportResult> {
  const writer = await makeWriter(format, csv, sink, true);
  const scanner = new ReportScanner(writer, undefined, bytesOf(writer));
  // JSON as received (byte for byte), unless --columns chose its fields or --column-case renames them
  const copy = format === 'json' && !csv.columns && csv.columnCase !== 'snake';
  let bytes = 0;
  try {
    for await (const chunk of body) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      bytes += buffer.length;
      checked(format, () => scanner.push(buffer));
      if (copy) await sink.write(buffer);
      else {
        const out = await writer.take();
        if (out.length) await sink.write(out);
      }
      progress?.(scanner.rows, bytes);
    }
  } catch (error) {
    writer.release?.();
    if (error instanceof CliError) throw error;
    const network = describeNetworkError(error);
    if (network) throw new BodyBrokenError(`the download broke off after ${bytes} bytes: ${network}`);
    throw error;
  }
  try {
    checked(format, () => scanner.end());
    if (format === 'json' && !copy) {
      const rest = await writer.take();
      if (rest.length) await sink.write(rest);
      await sink.write(`${await writer.finish()}],"summary":${JSON.stringify(scanner.members.summary ?? null)}}`);
    } else await finishRows(writer, sink);
  } finally {
    writer.release?.();
  }
  const parsed = summarySchema.safeParse(scanner.members.summary);
  return { rows: scanner.rows, bytes, summary: parsed.success ? parsed.data : undefined };
}
