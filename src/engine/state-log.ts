// How RunState writes the state file without rewriting it at every change (issue 20, item 5):
// rewriting the whole document per change made a run's state writes grow with the square of its
// windows (a month of hourly windows wrote 476 MB of state). Instead:
//
// - While the document is small (up to SMALL_WINDOWS windows), every change rewrites it whole, as
//   before: a few KB, and readers see every change at once.
// - Beyond, each change is one JSON line appended to `FILE.log` and fsynced before it counts
//   (changes made meanwhile share one append and one fsync). The log starts with a header naming
//   the SHA-256 of the document it extends.
// - The document is rewritten whole ("folded": the changes applied, atomically) when the log grows
//   bigger than the document and than LOG_FLOOR, and at the end of the run, after which the log goes.
//   Total bytes stay linear in the number of changes.
// - Reading the state (the next run, after a crash) applies a log whose header names the
//   document's SHA-256, ignoring a last line cut by the crash. A log naming another document was
//   already folded into it (a crash between the fold and the log's removal) or belongs to another
//   file: it is ignored, so no order of writes and crashes applies a change twice or to a stranger.
//
// A change says which windows go (`drop`), which are recorded pending if absent (`add`), and which
// fields of a window are set (`set`, creating it if absent); windows are keyed by since/until. A
// run's change may also record the period it planned (`planned`, issue 21 item 5: the next
// `--since auto` counts its lookback from its end), which replaces the one recorded.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { CliError, EXIT, UsageError } from '../errors.js';
import { AppendFile } from '../fs/append.js';
import { writeFileAtomic } from '../fs/atomic.js';

/** up to this many windows, the document is rewritten at every change */
export const SMALL_WINDOWS = 32;
/** the log is folded into the document once bigger than both the document and this */
export const LOG_FLOOR = 4 * 2 ** 20;
const HEADER = 'reporting state log';
const LOG_VERSION = 1;

export interface Keyed { sinceUnix: number; untilUnix: number }
type Key = [since: number, until: number];

/** The period a run planned, recorded before its first submit. */
export interface Planned {
  since: string;
  until: string;
  sinceUnix: number;
  untilUnix: number;
  /** when the run planned it (the calendar's time) */
  at: string;
}

/** A multipart upload in flight (-o s3://), recorded before its first part: a run that holds the
 * state next aborts the ones a killed run left. */
export interface Upload {
  bucket: string;
  key: string;
  uploadId: string;
  startedAt: string;
}

export interface Change<E> {
  /** the document's updatedAt once changed */
  at: string;
  planned?: Planned;
  /** the uploads in flight, all of them (the list replaces the one recorded) */
  uploads?: Upload[];
  drop?: Key[];
  add?: Key[];
  set?: [since: number, until: number, fields: Partial<E>][];
}

/** What the log needs to know of a window's record. */
export interface EntryShape<E> {
  /** the record of a window not recorded yet (pending) */
  create(since: number, until: number): E;
  /** the fields a change may set */
  fields: readonly string[];
  /** why a record read back from the log is not a valid one, or undefined */
  invalid(entry: E): string | undefined;
}

export const logPathOf = (path: string) => `${path}.log`;
export const byWindow = (a: Keyed, b: Keyed) => a.sinceUnix - b.sinceUnix || a.untilUnix - b.untilUnix;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const compare = (entry: Keyed, since: number, until: number) => entry.sinceUnix - since || entry.untilUnix - until;

