// What a kind of output (-o TARGET) is: one `SinkKind` per scheme (a file, stdout, `s3://`), each
// defined beside its sink (sinks.ts: file and stdout; objects.ts: s3) and listed in sinks.ts's
// table. The engine, the commands and the state ask the table, never the target's spelling.

import type { Output } from '../context.js';
import type { Sink, WriteCheck } from '../export/sink.js';
import type { Host } from '../host.js';
import type { Waits } from '../retry.js';

/** What the state recorded of an output the last time it was written or found unchanged (an
 * object's: its content's SHA-256 and the ETag it had then). */
export interface RecordedObject {
  sha256: string;
  etag: string;
}

/** Where a run records the uploads it has in flight (the state: RunState.uploadStarted/uploadsEnded). */
export interface UploadLedger {
  started(upload: { bucket: string; key: string; uploadId: string; startedAt: string }): Promise<void>;
  ended(uploadIds: readonly string[]): Promise<void>;
}

/** What opening or checking an output needs of the run. */
export interface SinkDeps {
  cwd: string;
  host: Host;
  stdout: Output;
  /** where a remote sink's client finds its settings (AWS_*); the token store's place */
  env?: Readonly<Record<string, string | undefined>>;
  /** the configuration folder: the token store, the uploads' records */
  configDir?: string;
  /** -v: a line per request to a remote store (no secret is in them) */
  trace?: (line: string) => void;
  /** with a state: uploads in flight are recorded there */
  ledger?: UploadLedger;
  /** --retries, and the clock, sleep and randomness of a remote client's waits (src/retry.ts) */
  retries?: number;
  waits?: Waits;
}

export interface OpenOptions {
  format: string;
  /** with a state: an output found to hold the same content is left as it is (`unchanged`) */
  keepUnchanged: boolean;
  /** what the state recorded of the output at this target */
  recorded?: RecordedObject;
}

/** How an output was put in place, once committed: written or left unchanged, its size and
 * SHA-256 (an object's ETag). Undefined: nothing known (stdout, a file written without a state). */
export interface Placed {
  outcome: 'written' | 'unchanged';
  bytes: number;
  sha256: string;
  etag?: string;
}

export interface Opened {
  sink: Sink;
  /** how the output was put in place, once it is */
  placed(): Placed | undefined;
}

export interface SinkKind {
  /** as the docs name it: `file`, `stdout`, `s3` */
  readonly scheme: string;
  /** -o's text names this kind (by its scheme) */
  matches(target: string): boolean;
  /** a path of this machine: checked by its real path against the run's other files (the state,
   * its lock, the token store), split by node's dirname/basename */
  readonly local: boolean;
  /** the target, checked by its words alone (a usage error says what is wrong) */
  parse(target: string): void;
  /** the target as one string: two spellings of one target are one (a file's real path: `..` and
   * symbolic links resolved; an object's URL) */
  identity(target: string, cwd: string): string;
  /** what can be checked with no request (`look` creates nothing: `--plan`, `jobs validate`) */
  place(target: string, cwd: string, shown: string, check: WriteCheck): void;
  /** the check before the run's first request (a bucket reachable and writable) */
  check(target: string, deps: SinkDeps, shown: string): Promise<void>;
  open(target: string, deps: SinkDeps, options: OpenOptions): Promise<Opened>;
  /** every secret its client may read from the environment: masked wherever text leaves the process */
  secrets(env: Readonly<Record<string, string | undefined>>): readonly (string | undefined)[];
  /** the target as the state records it and the closing line names it (a file: its absolute path) */
  describe(target: string, cwd: string): string;
  /** an output recorded done is still there (an object is taken to be: asking costs a request) */
  exists(target: string): boolean;
  /** where the target is and its name there (a file's folder; an object's key up to its last `/`) */
  split(target: string): { where: string; name: string };
}
