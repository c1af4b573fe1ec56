// What the process is, and what it must do on its way out: built by src/main.ts (the only code
// that touches `process`) and handed down in the Context, so that locks and temporary files name
// their process and are cleaned up without any module below reaching for `process` itself.

export interface Host {
  /** this process's ID: written in locks and in the names of temporary files */
  readonly pid: number;
  readonly platform: NodeJS.Platform;
  /** the version of Node running us (in the User-Agent) */
  readonly nodeVersion: string;
  /** whether a process of this machine is alive (one of another user counts) */
  isAlive(pid: number): boolean;
  /** runs `cleanup` when the process exits, also on an exit that skips `finally` (process.exit
   * on a second Ctrl-C); returns the function that takes it off again */
  atExit(cleanup: () => void): () => void;
}

/** Cleanups that must run however the process exits: src/main.ts runs them on 'exit'. */
export class ExitCleanups {
  private readonly cleanups = new Set<() => void>();

  add(cleanup: () => void): () => void {
    // wrapped, so that one function added twice is two entries, each taken off by its own remover
    const entry = () => cleanup();
    this.cleanups.add(entry);
    return () => { this.cleanups.delete(entry); };
  }

  /** Runs every cleanup once (synchronously: the process is exiting); one that throws does not stop the others. */
  run(): void {
    for (const cleanup of [...this.cleanups]) {
      this.cleanups.delete(cleanup);
      try {
        cleanup();
      } catch {
        // best effort: the next run cleans what is left (stale temporary files, dead locks)
      }
    }
  }
}