/** In windows sorted byWindow: the first position whose key is not before (since, until). */
function lowerBound(windows: readonly Keyed[], since: number, until: number): number {
  let low = 0;
  let high = windows.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compare(windows[middle] as Keyed, since, until) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The position of the window (since, until) in windows sorted byWindow, or -1. */
export function indexOfWindow(windows: readonly Keyed[], since: number, until: number): number {
  const at = lowerBound(windows, since, until);
  const found = windows[at];
  return found && compare(found, since, until) === 0 ? at : -1;
}

/** The windows (sorted byWindow) after `change`, as a new array; `windows` is not modified. */
export function applyChange<E extends Keyed>(windows: readonly E[], change: Change<E>, create: (since: number, until: number) => E): E[] {
  let out = [...windows];
  if (change.drop?.length) {
    const gone = new Set(change.drop.map(([since, until]) => `${since}:${until}`));
    out = out.filter((entry) => !gone.has(`${entry.sinceUnix}:${entry.untilUnix}`));
  }
  for (const [since, until] of change.add ?? []) {
    const at = lowerBound(out, since, until);
    if (indexOfWindow(out, since, until) < 0) out.splice(at, 0, create(since, until));
  }
  for (const [since, until, fields] of change.set ?? []) {
    const at = indexOfWindow(out, since, until);
    if (at >= 0) out[at] = { ...(out[at] as E), ...fields };
    else out.splice(lowerBound(out, since, until), 0, { ...create(since, until), ...fields });
  }
  return out;
}

/** A planned period as the state and its log record it. */
export function isPlanned(value: unknown): value is Planned {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { since, until, sinceUnix, untilUnix, at } = value as Record<string, unknown>;
  return typeof since === 'string' && typeof until === 'string' && typeof at === 'string' && !Number.isNaN(Date.parse(at))
    && isKey([sinceUnix, untilUnix]);
}

/** An upload as the state and its log record it. */
export function isUpload(value: unknown): value is Upload {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { bucket, key, uploadId, startedAt, ...rest } = value as Record<string, unknown>;
  return [bucket, key, uploadId, startedAt].every((field) => typeof field === 'string') && Object.keys(rest).length === 0;
}

/** The first line of a log extending the document whose SHA-256 is `base`. */
const headerOf = (base: string) => JSON.stringify({ log: HEADER, version: LOG_VERSION, base });

const isKey = (value: unknown): value is Key =>
  Array.isArray(value) && value.length === 2 && value.every(Number.isSafeInteger) && (value[0] as number) <= (value[1] as number);

function parseChange<E>(line: string, shape: EntryShape<E>): Change<E> | string {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'not a change';
  const { at, drop, add, set, planned, uploads, ...rest } = raw as Record<string, unknown>;
  if (Object.keys(rest).length) return `unknown field ${Object.keys(rest)[0]}`;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at))) return 'at is not a time';
  if (planned !== undefined && !isPlanned(planned)) return 'planned is not a period';
  if (uploads !== undefined && !(Array.isArray(uploads) && uploads.every(isUpload))) return 'uploads is not a list of uploads';
  for (const [name, keys] of [['drop', drop], ['add', add]] as const) {
    if (keys !== undefined && !(Array.isArray(keys) && keys.every(isKey))) return `${name} is not a list of windows`;
  }
  if (set !== undefined) {
    if (!Array.isArray(set)) return 'set is not a list';
    for (const item of set) {
      if (!Array.isArray(item) || item.length !== 3 || !isKey(item.slice(0, 2))) return 'set names no window';
      const fields = item[2] as unknown;
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return 'set has no fields';
      const unknown = Object.keys(fields).find((name) => !shape.fields.includes(name));
      if (unknown !== undefined) return `set has an unknown field ${unknown}`;
    }
  }
  return raw as Change<E>;
}

/**
 * The windows of the document `text` (read from `path`) with its log applied, or undefined when
 * there is no log for this document. A complete line that is not a valid change is a usage error.
 */
export function replayLog<E extends Keyed>(path: string, text: string, windows: readonly E[], shape: EntryShape<E>): { windows: E[]; at?: string; planned?: Planned; uploads?: Upload[] } | undefined {
  const logPath = logPathOf(path);
  let log: string;
  try {
    log = readFileSync(logPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`cannot read the state file's log ${logPath}: ${(error as Error).message}`);
  }
  const lines = log.split('\n');
  lines.pop(); // after the last newline: empty, or a line a crash cut short (never acknowledged)
  const [header, ...changes] = lines;
  if (header !== headerOf(sha256(text))) return undefined;
  let out = [...windows];
  let at: string | undefined;
  let planned: Planned | undefined;
  let uploads: Upload[] | undefined;
  const damaged = (line: number, why: string) => new UsageError(
    `the state file's log ${logPath} is damaged at line ${line}: ${why}`,
    `delete ${logPath} to use ${path} as it was last written (windows done since are fetched again), or start over with --full-refresh`,
  );
  for (const [index, line] of changes.entries()) {
    const change = parseChange(line, shape);
    if (typeof change === 'string') throw damaged(index + 2, change);
    out = applyChange(out, change, shape.create);
    for (const [since, until] of change.set ?? []) {
      const problem = shape.invalid(out[indexOfWindow(out, since, until)] as E);
      if (problem) throw damaged(index + 2, problem);
    }
    at = change.at;
    planned = change.planned ?? planned;
    uploads = change.uploads ?? uploads;
  }
  return { windows: out, at, planned, uploads };
}

/** Writes one at a time: a write asked for while one is under way waits for it, and every ask
 * made meanwhile shares that next write (the state's writers: a file, a bucket). */
export class Serialised {
  private next: Promise<void> | undefined;
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly run: () => Promise<void>) {}

  /** The next write (started once the one under way ends), shared by every ask until it starts. */
  ask(): Promise<void> {
    if (!this.next) {
      const cycle = this.last.catch(() => undefined).then(() => {
        this.next = undefined;
        return this.run();
      });
      this.next = cycle;
      this.last = cycle;
    }
    return this.next;
  }

  /** The write waiting to start, else the last one. */
  pending(): Promise<void> {
    return this.next ?? this.last;
  }

  /** Once every write asked for so far has ended, whether it failed or not. */
  settled(): Promise<void> {
    return this.last.catch(() => undefined);
  }
}

