// add-columns for a database table (table.ts): a field first seen in the middle of a window adds
// its column, and the window is loaded again from the copies of its pieces kept on disk.

import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReportScanner } from '../export/scanner.js';
import { addColumnsSql, type LoadConnection, type Metadata } from '../load/load.js';
import { fieldType, type Column } from '../report/schema.js';
import { RowHash, TableTransaction, guarded, type Open } from './table-window.js';

/** The window transaction, with add-columns: the window loaded again once its columns are added. */
export abstract class TableGrowth extends TableTransaction {
  /** whether a field first seen mid-window can be added (its window then loaded again from a copy) */
  protected get grows(): boolean {
    return !this.spec.selected && this.spec.onSchemaChange === 'add-columns';
  }

  /** Where a piece's body is copied as it comes (add-columns): a file of the window's own folder. */
  protected async copyOf(open: Open, metadata: Metadata): Promise<{ write(chunk: Buffer): Promise<void>; close(): Promise<void> }> {
    if (!open.copies) {
      const dir = mkdtempSync(join(tmpdir(), 'reporting-load-'));
      open.copies = { dir, pieces: [], forget: this.spec.atExit(() => rmSync(dir, { recursive: true, force: true })) };
    }
    const path = join(open.copies.dir, `${open.copies.pieces.length}.json`);
    open.copies.pieces.push({ path, metadata });
    const handle = await openFile(path, 'w');
    let closed = false;
    return {
      write: async (chunk) => { await handle.write(chunk); },
      close: async () => {
        if (closed) return;
        closed = true;
        await handle.close();
      },
    };
  }

  /**
   * Rows brought fields the table lacks (add-columns): the window's transaction is rolled back (a
   * DuckDB table cannot be altered after rows were deleted in the same transaction), the columns
   * are added, and the window is loaded again from the copies of its pieces, in a new transaction.
   * Answers the scanner of the last piece, fed with what was received of it so far.
   */
  protected async regrow(open: Open): Promise<ReportScanner> {
    const connection = this.connection as LoadConnection;
    const { table } = this.spec;
    for (;;) {
      const fields = [...(this.growing ?? [])];
      this.growing = undefined;
      await open.appender.cancel().catch(() => undefined);
      await connection.execute('ROLLBACK');
      const added = fields.map((name): Column => ({ name, type: fieldType(name, undefined), nullable: true, key: false }));
      const missing = added.filter((column) => !this.order.includes(column.name));
      for (const sql of addColumnsSql(table, missing, connection.dialect)) {
        // another run may add it at the same moment: then it is there
        await connection.execute(sql).catch(async (error: unknown) => {
          const now = await connection.columns(table);
          if (!missing.every((column) => now?.has(column.name))) throw error;
        });
      }
      this.columns = [...this.columns, ...added];
      this.order = [...(await connection.columns(table))?.keys() ?? []];
      open.appender = await this.openTransaction(connection, open.origin);
      open.hash = new RowHash();
      open.rows = 0;
      const pieces = open.copies?.pieces ?? [];
      let scanner: ReportScanner | undefined;
      for (const [i, piece] of pieces.entries()) {
        scanner = this.scannerFor(open, piece.metadata);
        for await (const chunk of createReadStream(piece.path)) {
          guarded(() => (scanner as ReportScanner).push(chunk as Buffer));
          if (this.growing) break;
          await open.appender.drain();
        }
        if (this.growing) break;
        // the earlier pieces are whole; the last one goes on with the rest of its body
        if (i < pieces.length - 1) guarded(() => (scanner as ReportScanner).end());
        if (this.growing) break;
      }
      if (!this.growing) return scanner as ReportScanner;
    }
  }

  /** The scanner of a piece's body (table.ts). */
  protected abstract scannerFor(open: Open, metadata: Metadata): ReportScanner;
}
