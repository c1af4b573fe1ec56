// Where a run's rows go: one small interface, one file per kind (STYLE lesson 15), chosen in one
// table (index.ts). A destination is told when a window begins (`begin`), takes that window's
// report body (a download streamed straight in, or its spool replayed), and commits or aborts the
// window; `finish` after the last window. What a commit made visible comes back as `Committed`,
// for the state file and the log.

import type { Summary } from '../api/schemas.js';
import { writeReport, type ExportResult, type Progress } from '../export/export.js';
import type { Format } from '../export/output.js';
import type { Sink } from '../export/sink.js';
import type { CsvOptions } from '../export/writers.js';
import type { Window } from '../report/windows.js';

/** What one commit made visible: a file, stdout, a table's rows, an object. */
export interface Committed {
  /** the window the output stands for (a merged output: the run's whole period) */
  window: Window;
  /** the windows it holds, with their rows, as the state file records them */
  covered: readonly { window: Window; rows: number }[];
  /** every piece (a split window's halves) that went into it */
  pieces: readonly Window[];
  /** the output the outputs holds only `covered`: what the state recorded with it before and is
   * not in `covered` is no longer there (a merged file rewritten whole) */
  holdsOnly: boolean;
  /** where, as the user named it (undefined: stdout, or a table) */
  file?: string;
  /** the table the rows were loaded into (run --load) */
  table?: string;
  /** the absolute path of `file` */
  path?: string;
  rows: number;
  /** of the output as written (unknown for stdout) */
  bytes?: number;
  sha256?: string;
  /** an object's ETag (-o s3://) */
  etag?: string;
  outcome: 'written' | 'unchanged';
  reportIds: readonly string[];
  summary?: Summary;
  /** -o repeated: the other outputs that hold the same windows, committed with this one */
  others?: readonly Committed[];
}

/** Takes a report body. A download that breaks off is retried into a fresh receiver when
 * `restartable` (a file starts again from nothing; stdout only when nothing was written yet). */
export interface Receiver {
  take(body: AsyncIterable<Uint8Array>, progress?: Progress): Promise<ExportResult>;
  readonly restartable: boolean;
  abort(): Promise<void>;
}

export interface WindowOutput extends Receiver {
  /** the window's rows are all there */
  commit(): Promise<Committed[]>;
}

export interface Destination {
  /** before the first request: what can refuse the run is checked (a database reached, a table's
   * columns compared), so that a run that cannot deliver asks the server for nothing */
  prepare?(): Promise<void>;
  /** `piece` of the planned window `origin` (itself unless it was split) begins; windows of a
   * merged output come in chronological order, the pieces of one window too */
  begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput>;
  /** after the last window: what is still open is made visible */
  finish(): Promise<Committed[]>;
  /** a failed or interrupted run: what is not committed leaves nothing behind */
  abort(): Promise<void>;
}

/** A report body written whole into a sink, as received (JSON byte for byte) or converted. */
export function sinkReceiver(sink: Sink, format: Format, csv: CsvOptions): Receiver & { sink: Sink } {
  let written = false;
  const watched: Sink = {
    path: sink.path,
    rewrite: sink.rewrite?.bind(sink),
    write: (chunk) => { written = true; return sink.write(chunk); },
    commit: () => sink.commit(),
    abort: () => sink.abort(),
  };
  return {
    sink,
    take: (body, progress) => writeReport(body, watched, format, csv, progress),
    get restartable() { return sink.path !== undefined || !written; },
    abort: () => sink.abort(),
  };
}
