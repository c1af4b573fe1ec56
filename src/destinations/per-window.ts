// One file per planned window (-o with {since}/{until}): each written atomically as soon as its
// window is in (the pieces of a split window summed back into it), the others going on.

import type { Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';
import { MergedRows, type OutputSpec } from './outputs.js';

export class PerWindowFiles implements Destination {
  private readonly opened = new Map<number, MergedRows>();

  constructor(private readonly fileOf: (window: Window) => string, private readonly spec: OutputSpec) {}

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    let rows = this.opened.get(origin.since);
    if (!rows) {
      rows = await MergedRows.open(this.fileOf(origin), this.spec);
      this.opened.set(origin.since, rows);
    }
    const output = rows;
    return output.piece(piece, origin, reportId, async () => {
      // the piece that completes its planned window closes the file
      if (piece.until !== origin.until) return [];
      this.opened.delete(origin.since);
      return [await output.close(origin, this.fileOf(origin), [{ window: origin, rows: output.rows }], false, this.spec.cwd)];
    });
  }

  async finish(): Promise<Committed[]> {
    return [];
  }

  async abort(): Promise<void> {
    for (const rows of this.opened.values()) await rows.output.sink.abort();
    this.opened.clear();
  }
}
