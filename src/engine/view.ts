// The views of a run's events (events.ts): what a run shows while it works. A chunked run, on a
// terminal: one live line of windows done / running / waiting, rows and bytes, with failures,
// splits and throttles printed above it; elsewhere (a log file, cron mail): one line per window's
// outcome (written, unchanged, or downloaded into a merged output), per failure and per warning,
// and with -v one line per window state change (the log's text lines, each prefixed with its window). A run of one report: the lines `run` always printed
// (progress.ts's Reporter). With `--log-format json`: the log's JSON lines. -q silences the text.

import { loadProgressBars } from '../lazy.js';
import type { Calendar } from '../clock.js';
import type { Context } from '../context.js';
import type { Secrets } from '../api/redact.js';
import { formatDuration } from '../duration.js';
import type { PoolEvent } from './pool.js';
import { describeWindow, type Window } from '../report/windows.js';
import type { EventName, LogEvent } from './events.js';
import type { Shape } from './job.js';
import { createReporter } from '../io/progress.js';
import type { LogFormat } from './limits.js';
import { eventJson, eventText, serverText } from './log.js';
import { formatBytes } from '../io/progress.js';
import { jsonLine, safeText } from '../io/safe-text.js';

export interface RunView {
  /** a run event (submitted, ready, written, ...) */
  emit(event: LogEvent): void;
  /** a scheduling event of the pool (start, done, split, throttled, failed) */
  pool(event: PoolEvent): void;
  /** a window done already (--state): counted done, never running */
  skip(window: Window): void;
  /** rows and bytes of a window's download so far */
  progress(window: Window, rows: number, bytes: number): void;
  /** a line that always shows (unless -q), after the live view is gone */
  note(line: string): void;
  stop(): void;
}

interface ViewOptions {
  format: LogFormat;
  quiet: boolean;
  /** -v: off a terminal, every state change of every window, not only each window's outcome */
  verbose?: boolean;
  /** a file per window: a window's outcome is its file written (or unchanged), else its download */
  perWindow?: boolean;
  side: string;
  total: number;
  secrets?: Secrets;
}

/** The view of a run: JSON lines, a run of one report's lines, or the windows' view. */
/** What a view needs of the process: the streams, the real clock (durations) and, when the run
 * has one, the calendar (the times in JSON lines: REPORTING_NOW moves them). */
type ViewContext = Context & { calendar?: Calendar };

export async function createView(ctx: ViewContext, options: ViewOptions & { shape: Shape; retries: number }): Promise<RunView> {
  if (options.format === 'json' || options.shape === 'windows') return createWindowsView(ctx, options);
  const reporter = await createReporter(ctx, options.quiet);
  const secrets = options.secrets;
  return {
    emit(event) {
      if (event.event === 'polled') reporter.waiting(serverText(event.status, secrets), event.polls, event.durationMs);
      // a broken download started again (the client's own retries are the factory's lines)
      else if (event.event === 'retried') reporter.state(`${event.message}; downloading again (retry ${event.attempt - 1} of ${options.retries})`);
      else if (!QUIET_IN_REPORT.has(event.event)) reporter.state(eventText(event, { side: options.side, period: false, secrets }) as string);
    },
    pool() {},
    skip() {},
    progress: (_window, rows, bytes) => reporter.downloading(rows, bytes),
    note: (line) => reporter.note(line),
    stop: () => reporter.stop(),
  };
}

/** what a run of one report leaves to its closing line (or to the error) */
const QUIET_IN_REPORT: ReadonlySet<EventName> = new Set(['download_done', 'written', 'unchanged', 'failed', 'skipped', 'split', 'done']);

/** Counts from the pool's events: what the live view shows. */
export class Tally {
  done = 0;
  running = 0;
  waiting: number;
  failed = 0;
  rows = 0;
  bytes = 0;
  private readonly live = new Map<number, { rows: number; bytes: number }>();

  constructor(public total: number) {
    this.waiting = total;
  }

  pool(event: PoolEvent): void {
    switch (event.type) {
      case 'start': this.running++; this.waiting--; break;
      case 'done': this.running--; this.done++; break;
      case 'split': this.running--; this.waiting += 2; this.total++; break;
      case 'throttled': this.running--; this.waiting++; break;
      case 'failed': this.running--; this.failed++; break;
      case 'limit': break;
    }
    if (event.type !== 'limit' && event.type !== 'start') this.live.delete(event.window.since);
  }

  skip(): void {
    this.done++;
    this.waiting--;
  }

  progress(window: Window, rows: number, bytes: number): void {
    const before = this.live.get(window.since) ?? { rows: 0, bytes: 0 };
    this.rows += rows - before.rows;
    this.bytes += bytes - before.bytes;
    this.live.set(window.since, { rows, bytes });
  }
}

const poolLine = (event: PoolEvent): string | undefined => event.type === 'throttled'
  ? `${describeWindow(event.window)}: too many reports in progress; at most ${event.limit} at once now, waiting ${formatDuration(event.waitMs)}`
  : undefined;

