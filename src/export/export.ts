// Streaming a downloaded report into its output: from the socket, through the scanner, into the
// writer, into the sink, chunk by chunk. A download that breaks off is retried from the start
// (SPEC section 4) into a fresh temporary file; nothing partial ever reaches the target.

import type { ReportingClient } from '../api/client.js';
import { describeNetworkError, sleepFor } from '../api/http.js';
import { backoffMs } from '../api/retry.js';
import { summary as summarySchema, type Summary } from '../api/schemas.js';
import { CliError, InterruptedError, NetworkError, UnexpectedResponseError } from '../errors.js';
import { padRecords } from './grow.js';
import type { Format } from './output.js';
import { ReportFormatError, ReportScanner } from './scanner.js';
import type { Sink } from './sink.js';
import { CountingWriter, CsvWriter, NdjsonWriter, NewFieldError, type CsvOptions, type RowWriter } from './writers.js';

export interface ExportResult {
  rows: number;
  /** bytes of JSON received */
  bytes: number;
  summary?: Summary;
}

export type Progress = (rows: number, bytes: number) => void;

/** A failure of the connection while the body streamed: worth another try. */
class BodyBrokenError extends NetworkError {}

async function makeWriter(format: Format, csv: CsvOptions, sink: Sink): Promise<RowWriter> {
  if (format === 'csv') return new CsvWriter(csv, sink.rewrite !== undefined);
  if (format === 'ndjson') return new NdjsonWriter();
  // loaded only when asked for: the Parquet and XLSX libraries stay out of every other run
  if (format === 'parquet') return new (await import('./parquet.js')).ParquetRowWriter(csv.columns);
  if (format === 'xlsx') return new (await import('./xlsx.js')).XlsxRowWriter(csv.columns);
  return new CountingWriter();
}

export async function writeReport(
  body: AsyncIterable<Uint8Array>,
  sink: Sink,
  format: Format,
  csv: CsvOptions,
  progress?: Progress,
): Promise<ExportResult> {
  const writer = await makeWriter(format, csv, sink);
  const scanner = new ReportScanner(writer);
  let bytes = 0;
  const checked = (fn: () => void) => {
    try {
      fn();
    } catch (error) {
      if (error instanceof ReportFormatError) throw new UnexpectedResponseError(`the downloaded report is not what the contract describes: ${error.message}`);
      if (error instanceof NewFieldError) {
        const message = format === 'csv' ? error.message : `row ${error.row + 1} has a field "${error.field}" that earlier rows did not have, and ${format} fixes its columns at the first row`;
        throw new CliError(message, 5, format === 'csv' ? 'write to a file with -o (the header is then completed), or choose the columns with --columns' : 'choose the columns with --columns, or write CSV or NDJSON');
      }
      throw error;
    }
  };
  try {
    for await (const chunk of body) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      bytes += buffer.length;
      checked(() => scanner.push(buffer));
      if (format === 'json') await sink.write(buffer);
      else {
        const out = await writer.take();
        if (out.length) await sink.write(out);
      }
      progress?.(scanner.rows, bytes);
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    const network = describeNetworkError(error);
    if (network) throw new BodyBrokenError(`the download broke off after ${bytes} bytes: ${network}`);
    throw error;
  }
  checked(() => scanner.end());
  const tail = await writer.finish();
  if (tail.length) await sink.write(tail);
  if (writer instanceof CsvWriter) {
    const growth = writer.growth();
    if (growth && sink.rewrite) {
      const headerLine = writer.headerLine(growth.header);
      const delimiter = csv.excel && csv.delimiter === ',' ? ';' : csv.delimiter;
      await sink.rewrite((input) => padRecords(input, growth, headerLine, delimiter));
    }
  }
  const parsed = summarySchema.safeParse(scanner.members.summary);
  return { rows: scanner.rows, bytes, summary: parsed.success ? parsed.data : undefined };
}

export interface DownloadOptions {
  format: Format;
  csv: CsvOptions;
  retries: number;
  signal: AbortSignal;
  openSink: () => Promise<Sink>;
  progress?: Progress;
  /** told before a new attempt */
  onRetry?: (attempt: number, reason: string) => void;
}

/** Downloads a ready report into a sink, retrying broken downloads from the start. */
export async function downloadReport(client: ReportingClient, id: string, options: DownloadOptions): Promise<ExportResult & { path?: string }> {
  for (let attempt = 0; ; attempt++) {
    const sink = await options.openSink();
    let written = false;
    const watched: Sink = {
      path: sink.path,
      rewrite: sink.rewrite?.bind(sink),
      write: (chunk) => { written = true; return sink.write(chunk); },
      commit: () => sink.commit(),
      abort: () => sink.abort(),
    };
    try {
      const answer = await client.download(id);
      const result = await writeReport(answer.body, watched, options.format, options.csv, options.progress);
      await sink.commit();
      return { ...result, path: sink.path };
    } catch (error) {
      await sink.abort();
      if (options.signal.aborted) throw new InterruptedError(String(options.signal.reason));
      // a file starts again from nothing; stdout can only start again if nothing was written
      const retryable = error instanceof BodyBrokenError && (sink.path !== undefined || !written);
      if (!retryable || attempt >= options.retries) throw error;
      options.onRetry?.(attempt + 1, (error as Error).message);
      await sleepFor(backoffMs(attempt, Math.random), options.signal);
    }
  }
}
