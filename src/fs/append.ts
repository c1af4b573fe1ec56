// A file written by appending only, each append made durable before it is acknowledged: the state
// file's log of changes (engine/state-log.ts). A crash can leave the last append in part; readers
// drop a last line without its newline.

import { open, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { syncDir } from './atomic.js';

export class AppendFile {
  private handle: FileHandle | undefined;

  constructor(readonly path: string) {}

  /** Starts the file over with `text` (created or emptied), durably: its folder entry too. */
  async begin(text: string): Promise<void> {
    await this.close();
    this.handle = await open(this.path, 'w', 0o644);
    await this.append(text);
    await syncDir(dirname(this.path));
  }

  /** Appends `text` and waits until it is on disk. */
  async append(text: string): Promise<void> {
    if (!this.handle) throw new Error(`${this.path} is not open`);
    // (writeFile writes it all, from the current position)
    await this.handle.writeFile(text);
    await this.handle.sync();
  }

  get open(): boolean {
    return this.handle !== undefined;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  /** Closes and deletes the file (none there is fine). */
  async remove(): Promise<void> {
    await this.close().catch(() => undefined);
    await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
