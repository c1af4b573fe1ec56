// What a run tells about itself, as typed events: for people (the lines of progress.ts's Reporter,
// as `run` always printed them) or, with `--log-format json`, for machines: one JSON object per
// line on stderr, versioned (`v`), documented in docs/exit-codes-and-logs.md, so that cron mail,
// Kubernetes and log collectors can read and reconstruct a run.
//
// No event carries free text from the CLI's own state: every field is typed. The only text that
// comes from the server (a failure message) goes through `serverText`, which removes control
// characters and anything that looks like a secret; each line is written by `jsonLine`, which
// writes the invisible controls a terminal would reorder text by (bidi, U+2028) as `\u` escapes.

import { formatDuration } from '../duration.js';
import { Secrets } from '../api/redact.js';
import { formatBytes, type Reporter } from '../io/progress.js';
import { jsonLine, withoutControls } from '../io/safe-text.js';
import { parisIso } from '../report/time.js';
import type { LogEvent } from './events.js';
import type { LogFormat } from './limits.js';
import { describeWindow, type Window } from '../report/windows.js';

export const LOG_VERSION = 1;



/** Token-like fields are masked even when no secret is known. */
const NO_SECRETS = new Secrets();

/**
 * Text from the server, made safe for a log line: C0 and C1 control characters (escape sequences,
 * line breaks) become spaces (a log line is one line; src/io/safe-text.ts escapes them instead for
 * the terminal), the command's secrets and token-like fields are masked, and it is cut to 300
 * characters.
 */
export function serverText(text: string, secrets: Secrets = NO_SECRETS): string {
  const clean = secrets.redact(withoutControls(text)).replace(/ {2,}/g, ' ').trim();
  return clean.length > 300 ? `${clean.slice(0, 299)}…` : clean;
}

const windowJson = (window: Window) => ({ since: parisIso(window.since), until: parisIso(window.until), sinceUnix: window.since, untilUnix: window.until });

/** One event as the JSON object of its log line (see docs/exit-codes-and-logs.md for every field). `nowMs` is the
 * calendar's time (REPORTING_NOW moves it); `now`, the instant REPORTING_NOW named, when set. */
export function eventJson(event: LogEvent, nowMs: number, secrets: Secrets = NO_SECRETS, now?: string): Record<string, unknown> {
  const line: Record<string, unknown> = { v: LOG_VERSION, ts: new Date(nowMs).toISOString(), ...(now === undefined ? {} : { now }), event: event.event, window: windowJson(event.window) };
  for (const [name, value] of Object.entries(event)) {
    if (name === 'event' || name === 'window' || value === undefined) continue;
    if (name === 'into') line.into = (value as readonly Window[]).map(windowJson);
    else if (name === 'files') line.files = (value as readonly string[]).map((file) => secrets.redact(withoutControls(file)));
    else if (name === 'message' || name === 'reportId' || name === 'replaces' || name === 'status' || name === 'replacedStatus') line[name] = serverText(String(value), secrets);
    else if (typeof value === 'string') line[name] = secrets.redact(withoutControls(value));
    else line[name] = value;
  }
  return line;
}

const plural = (count: number, word: string) => `${count.toLocaleString('en-US')} ${word}${count === 1 ? '' : 's'}`;
const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;

export interface TextOptions {
  /** named in "submitted buyer report …" */
  side?: string;
  /** prefix each line with the window's period (default); a run of one window leaves it out,
   * and its lines read as `run` has always printed them */
  period?: boolean;
  /** the command's secrets, masked in server text */
  secrets?: Secrets;
}

/** An event's message without its first words when they name the event's report (a failed
 * status's: `report ID ended in status "failed"`), which the line names already; else undefined. */
const afterReport = ({ reportId, message }: { reportId?: string; message: string }): string | undefined =>
  reportId !== undefined && message.startsWith(`report ${reportId} `) ? message.slice(`report ${reportId} `.length) : undefined;

