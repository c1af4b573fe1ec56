// `--state FILE`: the manifest of a recurring run. It records the request and, per date window,
// what happened to it (report ID, status, attempts, rows, bytes, sha256 and path of the file
// written), so that the next run skips what is done, resumes a submitted report by its ID instead
// of submitting it again, retries what failed, and re-fetches the last days (--lookback) whose
// numbers may still move. Its format is documented in docs/recurring.md and versioned:
// loaders read it as the run's manifest.
//
// The file is only ever replaced whole (atomic write) and only by the run holding its lock; between
// two such writes, a large state's changes go to a log beside it (state-log.ts).

//
// The format and its rules are in state-doc.ts, planning in state-plan.ts; both are re-exported here.

import type { LockHost, LockOptions } from '../fs/lock.js';
import { applyChange, byWindow, indexOfWindow, type Change, type Upload, type WriterStart } from './state-log.js';
import { FileStore, readStateText } from './stores/file.js';
import type { StateStore, StateWrites, StoredState, StoreLock } from './stores/store.js';
import { parisIso } from '../report/time.js';
import type { Window } from '../report/windows.js';
import { ENTRY_SHAPE, STATE_VERSION, checkRequest, fromPieces, newEntry, parseDocument, type EntryPatch, type StateDoc, type StateEntry, type StateRequest } from './state-doc.js';
import { covered, planSteps, resolveStart, type PlanOptions, type Start, type Step } from './state-plan.js';

export { STATE_VERSION, requestDifferences, stateRequestOf, type EntryPatch, type OutputShape, type StateDoc, type StateEntry, type StateRequest } from './state-doc.js';
export { afterLastRun, autoSince, daysBefore, planSteps, resolveStart, type PlanOptions, type Start, type Step, type SubmitReason } from './state-plan.js';
export { parseLookback } from './limits.js';

const instant = (ms: number) => new Date(ms).toISOString();

/** The state file, or undefined when it does not exist yet. Corrupt or newer: a usage error. With
 * the changes of its log (FILE.log) when a run was stopped before it folded them in: the state as
 * the next run sees it. */
export function readState(path: string): StateDoc | undefined {
  return withLog(path, readStateText(path))?.doc;
}

/** The state a store holds, as readState reads a file. */
export async function readStateOf(store: StateStore): Promise<StateDoc | undefined> {
  return withLog(store.name, await store.read())?.doc;
}

interface Loaded {
  doc: StateDoc;
  /** the document's own text, when no log applied to it */
  text?: string;
  /** the format version it was written in */
  version: number;
}

/** The state as read (its log applied), the document's own text when no log applied to it, and the
 * format version the file was written in. */
function withLog(name: string, stored: StoredState | undefined): Loaded | undefined {
  if (!stored) return undefined;
  const read = parseDocument(name, stored.text);
  const windows = [...read.doc.windows].sort(byWindow);
  const logged = stored.replay?.(windows, ENTRY_SHAPE);
  if (!logged) return { doc: { ...read.doc, windows }, text: stored.text, version: read.version };
  const planned = logged.planned ?? read.doc.planned;
  const uploads = logged.uploads ?? read.doc.uploads;
  return { doc: { ...read.doc, updatedAt: logged.at ?? read.doc.updatedAt, ...(planned ? { planned } : {}), ...(uploads?.length ? { uploads } : {}), windows: logged.windows }, version: read.version };
}

// ---------------------------------------------------------------------------------------------
// The state of a run in progress: locked, updated window by window, each change written atomically

export interface OpenOptions {
  now: () => number;
  /** the process holding the lock (the Context's host): a local file's */
  host?: LockHost;
  fullRefresh?: boolean;
  /** a local file's lock (tests pose as another process) */
  lock?: LockOptions;
  /** --lock-wait: how long to wait for a lock another run holds */
  lockWaitMs?: number;
}

/** The store a RunState is opened on: a store, or the path of a local file (tests, tools). */
function storeOf(target: StateStore | string, options: Pick<OpenOptions, 'now' | 'host' | 'lock'>): StateStore {
  if (typeof target !== 'string') return target;
  // (peek takes no lock)
  const host: LockHost = options.host ?? { pid: 0, isAlive: () => true, atExit: () => () => {} };
  return new FileStore(target, { cwd: '/', host, now: options.lock?.now ?? options.now, lock: options.lock });
}

const keyOf = (entry: StateEntry): [number, number] => [entry.sinceUnix, entry.untilUnix];

