// What every row writer is (CSV, NDJSON, Parquet, XLSX), and what they share: the types the
// writers, the header growth (grow.ts) and the typed layouts (typed.ts) import, so that their
// imports run one way (writers -> grow, typed -> row-writer), never back to writers.ts.

import type { RowHandler } from './scanner.js';
import type { Sink } from './sink.js';

export interface RowWriter extends RowHandler {
  /** takes rows in the scanner's bytes mode (see ReportScanner), and writes bytes */
  readonly byteRows?: boolean;
  /** text or bytes ready to be written; empties the buffer */
  take(): string | Buffer | Promise<string | Buffer>;
  /** text or bytes to end the output with */
  finish(): string | Buffer | Promise<string | Buffer>;
  /** once everything was written: complete what could only be known at the end (a CSV header
   * that grew), where the sink can rewrite its output */
  complete?(sink: Sink): Promise<void>;
  /** lets go of what the writer holds for the process while it writes (a bound on V8's young
   * generation): called when the export ends, finished or not; finish() does it too */
  release?(): void;
}

/** Raised when a later row brings a field the header does not have and the output cannot be
 * rewritten (stdout): the CLI never drops a field silently. */
export class NewFieldError extends Error {
  constructor(readonly field: string, readonly row: number) {
    super(`row ${row + 1} has a field "${field}" that earlier rows did not have, and the CSV header was already written`);
  }
}

/** What the header became when later rows brought fields that earlier rows did not have. */
export interface HeaderGrowth {
  /** the final header */
  header: string[];
  /** for each stretch of rows written with fewer columns: its last row (exclusive) and column count */
  epochs: { untilRow: number; columns: number }[];
}