export interface WriterStart {
  /** the document as it is on disk, when this run's changes may be logged against it */
  text?: string;
  /** the document as the run opened it, serialised: what the log extends when `text` is not given */
  opening: () => string;
  /** a log from an earlier run was applied: fold it even if this run changes nothing */
  replayed: boolean;
}

/**
 * Writes a run's changes: whole while the document is small, else logged and folded now and
 * then. Writes are serialised; changes that wait for a write share the next one. A write that
 * fails is reported to every change it carried, and the next one rewrites the document whole.
 */
export class StateWriter {
  private readonly log: AppendFile;
  private queued: string[] = [];
  /** a change queued is not light (StateWrites): the next write syncs the folder */
  private durable = false;
  private readonly writes = new Serialised(() => this.cycle());
  /** SHA-256 of the document on disk, once it holds every change not in the log */
  private base: string | undefined;
  private opening: (() => string) | undefined;
  private docBytes = 0;
  /** bytes of this run's log (0: no log that applies) */
  private logBytes = 0;
  private logStarted = false;
  /** a write failed: what is on disk is not known */
  private broken = false;
  private readonly logExisted: boolean;
  private readonly replayed: boolean;

  constructor(readonly path: string, private readonly document: () => { windows: readonly unknown[] }, start: WriterStart) {
    this.log = new AppendFile(logPathOf(path));
    this.logExisted = existsSync(this.log.path);
    this.replayed = start.replayed;
    if (start.text !== undefined) {
      this.base = sha256(start.text);
      this.docBytes = Buffer.byteLength(start.text);
    } else {
      this.opening = start.opening;
    }
  }

  /** Records one change (a JSON line), or with none, makes sure the document exists. */
  write(line?: string, light = false): Promise<void> {
    if (line !== undefined) this.queued.push(line);
    else if (this.base !== undefined) return this.writes.pending();
    if (!light) this.durable = true;
    return this.writes.ask();
  }

  private async cycle(): Promise<void> {
    const lines = this.queued;
    const durable = this.durable;
    this.queued = [];
    this.durable = false;
    try {
      if (this.document().windows.length <= SMALL_WINDOWS) return await this.fold(durable);
      let base = this.base;
      if (base === undefined) {
        if (!this.opening) return await this.fold();
        // the document as the run opened it, which the log extends
        base = await this.writeDocument(this.opening());
      }
      if (lines.length === 0) return;
      const text = `${lines.join('\n')}\n`;
      const bytes = Buffer.byteLength(text);
      if (this.logBytes + bytes > Math.max(this.docBytes, LOG_FLOOR)) return await this.fold();
      if (this.logBytes === 0) {
        await this.log.begin(`${headerOf(base)}\n${text}`);
        this.logStarted = true;
      } else {
        await this.log.append(text);
      }
      this.logBytes += bytes;
    } catch (error) {
      // what is on disk is unknown: the next write rewrites the document whole
      this.broken = true;
      this.base = undefined;
      this.opening = undefined;
      this.logBytes = 0;
      throw new CliError(`cannot write the state file ${this.path}: ${(error as Error).message}`, EXIT.internal, 'the previous version of the file, if any, is intact');
    }
  }

  /** Replaces the document with `text`; its SHA-256. `durable`: the rename made durable too. */
  private async writeDocument(text: string, durable = true): Promise<string> {
    await writeFileAtomic(this.path, text, 0o644, durable);
    const base = sha256(text);
    this.base = base;
    this.docBytes = Buffer.byteLength(text);
    this.opening = undefined;
    // a log on disk names an older document now: it no longer applies
    this.logBytes = 0;
    return base;
  }

  private async fold(durable = true): Promise<void> {
    await this.writeDocument(`${JSON.stringify(this.document(), null, 2)}\n`, durable);
  }

  /** Waits for the writes; folds the log into the document and removes it. Never throws: a log
   * that could not be folded stays, and the next run applies it. */
  async close(): Promise<void> {
    await this.writes.settled();
    try {
      if (this.logBytes > 0 || (this.base === undefined && (this.replayed || this.broken))) await this.fold();
      // the log goes only once the document on disk holds all it says
      if (this.base !== undefined && this.logBytes === 0 && (this.logStarted || this.logExisted)) await this.log.remove();
    } catch {
      // the next run applies the log
    } finally {
      await this.log.close().catch(() => undefined);
    }
  }
}