/** The fields of `patch` that change `entry` (a logged change carries only those). */
function changed(entry: StateEntry, patch: EntryPatch): EntryPatch {
  return Object.fromEntries(Object.entries(patch).filter(([name, value]) => entry[name as keyof EntryPatch] !== value)) as EntryPatch;
}

export class RunState {
  private made?: StateWrites;
  private readonly makeWriter: () => StateWrites;

  private constructor(
    private readonly store: StateStore,
    private current: StateDoc,
    private readonly lock: StoreLock,
    private readonly now: () => number,
    readonly fullRefresh: boolean,
    /** the file existed when the run began */
    private readonly existed: boolean,
    start: Omit<WriterStart, 'opening'>,
    /** a peek's writer is made only if asked (never): `jobs plan` peeks at thousands of states,
     * and a file's writer looks for its log on the disk */
    lazily = false,
  ) {
    const opened = current;
    this.makeWriter = () => store.writes(() => this.current, { ...start, opening: () => `${JSON.stringify(opened, null, 2)}\n` });
    if (!lazily) this.made = this.makeWriter();
  }

  private get writer(): StateWrites {
    return (this.made ??= this.makeWriter());
  }

  /** The state as messages name it: a real path, or s3://BUCKET/KEY. */
  get path(): string {
    return this.store.name;
  }

