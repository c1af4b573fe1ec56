// Stage 4, record: what happened to each window goes into the state file (--state) or the journal
// (without it), and out as events to the view. Only what a destination committed is recorded done.

import type { Committed } from '../destinations/destination.js';
import type { Window } from '../report/windows.js';
import type { Journal, ReportAbout } from './journal.js';
import type { PlannedWindow } from './plan.js';
import { ReportMismatchError } from '../errors.js';
import { isReportFailure, type PoolEvent } from './pool.js';
import type { RunState } from './state.js';
import type { RunView } from './view.js';

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class Recorder {
  /** the report of each window, for the events of the pool (split, failed) */
  private readonly reportOf = new Map<string, string>();

  constructor(
    private readonly view: RunView,
    private readonly state: RunState | undefined,
    /** without a state file: each window's report, remembered for an hour */
    private readonly journal: { journal: Journal; keyOf(window: Window): string; about?: ReportAbout } | undefined,
    private readonly trace: (line: string) => void,
    private readonly signal: AbortSignal,
  ) {}

  reportIdOf(window: Window): string | undefined {
    return this.reportOf.get(`${window.since}-${window.until}`);
  }

  knows(window: Window, reportId: string): void {
    this.reportOf.set(`${window.since}-${window.until}`, reportId);
  }

  /** The plan: warnings, skipped windows, and, with a state, the windows to fetch recorded pending
   * and the run's `period` recorded as planned, before the first submit: with a window to fetch,
   * in the write of the first submit's intent (one write fewer a job of a fleet). */
  async planned(windows: readonly PlannedWindow[], period?: Window): Promise<void> {
    for (const p of windows) {
      if (p.entry?.submitting) {
        this.view.emit({ event: 'warning', window: p.window, message: `an earlier run was stopped while submitting this window's report (at ${p.entry.submitting}): a report of unknown ID may be running on the server; it costs the platform one report, and nothing in the files` });
      }
      if (p.step !== 'skip') continue;
      this.view.skip(p.window);
      this.view.emit({ event: 'skipped', window: p.window, reportId: p.entry?.reportId ?? undefined, file: p.entry?.file ?? undefined, reason: 'done' });
    }
    const toFetch = windows.filter((p) => p.step !== 'skip').map((p) => p.window);
    await this.state?.pending(toFetch, period, toFetch.length > 0);
  }

  async submitting(window: Window): Promise<void> {
    await this.state?.submitting(window);
  }

  /** The intent recorded for a submit that was not made after all (the run stopped first). */
  async notSubmitting(window: Window): Promise<void> {
    await this.state?.update(window, { submitting: null }, true);
  }

  async submitted(window: Window, reportId: string): Promise<void> {
    this.knows(window, reportId);
    await this.state?.submitted(window, reportId);
    // the journal is a convenience: a run does not fail because it cannot write it
    await this.journal?.journal.remember(this.journal.keyOf(window), reportId, undefined, this.journal.about).catch((error: unknown) => this.trace(`  journal not written: ${messageOf(error)}`));
  }

  /** An output is in place: say how, and record the windows it holds (a table's: unless `record`
   * is false, when another destination does not have them yet; recordLoaded then does). */
  async committed(output: Committed, record = true): Promise<void> {
    const { window, bytes, sha256 } = output;
    const reportId = output.reportIds.length === 1 ? output.reportIds[0] : undefined;
    if (output.table !== undefined) return this.loaded(output, reportId, record);
    // -o repeated: each output said, the windows recorded once, with every output's record
    const all = [output, ...output.others ?? []];
    for (const one of all) {
      if (one.outcome === 'unchanged' && one.file !== undefined) this.view.emit({ event: 'unchanged', window, reportId, file: one.file, rows: one.rows, bytes: one.bytes ?? 0, sha256: one.sha256 ?? '' });
      else this.view.emit({ event: 'written', window, reportId, file: one.file, rows: one.rows, bytes: one.bytes, sha256: one.sha256 });
    }
    const outputs = output.others?.length
      ? { outputs: all.map((one) => ({ file: one.path ?? null, bytes: one.bytes ?? null, sha256: one.sha256 ?? null, ...(one.etag ? { etag: one.etag } : {}) })) }
      : {};
    for (const piece of output.covered) {
      await this.state?.done(piece.window, { rows: piece.rows, bytes: bytes ?? null, sha256: sha256 ?? null, file: output.path ?? null, ...(output.etag ? { etag: output.etag } : {}), ...outputs }, output.outcome === 'unchanged');
      this.forget(piece.window);
    }
    for (const piece of output.pieces) this.forget(piece);
    // one file rewritten whole: the windows recorded in it before and not now are not in it
    if (output.holdsOnly && output.path) await this.state?.rewritten(output.path, output.covered.map((piece) => piece.window));
  }

  /** A window's rows are in a table (its transaction committed), or were the same as last time. */
  private async loaded(output: Committed, reportId: string | undefined, record: boolean): Promise<void> {
    const { window, table, rows } = output;
    const sha256 = output.sha256 ?? '';
    if (output.outcome === 'unchanged') this.view.emit({ event: 'unchanged', window, reportId, table, rows, sha256 });
    else this.view.emit({ event: 'loaded', window, reportId, table: table as string, rows, sha256 });
    if (record) await this.recordLoaded(output);
  }

  /** A window loaded into a table, recorded done (with what was loaded) in the state. */
  async recordLoaded(output: Committed): Promise<void> {
    const { window, table, rows } = output;
    // the report IDs of the rows the table holds: an unchanged window keeps the rows loaded before
    const reportIds = output.outcome === 'unchanged' ? this.state?.entry(window)?.loaded?.reportIds : output.reportIds;
    await this.state?.loaded(window, { table: table as string, rows, sha256: output.sha256 ?? '', ...(reportIds ? { reportIds: [...reportIds] } : {}) }, output.outcome === 'unchanged');
    this.forget(window);
    for (const piece of output.pieces) this.forget(piece);
  }

  /** A scheduling event of the pool: a window split in two, or failed for good. */
  pool(event: PoolEvent): void {
    this.view.pool(event);
    if (event.type === 'split') {
      this.view.emit({ event: 'split', window: event.window, reportId: this.reportIdOf(event.window), into: event.into, message: messageOf(event.error) });
      this.forget(event.window);
      void this.state?.split(event.window, event.into).catch(() => undefined);
    } else if (event.type === 'failed') {
      const reportId = this.reportIdOf(event.window);
      // a report that ended in failure is not worth resuming; one that was still running when
      // the wait gave up (--max-wait, the network) is: the next run resumes it (so is one a Ctrl-C
      // left); a report that is not this window's (ReportMismatchError) is not resumed either
      const resumable = reportId !== undefined && !isReportFailure(event.error) && !(event.error instanceof ReportMismatchError);
      this.view.emit({ event: 'failed', window: event.window, reportId, message: messageOf(event.error), ...(resumable ? { resumable: true as const } : {}) });
      if (this.signal.aborted) return;
      if (resumable) {
        void this.state?.update(event.window, { error: messageOf(event.error) }).catch(() => undefined);
      } else {
        this.forget(event.window);
        void this.state?.failed(event.window, messageOf(event.error)).catch(() => undefined);
      }
    }
  }

  private forget(window: Window): void {
    this.journal?.journal.forget(this.journal.keyOf(window));
  }
}