export async function createWindowsView(ctx: Pick<ViewContext, 'stderr' | 'now' | 'calendar'>, options: ViewOptions): Promise<RunView> {
  if (options.format === 'json') return jsonView(ctx, options.secrets);
  if (options.quiet) return { emit() {}, pool() {}, skip() {}, progress() {}, note() {}, stop() {} };
  if (!ctx.stderr.isTTY) return linesView(ctx, options);
  return terminalView(ctx, options);
}

/** The log's JSON lines: every event, whatever -q says (asking for a machine log is asking for it). */
function jsonView(ctx: Pick<ViewContext, 'stderr' | 'now' | 'calendar'>, secrets: Secrets | undefined): RunView {
  const calendar = ctx.calendar ?? { now: ctx.now };
  const now = calendar.moved?.at;
  const line = (event: LogEvent) => { ctx.stderr.write(`${jsonLine(eventJson(event, calendar.now(), secrets, now))}\n`); };
  return {
    emit: line,
    pool(event) {
      if (event.type === 'throttled') line({ event: 'retried', window: event.window, attempt: 1, message: poolLine(event) ?? '', delayMs: event.waitMs });
    },
    skip() {},
    progress() {},
    note() {},
    stop() {},
  };
}

/** Off a terminal, without -v: what a log of a 365-window run needs, one line a window, and the
 * lines of trouble or recovery (a report resumed after a crash, or submitted again in place of one
 * the server forgot). */
const outcomeEvents = (perWindow: boolean): ReadonlySet<EventName> =>
  new Set<EventName>(['written', 'unchanged', 'loaded', 'failed', 'split', 'warning', 'resumed', ...(perWindow ? [] : ['download_done' as const])]);
const isOutcome = (event: LogEvent, shown: ReadonlySet<EventName>) =>
  shown.has(event.event) || (event.event === 'submitted' && event.replaces !== undefined);

/** Off a terminal: one line per window's outcome, or with -v per window state change. */
function linesView(ctx: Pick<Context, 'stderr'>, options: ViewOptions): RunView {
  const write = (line: string) => { ctx.stderr.write(`${safeText(line)}\n`); };
  const shown = options.verbose ? undefined : outcomeEvents(options.perWindow ?? false);
  return {
    emit(event) {
      if (shown && !isOutcome(event, shown)) return;
      const line = event.event === 'polled' ? undefined : eventText(event, { side: options.side, secrets: options.secrets });
      if (line) write(line);
    },
    pool(event) {
      const line = options.verbose ? poolLine(event) : undefined;
      if (line) write(line);
    },
    skip() {},
    progress() {},
    note: write,
    stop() {},
  };
}

/** On a terminal: the live line, and trouble printed above it. */
async function terminalView(ctx: Pick<Context, 'stderr' | 'now'>, options: ViewOptions): Promise<RunView> {
  const tally = new Tally(options.total);
  const write = (line: string) => { ctx.stderr.write(`${safeText(line)}\n`); };
  const text = (event: LogEvent) => eventText(event, { side: options.side, secrets: options.secrets });
  const { MultiBar } = await loadProgressBars();
  const started = ctx.now();
  const multi = new MultiBar({
    format: 'windows {done}/{planned} done  {running} running  {waiting} waiting  {rows} rows  {bytes}  {elapsed}',
    stream: ctx.stderr as unknown as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: true,
    barsize: 0,
    fps: 8,
  });
  const payload = () => ({
    done: String(tally.done), planned: String(tally.total), running: String(tally.running), waiting: String(tally.waiting),
    rows: tally.rows.toLocaleString('en-US'), bytes: formatBytes(tally.bytes), elapsed: formatDuration(ctx.now() - started),
  });
  const bar = multi.create(0, 0, payload());
  const ticker = setInterval(() => bar.update(0, payload()), 1000);
  ticker.unref?.();
  let stopped = false;
  // the lines worth keeping on screen above the live one: trouble, not routine
  const above = (line: string) => multi.log(`${safeText(line)}\n`);
  const stop = () => {
    if (stopped) return;
    stopped = true;
    clearInterval(ticker);
    multi.stop();
    // every path (an error, Ctrl-C) gives the terminal its cursor and line wrapping back
    ctx.stderr.write('\u001b[?25h\u001b[?7h');
  };
  return {
    emit(event) {
      if (event.event === 'failed' || event.event === 'split' || event.event === 'retried' || event.event === 'warning') {
        const line = text(event);
        if (line) above(line);
      }
      bar.update(0, payload());
    },
    pool(event) {
      tally.pool(event);
      const line = poolLine(event);
      if (line) above(line);
      bar.update(0, payload());
    },
    skip() {
      tally.skip();
      bar.update(0, payload());
    },
    progress(window, rows, bytes) {
      tally.progress(window, rows, bytes);
      bar.update(0, payload());
    },
    note(line) {
      stop();
      write(line);
    },
    stop,
  };
}
