// Progress on stderr. On a terminal, a cli-progress line: elapsed time, status and polls while
// waiting; rows and bytes while downloading. Elsewhere, one plain line per change of state (no
// carriage returns, no colour). -q: nothing.

import { loadProgressBars } from '../lazy.js';
import type { Context } from '../context.js';
import { formatDuration } from '../duration.js';
import { safeText } from './safe-text.js';

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
        // `ready` is the caller's next line ("report … ready after …"): not the same moment twice
        if (status !== lastStatus && status !== 'ready') write(`status ${status} (poll ${polls}, ${formatDuration(elapsedMs)})`);
        lastStatus = status;
      },
      downloading() {},
      stop() {},
      note: write,
    };
  }
  const { SingleBar } = await loadProgressBars();
  let bar: Bar | undefined;
  let mode: 'wait' | 'download' | undefined;
  let phaseStarted = ctx.now();
  let shown = false;
  // while waiting, the elapsed time moves every second, not only when a poll answers
  let ticker: ReturnType<typeof setInterval> | undefined;
  let waitPayload: Record<string, string> = {};
  let waitStarted = 0;
  const stopBar = () => {
    if (ticker) clearInterval(ticker);
    ticker = undefined;
    bar?.stop();
    bar = undefined;
    mode = undefined;
    // cli-progress restores what it changed when stopped; say it again on every stop so that no
    // path (an error, Ctrl-C) leaves the terminal without a cursor or line wrapping
    if (shown) ctx.stderr.write('\u001b[?25h\u001b[?7h');
    shown = false;
  };
  // the first frame is drawn with its values, never with the bare template
  const show = (next: 'wait' | 'download', format: string, payload: Record<string, string>) => {
    if (mode === next) {
      bar?.update(0, payload);
      return;
    }
    if (next !== 'wait' && ticker) {
      clearInterval(ticker);
      ticker = undefined;
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
    shown = true;
  };
  return {
    state(line) {
      stopBar();
      write(line);
    },
    waiting(status, polls, elapsedMs) {
      waitStarted = ctx.now() - elapsedMs;
      waitPayload = { elapsed: formatDuration(elapsedMs), status: safeText(status), polls: String(polls) };
      show('wait', 'waiting {elapsed}  status {status}  polls {polls}', waitPayload);
      if (!ticker) {
        ticker = setInterval(() => {
          if (mode === 'wait') bar?.update(0, { ...waitPayload, elapsed: formatDuration(ctx.now() - waitStarted) });
        }, 1000);
        ticker.unref?.();
      }
    },
    downloading(rows, bytes) {
      if (mode !== 'download') phaseStarted = ctx.now();
      show('download', 'downloading  {rows} rows  {bytes}  {elapsed}', {
        rows: rows.toLocaleString('en-US'), bytes: formatBytes(bytes), elapsed: formatDuration(ctx.now() - phaseStarted),
      });
    },
    stop: stopBar,
    note: write,
  };
}