  /**
   * Locks the state (LockedError, exit 2, when another live run holds it), reads it (with the log a
   * stopped run left), and checks it was written for `request` (a usage error saying what differs,
   * unless --full-refresh, which starts the file over).
   */
  static async open(target: StateStore | string, request: StateRequest, options: OpenOptions): Promise<RunState> {
    const store = storeOf(target, options);
    const lock = await store.lock(options.lockWaitMs ?? 0);
    try {
      const loaded = options.fullRefresh ? undefined : withLog(store.name, await store.read());
      const read = loaded?.doc;
      if (read && loaded) checkRequest(store.name, read.request, request, loaded.version);
      // a file from before --chunk (or the server) was recorded learns it now
      const existing = read && { ...read, request: { ...read.request, chunk: read.request.chunk === undefined ? request.chunk : read.request.chunk, server: read.request.server ?? request.server } };
      const at = instant(options.now());
      const doc: StateDoc = existing ?? { version: STATE_VERSION, createdAt: at, updatedAt: at, request, windows: [] };
      // this run's changes can be logged against the file as it is if it is the document opened
      const text = existing === read ? loaded?.text : undefined;
      const replayed = loaded !== undefined && loaded.text === undefined;
      return new RunState(store, doc, lock, options.now, Boolean(options.fullRefresh), existing !== undefined, { text, replayed });
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /**
   * Reads the state as `open` does, without taking its lock or writing anything: what a run would
   * find there (`run --plan`, `jobs plan`). A file written for another request is the same usage
   * error. Its writes are never called: nothing is recorded.
   */
  static async peek(target: StateStore | string, request: StateRequest, options: Pick<OpenOptions, 'now' | 'fullRefresh'>): Promise<RunState> {
    const store = storeOf(target, options);
    const loaded = options.fullRefresh ? undefined : withLog(store.name, await store.read());
    const read = loaded?.doc;
    if (loaded) checkRequest(store.name, loaded.doc.request, request, loaded.version);
    const at = instant(options.now());
    const doc: StateDoc = read ?? { version: STATE_VERSION, createdAt: at, updatedAt: at, request, windows: [] };
    const noLock: StoreLock = { release: async () => {} };
    return new RunState(store, doc, noLock, options.now, Boolean(options.fullRefresh), read !== undefined, { text: undefined, replayed: false }, true);
  }

  get doc(): StateDoc {
    return this.current;
  }

  /** See resolveStart: with --full-refresh, the state's windows are not consulted. */
  start(since: number | 'auto', until: number, lookbackDays: number, first?: number): Start {
    return resolveStart(since, until, this.existed ? this.current : undefined, { lookbackDays, fullRefresh: this.fullRefresh, start: first });
  }

  plan(windows: readonly Window[], options: Omit<PlanOptions, 'fullRefresh'> = {}): Step[] {
    return planSteps(this.current, windows, { ...options, fullRefresh: this.fullRefresh });
  }

  /** The start of the recorded window holding `second` (not a pending one), or `second` itself. */
  windowStartOf(second: number): number {
    const holding = this.current.windows.find((entry) => entry.status !== 'pending' && entry.sinceUnix < second && second <= entry.untilUnix);
    return holding ? holding.sinceUnix : second;
  }

  entry(window: Window): StateEntry | undefined {
    return this.current.windows[indexOfWindow(this.current.windows, window.since, window.until)];
  }

  /**
   * Changes one window's record and writes it. A window not recorded yet is added; the records it
   * covers (pieces of an earlier split, another --chunk) are superseded and dropped. Writes are
   * serialised: callers running windows concurrently may call it at any time.
   */
  update(window: Window, patch: EntryPatch, light = false): Promise<void> {
    const found = this.entry(window);
    if (found) return this.change({ set: [[window.since, window.until, changed(found, patch)]] }, light);
    const covered = this.current.windows.filter((entry) => entry.sinceUnix >= window.since && entry.untilUnix <= window.until);
    // a window whose pieces were recorded (it was split) keeps what they say of its reports
    return this.change({ drop: covered.map(keyOf), set: [[window.since, window.until, { ...fromPieces(covered), ...patch }]] }, light);
  }

  /**
   * One output was rewritten whole with `kept` in it: the other windows recorded with that file are
   * not in it any more, so their records go (the state says what the files hold).
   */
  rewritten(file: string, kept: readonly Window[]): Promise<void> {
    const inFile = (entry: StateEntry) => kept.some((window) => window.since === entry.sinceUnix && window.until === entry.untilUnix);
    const gone = this.current.windows.filter((entry) => entry.file === file && !inFile(entry));
    return gone.length ? this.change({ drop: gone.map(keyOf) }) : this.exists();
  }

  /** Records the windows of this run that have no record yet, as pending, and the period it
   * planned (before the first submit): one change. `withNext`: the change is not written now but
   * with the next one (the first submit's intent), or at close, one write fewer a run: a power
   * loss before the next durable change may take it back, as it may the intent. */
  pending(windows: readonly Window[], period?: Window, withNext = false): Promise<void> {
    const missing = windows.filter((window) => !covered(this.current.windows, window));
    const planned = period && { since: parisIso(period.since), until: parisIso(period.until), sinceUnix: period.since, untilUnix: period.until, at: instant(this.now()) };
    if (!missing.length && !planned) return this.exists();
    const change = { ...(missing.length ? { add: missing.map((window): [number, number] => [window.since, window.until]) } : {}), ...(planned ? { planned } : {}) };
    return withNext && this.store.deferrable ? this.change(change, true, true) : this.change(change);
  }

  /** The intent, recorded before the submit: if the run dies before its answer is recorded, the
   * next run can say that a report of unknown ID may be running for the window. A light change
   * (StateWrites): the machine's power lost before the submit's answer is recorded may take the
   * warning with it, never the state's integrity or a file's rows; in a state file, the folder's
   * sync after the rename was 18 ms of the 41 ms a state change took in a fleet of 300 jobs, on
   * the path from one report's download to the next one's submit. */
  submitting(window: Window): Promise<void> {
    return this.update(window, { submitting: instant(this.now()) }, true);
  }

  submitted(window: Window, reportId: string): Promise<void> {
    const attempts = (this.entry(window)?.attempts ?? 0) + 1;
    return this.update(window, {
      status: 'submitted', reportId, submittedAt: instant(this.now()), attempts, error: null, finishedAt: null, submitting: null,
    });
  }

  done(window: Window, result: { rows: number; bytes: number | null; sha256: string | null; file: string | null; etag?: string; outputs?: StateEntry['outputs'] }, unchanged = false): Promise<void> {
    return this.update(window, { status: 'done', ...result, finishedAt: instant(this.now()), error: null, ...this.unchangedPatch(window, unchanged) });
  }

  /** A window's rows are in a table: done, with what was loaded (a file written beside it keeps its record). */
  loaded(window: Window, result: { table: string; rows: number; sha256: string; reportIds?: string[] }, unchanged = false): Promise<void> {
    const at = instant(this.now());
    return this.update(window, { status: 'done', rows: result.rows, loaded: { ...result, at }, finishedAt: at, error: null, ...this.unchangedPatch(window, unchanged) });
  }

  /** `unchanged` recorded when true, and cleared only where it was true: the records of windows
   * that changed keep their shape of before (no field) */
  private unchangedPatch(window: Window, unchanged: boolean): EntryPatch {
    return unchanged ? { unchanged: true } : this.entry(window)?.unchanged ? { unchanged: false } : {};
  }

  /** What `loaded` will record for the window, without recording it (a table state writes it in
   * the window's own transaction, with its rows): its record, and those it supersedes. */
  loadedRecord(window: Window, result: { table: string; rows: number; sha256: string; reportIds?: string[] }): { since: number; until: number; entry: StateEntry; drop: [number, number][] } {
    const at = instant(this.now());
    const patch: EntryPatch = { status: 'done', rows: result.rows, loaded: { ...result, at }, finishedAt: at, error: null };
    const found = this.entry(window);
    if (found) return { since: window.since, until: window.until, entry: { ...found, ...patch }, drop: [] };
    const covered = this.current.windows.filter((entry) => entry.sinceUnix >= window.since && entry.untilUnix <= window.until);
    return { since: window.since, until: window.until, entry: { ...newEntry(window), ...fromPieces(covered), ...patch }, drop: covered.map(keyOf) };
  }

  /** The store the state is kept in. */
  get where(): StateStore {
    return this.store;
  }

  failed(window: Window, message: string): Promise<void> {
    return this.update(window, { status: 'failed', finishedAt: instant(this.now()), error: message });
  }

  /**
   * Forgets what was recorded for these windows (recorded ones, matched exactly): each goes back to
   * pending, as if planned and never submitted, so that the next run fetches it again (also with
   * `--since auto`, which starts at the first window not done). One write, whatever their number.
   */
  forget(windows: readonly Window[]): Promise<void> {
    const forgotten = this.current.windows
      .filter((entry) => windows.some((window) => window.since === entry.sinceUnix && window.until === entry.untilUnix))
      .map((entry): [number, number] => [entry.sinceUnix, entry.untilUnix]);
    // dropped, then added back as pending: one change, whatever their number
    return forgotten.length ? this.change({ drop: forgotten, add: forgotten }) : this.exists();
  }

  /** A window split in two (self-splitting runs): its halves replace it, pending. */
  split(window: Window, halves: readonly [Window, Window]): Promise<void> {
    return this.change({ drop: [[window.since, window.until]], add: halves.map((half) => [half.since, half.until]) });
  }

  /** The uploads in flight that a run recorded (a killed one's, when read at the start of a run). */
  get uploads(): readonly Upload[] {
    return this.current.uploads ?? [];
  }

  /** A multipart upload begins to send parts: recorded before the first. */
  uploadStarted(upload: Upload): Promise<void> {
    return this.change({ uploads: [...this.uploads.filter((u) => u.uploadId !== upload.uploadId), { ...upload }] });
  }

  /** Uploads completed or aborted: no longer recorded. */
  uploadsEnded(uploadIds: readonly string[]): Promise<void> {
    if (!this.uploads.some((u) => uploadIds.includes(u.uploadId))) return this.exists();
    return this.change({ uploads: this.uploads.filter((u) => !uploadIds.includes(u.uploadId)) });
  }

  /** Applies a change to the state in memory and hands it to the writer (whole file or log);
   * `later`: kept for the next change's write (light), whose caller hears of its failure. */
  private change(change: Omit<Change<StateEntry>, 'at'>, light = false, later = false): Promise<void> {
    const logged: Change<StateEntry> = { at: instant(this.now()), ...change };
    if (!logged.drop?.length) delete logged.drop;
    const planned = logged.planned ?? this.current.planned;
    const { uploads: _previous, ...rest } = this.current;
    const uploads = logged.uploads ?? this.current.uploads;
    this.current = { ...rest, updatedAt: logged.at, ...(planned ? { planned } : {}), ...(uploads?.length ? { uploads } : {}), windows: applyChange(this.current.windows, logged, ENTRY_SHAPE.create) };
    const line = JSON.stringify(logged);
    if (later) {
      this.later.push(line);
      return Promise.resolve();
    }
    this.writeLater();
    return this.writer.write(line, light);
  }

  /** No change: the document made to exist (with the changes kept for later). */
  private exists(): Promise<void> {
    this.writeLater();
    return this.writer.write();
  }

  /** changes kept for the next write (pending's `withNext`) */
  private readonly later: string[] = [];

  /** The changes kept for later, handed to the writer: the write asked for next carries them. */
  private writeLater(): void {
    for (const line of this.later.splice(0)) this.writer.write(line, true).catch(() => undefined);
  }

  /** Waits for pending writes, folds the log into the file, and releases the lock. A failed write
   * was reported to its caller already; close() never throws, so a `finally` does not hide the
   * error that stopped the run. */
  async close(): Promise<void> {
    this.writeLater();
    await this.writer.close();
    await this.lock.release();
  }
}
