// Progress on stderr. On a terminal, a cli-progress line: elapsed time, status and polls while
// waiting; rows and bytes while downloading. Elsewhere, one plain line per change of state (no
// carriage returns, no colour). -q: nothing.

import type { Context } from '../factory.js';
import { formatDuration } from '../duration.js';
import { safeText } from '../io/safe-text.js';

export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

export interface Reporter {
  /** a change of state: "submitted", "ready", … */
  state(line: string): void;
  waiting(status: string, polls: number, elapsedMs: number): void;
  downloading(rows: number, bytes: number): void;
  /** stop any live display (before a final message) */
  stop(): void;
  /** a message that always shows (unless -q) */
  note(line: string): void;
}

interface Bar {
  start(total: number, value: number, payload: Record<string, string>): void;
  update(value: number, payload: Record<string, string>): void;
  stop(): void;
}

export async function createReporter(ctx: Context, quiet: boolean): Promise<Reporter> {
  // lines carry server text (statuses, summary fields): shown through the one sanitizer
  const write = (line: string) => { ctx.stderr.write(`${safeText(line)}\n`); };
  if (quiet) return { state() {}, waiting() {}, downloading() {}, stop() {}, note() {} };
  if (!ctx.stderr.isTTY) {
    let lastStatus = '';
    return {
      state: write,
      waiting(status, polls, elapsedMs) {
        if (status !== lastStatus) write(`status ${status} (poll ${polls}, ${formatDuration(elapsedMs)})`);
        lastStatus = status;
      },
      downloading() {},
      stop() {},
      note: write,
    };
  }
  const { SingleBar } = (await import('cli-progress')).default;
  let bar: Bar | undefined;
  let mode: 'wait' | 'download' | undefined;
  let phaseStarted = ctx.now();
  // the first frame is drawn with its values, never with the bare template
  const show = (next: 'wait' | 'download', format: string, payload: Record<string, string>) => {
    if (mode === next) {
      bar?.update(0, payload);
      return;
    }
    bar?.stop();
    const created = new SingleBar({
      format,
      stream: ctx.stderr as unknown as NodeJS.WritableStream,
      hideCursor: true,
      clearOnComplete: true,
      barsize: 0,
      fps: 8,
      etaBuffer: 1,
    });
    created.start(0, 0, payload);
    bar = created;
    mode = next;
  };
  return {
    state(line) {
      bar?.stop();
      bar = undefined;
      mode = undefined;
      write(line);
    },
    waiting(status, polls, elapsedMs) {
      show('wait', 'waiting {elapsed}  status {status}  polls {polls}', { elapsed: formatDuration(elapsedMs), status: safeText(status), polls: String(polls) });
    },
    downloading(rows, bytes) {
      if (mode !== 'download') phaseStarted = ctx.now();
      show('download', 'downloading  {rows} rows  {bytes}  {elapsed}', {
        rows: rows.toLocaleString('en-US'), bytes: formatBytes(bytes), elapsed: formatDuration(ctx.now() - phaseStarted),
      });
    },
    stop() {
      bar?.stop();
      bar = undefined;
      mode = undefined;
    },
    note: write,
  };
}
