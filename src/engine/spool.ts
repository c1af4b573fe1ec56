// Where a run's windows are spooled: each window's report as downloaded (JSON lines), read back as
// it is delivered into the destination, then removed. One folder for the runs of a process that
// are going at once (a fleet's jobs, `jobs run`), each run's files under its own number, removed
// with the last such run and, whatever happens, as the process exits. Each run made and removed a
// folder of its own before: a mkdir and a recursive removal on the main thread at every job's
// start and end, which waited on the disk's journal while the other jobs' states were flushed.

import { mkdtempSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Host } from '../host.js';

interface Folder {
  path: string;
  runs: number;
  forget: () => void;
}

const folders = new WeakMap<Host, Folder>();
let numbered = 0;

export class Spool {
  private readonly number = ++numbered;
  private folder: Folder | undefined;
  private readonly files = new Set<string>();

  constructor(private readonly host: Host) {}

  /** A window's spool file (the folder made when first asked for). */
  fileOf(since: number, until: number): string {
    const file = join(this.open().path, `${this.number}-${since}-${until}.json`);
    this.files.add(file);
    return file;
  }

  /** The window is delivered: its file goes. */
  async delivered(file: string): Promise<void> {
    this.files.delete(file);
    await unlink(file).catch(() => undefined);
  }

  /** The run ended: what it left goes, and the folder with the last run using it. */
  close(): void {
    for (const file of this.files) rmSync(file, { force: true });
    this.files.clear();
    const folder = this.folder;
    this.folder = undefined;
    if (!folder || --folder.runs > 0) return;
    folders.delete(this.host);
    rmSync(folder.path, { recursive: true, force: true });
    folder.forget();
  }

  private open(): Folder {
    if (this.folder) return this.folder;
    let folder = folders.get(this.host);
    if (!folder) {
      const path = mkdtempSync(join(tmpdir(), 'reporting-spool-'));
      // removed even when the process is made to exit (a second Ctrl-C, SIGTERM)
      folder = { path, runs: 0, forget: this.host.atExit(() => rmSync(path, { recursive: true, force: true })) };
      folders.set(this.host, folder);
    }
    folder.runs++;
    return (this.folder = folder);
  }
}
