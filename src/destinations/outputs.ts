// Opening an output: a file (atomic; with a state file, left untouched when its content did not
// change), an object, or stdout, as the table of sinks opens each (sinks.ts). Shared by the file
// destinations.

import { statSync } from 'node:fs';
import type { Summary } from '../api/schemas.js';
import { RowOutput } from '../export/export.js';
import type { Format } from '../export/output.js';
import type { CsvOptions } from '../export/writers.js';
import type { Output } from '../context.js';
import type { Host } from '../host.js';
import type { Window } from '../report/windows.js';
import type { Committed, WindowOutput } from './destination.js';
import { WindowMerger, type MergePlan } from './merge.js';
import { describeOutput, openOutput, type Opened, type RecordedObject, type SinkDeps } from './sinks.js';

export type { Opened } from './sinks.js';

export interface OutputSpec {
  format: Format;
  csv: CsvOptions;
  merge: MergePlan;
  cwd: string;
  host: Host;
  stdout: Output;
  /** with --state: a file whose content did not change is left untouched (`unchanged`) */
  keepUnchanged: boolean;
  /** what a sink outside this machine needs (-o s3://...): where its client finds its settings,
   * where uploads are recorded */
  remote?: Pick<SinkDeps, 'env' | 'configDir' | 'trace' | 'ledger'>;
  /** with --state: what the state file recorded of the output there (an object's SHA-256 and ETag) */
  recorded?: (target: string) => RecordedObject | undefined;
}

/** `file` (undefined: stdout). */
export function openTarget(file: string | undefined, spec: OutputSpec): Promise<Opened> {
  const deps: SinkDeps = { cwd: spec.cwd, host: spec.host, stdout: spec.stdout, ...spec.remote };
  return openOutput(file, deps, { format: spec.format, keepUnchanged: spec.keepUnchanged, recorded: file === undefined ? undefined : spec.recorded?.(file) });
}

/** Rows of several windows (or pieces) into one output, merged by the plan (summed for RANGE). */
export class MergedRows {
  rows = 0;
  readonly reportIds: string[] = [];
  readonly pieces: Window[] = [];
  readonly covered: { window: Window; rows: number }[] = [];
  private constructor(readonly opened: Opened, readonly output: RowOutput, readonly merger: WindowMerger) {}

  static async open(file: string | undefined, spec: OutputSpec): Promise<MergedRows> {
    const opened = await openTarget(file, spec);
    // rows pass straight through to the writer unless they are summed (RANGE, no time breakdown,
    // a MONTHLY window's split pieces): bytes mode is for those that pass through
    const output = await RowOutput.open(opened.sink, spec.format, spec.csv, spec.merge.mode === 'concat' && spec.merge.time !== 'MONTHLY');
    let merged: MergedRows | undefined;
    // rows counted as written: summing (RANGE) writes fewer than it reads
    const merger = new WindowMerger(spec.merge, {
      row(keys, values, kinds, raw) {
        (merged as MergedRows).rows++;
        output.writer.row(keys, values, kinds, raw);
      },
    });
    merged = new MergedRows(opened, output, merger);
    return merged;
  }

  /** a piece's body replayed into the output */
  async take(piece: Window, origin: Window, body: AsyncIterable<Uint8Array>): Promise<{ rows: number; bytes: number; summary?: Summary }> {
    const before = this.rows;
    const scanner = await this.output.replay(body as AsyncIterable<Buffer>, this.merger.begin(piece, origin));
    const summary = scanner.members.summary as Summary | undefined;
    this.merger.end(piece, summary);
    return { rows: this.rows - before, bytes: 0, summary };
  }

  /** The window output of one piece whose rows go into this output; `committed` says what its
   * commit made visible (nothing, until the output is closed). */
  piece(piece: Window, origin: Window, reportId: string, committed: () => Promise<Committed[]>): WindowOutput {
    let taken = 0;
    return {
      take: async (body) => {
        const result = await this.take(piece, origin, body);
        taken = result.rows;
        return result;
      },
      restartable: false,
      abort: async () => undefined, // the output as a whole is aborted by its destination
      commit: async () => {
        this.record(piece, taken, reportId);
        return committed();
      },
    };
  }

  /** the piece is in: remembered for the commit */
  record(piece: Window, rows: number, reportId: string): void {
    this.reportIds.push(reportId);
    this.pieces.push(piece);
    this.covered.push({ window: piece, rows });
  }

  /** what summing held, then the tail, then the file appears */
  async close(window: Window, file: string | undefined, covered: readonly { window: Window; rows: number }[], holdsOnly: boolean, cwd: string): Promise<Committed> {
    this.merger.finish();
    const summary = this.merger.summary();
    await this.output.close(summary);
    // summed rows (RANGE, no time breakdown) are written by finish(): one window holds them all
    const held = covered.length === 1 ? [{ window: (covered[0] as { window: Window }).window, rows: this.rows }] : covered;
    return placedOutput({ window, file, covered: held, pieces: this.pieces, holdsOnly, rows: this.rows, reportIds: this.reportIds, summary }, this.opened, cwd);
  }
}

/** What a committed output says of itself: the file's size and sha256, written or unchanged. */
export function placedOutput(base: Omit<Committed, 'path' | 'bytes' | 'sha256' | 'outcome'>, opened: Opened, cwd: string): Committed {
  if (base.file === undefined) return { ...base, outcome: 'written' };
  const placed = opened.placed();
  // a file's absolute path, an object's URL; an object's size is known from the upload
  const path = describeOutput(base.file, cwd);
  const etag = placed && typeof placed.etag === 'string' ? { etag: placed.etag } : {};
  return { ...base, path, bytes: placed?.bytes ?? statSync(path).size, sha256: placed?.sha256, ...etag, outcome: placed?.outcome ?? 'written' };
}
