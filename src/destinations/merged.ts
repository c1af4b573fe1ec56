// One output for the whole run: a file (atomic) or stdout. Windows come in chronological order and
// their rows are merged (summed for RANGE or no time breakdown: that belongs here, not to the
// stages); the output appears when the last window is in. A run of one report (`whole`) streams
// its download straight in, JSON byte for byte as received.

import type { Window } from '../report/windows.js';
import { sinkReceiver, type Committed, type Destination, type WindowOutput } from './destination.js';
import { MergedRows, openTarget, placedOutput, type OutputSpec } from './outputs.js';

export class MergedOutput implements Destination {
  private rows?: MergedRows;
  private open?: { abort(): Promise<void> };

  constructor(
    /** the file (undefined: stdout); `reportId` fills {reportId} */
    private readonly fileOf: (reportId: string) => string | undefined,
    /** the period the output stands for */
    private readonly period: Window,
    private readonly spec: OutputSpec & { whole: boolean },
  ) {}

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    if (this.spec.whole) return this.beginWhole(piece, reportId);
    this.rows ??= await MergedRows.open(this.fileOf(reportId), this.spec);
    // the file appears at finish(), when every window is in
    return this.rows.piece(piece, origin, reportId, async () => []);
  }

  private async beginWhole(window: Window, reportId: string): Promise<WindowOutput> {
    const file = this.fileOf(reportId);
    const opened = await openTarget(file, this.spec);
    const receiver = sinkReceiver(opened.sink, this.spec.format, this.spec.csv);
    this.open = receiver;
    let result: Awaited<ReturnType<typeof receiver.take>> | undefined;
    return {
      take: async (body, progress) => (result = await receiver.take(body, progress)),
      get restartable() { return receiver.restartable; },
      abort: () => receiver.abort(),
      commit: async () => {
        await opened.sink.commit();
        this.open = undefined;
        const rows = result?.rows ?? 0;
        return [placedOutput({ window, file, covered: [{ window, rows }], pieces: [window], holdsOnly: true, rows, reportIds: [reportId], summary: result?.summary }, opened, this.spec.cwd)];
      },
    };
  }

  async finish(): Promise<Committed[]> {
    if (this.spec.whole) return [];
    const rows = this.rows ?? await MergedRows.open(this.fileOf(''), this.spec);
    this.rows = undefined;
    return [await rows.close(this.period, this.fileOf(''), rows.covered, true, this.spec.cwd)];
  }

  async abort(): Promise<void> {
    await this.rows?.output.sink.abort();
    await this.open?.abort();
  }
}