/** One event as a line for people; `polled` has none (the Reporter shows it live). */
export function eventText(event: LogEvent, options: TextOptions = {}): string | undefined {
  const at = options.period === false ? '' : `${describeWindow(event.window)}: `;
  const serverText_ = (text: string) => serverText(text, options.secrets);
  const id = 'reportId' in event && event.reportId ? ` ${serverText_(event.reportId)}` : '';
  const side = options.side ? `${options.side} ` : '';
  switch (event.event) {
    case 'submitted':
      return event.replaces
        ? `${at}report ${serverText_(event.replaces)} ${event.replacedStatus ? `ended in status "${serverText_(event.replacedStatus)}"` : 'is no longer known to the server'}; submitted ${side}report${id} instead`
        : `${at}submitted ${side}report${id}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`;
    case 'resumed':
      return `${at}resumed ${side}report${id}, submitted by an earlier run (from the ${event.source === 'state' ? 'state file' : 'journal'}); not submitting a new one`;
    case 'polled':
      return undefined;
    case 'ready':
      return `${at}report${id} ready after ${plural(event.polls, 'poll')} (${seconds(event.durationMs)})`;
    case 'failed': {
      // the report named once: `report ID ended in status "failed"`, not `report ID failed: report ID ...`
      const rest = afterReport(event);
      return rest !== undefined ? `${at}report${id} ${serverText_(rest)}` : `${at}${id ? `report${id} ` : ''}failed: ${serverText_(event.message)}`;
    }
    case 'split':
      return `${at}report${id} failed (${serverText_(afterReport(event) ?? event.message)}); splitting into ${describeWindow(event.into[0])} and ${describeWindow(event.into[1])}`;
    case 'done':
      return undefined; // the closing line says it
    case 'warning':
      return `${at}warning: ${serverText_(event.message)}`;
    case 'relogin':
      return `note: ${event.message}`;
    case 'retried':
      return `${at}${serverText_(event.message)}; retrying (attempt ${event.attempt})`;
    case 'download_started':
      return `${at}downloading report${id}${event.file ? ` to ${event.file}` : ''}`;
    case 'download_done':
      return `${at}downloaded ${plural(event.rows, 'row')}, ${formatBytes(event.bytes)} of JSON in ${formatDuration(event.durationMs)}`;
    case 'written':
      return `${at}wrote ${plural(event.rows, 'row')} to ${event.file ?? 'stdout'}`;
    case 'unchanged':
      return event.table !== undefined ? `${at}${event.table}: ${plural(event.rows, 'row')} unchanged (same rows as loaded last time, left untouched)` : `${at}${event.file} unchanged (same content, left untouched)`;
    case 'loaded':
      return `${at}loaded ${plural(event.rows, 'row')} into ${event.table}`;
    case 'skipped':
      return `${at}skipped, already done${event.file ? ` (${event.file})` : ''}`;
  }
}

export interface Logger {
  emit(event: LogEvent): void;
  /** bytes and rows while a download streams (a live bar on a terminal; nothing in JSON) */
  downloading(rows: number, bytes: number): void;
  /** stop any live display */
  stop(): void;
}

export interface LogSink {
  stderr: { write(chunk: string): unknown };
  now(): number;
  /** the command's secrets (the factory's), masked in every line */
  secrets?: Secrets;
}

/**
 * JSON lines on stderr: every event, whatever -q says (asking for a machine log is asking for
 * it). Text: the Reporter's lines, so `run` reads as it always did (and -q silences them).
 */
export function createLogger(format: LogFormat, sink: LogSink, reporter: Reporter, text: TextOptions = {}): Logger {
  if (format === 'json') {
    return {
      emit(event) {
        sink.stderr.write(`${jsonLine(eventJson(event, sink.now(), sink.secrets))}\n`);
      },
      downloading() {},
      stop() {},
    };
  }
  return {
    emit(event) {
      if (event.event === 'polled') reporter.waiting(serverText(event.status, sink.secrets), event.polls, event.durationMs);
      else {
        const line = eventText(event, { secrets: sink.secrets, ...text });
        if (line !== undefined) reporter.state(line);
      }
    },
    downloading: (rows, bytes) => reporter.downloading(rows, bytes),
    stop: () => reporter.stop(),
  };
}
