// Where output goes: stdout, or a file written atomically (a temporary file beside the target,
// flushed, renamed into place only once everything was written). A failure, a timeout or Ctrl-C
// leaves the previous file untouched and no temporary file behind.

import { closeSync, createReadStream, createWriteStream, openSync, unlinkSync, type WriteStream } from 'node:fs';
import { mkdir, open, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Output } from '../context.js';
import { CliError, EXIT, UsageError, whyWriteFailed } from '../errors.js';
import { cleanStaleTemps, placeFile, tempPathFor } from '../fs/atomic.js';
import type { Host } from '../host.js';
import { kindOf, probeFolder, writableFolder, type FileKind } from '../paths.js';

export interface Sink {
  /** resolves once the chunk is accepted (waits for the destination to drain) */
  write(chunk: string | Buffer): Promise<void>;
  /** everything was written: make it visible */
  commit(): Promise<void>;
  /** something failed: leave no trace */
  abort(): Promise<void>;
  /** the file written, or undefined for stdout */
  readonly path?: string;
  /** files only: replace what was written by a transformation of it */
  rewrite?(transform: (input: AsyncIterable<Buffer>) => AsyncIterable<string>): Promise<void>;
}

/** The reader went away (`reporting ... | head`): not an error, stop writing quietly. */
class PipeClosedError extends CliError {
  constructor() {
    super('the output pipe was closed', EXIT.ok);
  }
}

/** Writing a file failed once the job was under way (a full disk, a folder gone read-only). */
export class WriteError extends CliError {
  constructor(message: string, readonly path: string, readonly code?: string, hint?: string) {
    super(message, EXIT.internal, hint);
  }
}

function fileError(error: unknown, path: string): CliError {
  if (error instanceof CliError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new WriteError(`cannot write ${path}: ${whyWriteFailed(error)}`, path, code, code === 'ENOSPC' ? 'free some space; the previous file, if any, is untouched' : undefined);
}

/** (src/paths.ts: in a pass over a job file's thousands of paths, from each folder's listing) */
const statOf = kindOf;

/** The folders of `dir` that do not exist yet, outermost first, and the nearest one that does
 * exist (which may be a file: then nothing can be created under it). */
function missingFolders(dir: string): { existing: string; stats: FileKind; missing: string[] } {
  const missing: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    const stats = statOf(current);
    if (stats) return { existing: current, stats, missing };
    missing.unshift(current);
    if (dirname(current) === current) throw new Error(`no folder of ${dir} exists`);
  }
}

/**
 * Creates the missing folders of `dir` one at a time. Not `mkdir -p` (Node's recursive mkdir):
 * on a file system that answers ENOENT to mkdir (/proc), it loops forever in a synchronous call
 * that not even SIGTERM interrupts.
 * Asked of libuv's threads, not made on the main one: in a fleet, a folder made while other jobs
 * flush their states waits for the file system's journal (ext4: 0.3 ms a folder at 300 jobs, other
 * jobs' downloads held meanwhile).
 */
async function makeFolders(dir: string, target: string): Promise<void> {
  const missing: string[] = [];
  let existing = dir;
  let stats: FileKind | undefined;
  while (!(stats = await stat(existing).catch(() => undefined))) {
    missing.unshift(existing);
    if (dirname(existing) === existing) throw new Error(`no folder of ${dir} exists`);
    existing = dirname(existing);
  }
  if (!stats.isDirectory()) throw new WriteError(`cannot write ${target}: ${existing} is a file, not a folder`, target, 'ENOTDIR');
  for (const folder of missing) {
    try {
      await mkdir(folder);
    } catch (error) {
      // another process made it in between
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(folder).catch(() => undefined))?.isDirectory()) throw error;
    }
  }
}

/** How checkWritableTarget may look: `probe` creates (and removes at once) a file of its own,
 * uniquely named, in the nearest existing folder; `look` creates nothing at all (`jobs list`,
 * `plan`, `validate`, `run --plan`): the permissions of that folder only. */
export type WriteCheck = 'probe' | 'look';

/** A flag naming a file to write, and the name its hint suggests inside a folder given for it. */
const EXAMPLE_FILE = { '-o': 'report.csv', '--html': 'status.html', '--metrics-file': 'reporting.prom', '--state': 'state.json' } as const;
export type FileFlag = keyof typeof EXAMPLE_FILE;

/**
 * Checks, before the first request, that -o (or `flag`: --html, --metrics-file, --state) can be written: the target is not a folder nor a
 * device, the nearest existing folder is a folder, and a file can be made there. A usage error
 * naming the path, so that no report is requested, waited for and downloaded only to be thrown
 * away.
 *
 * Nothing another process could see or trip on is made: no folder is created and removed (16
 * processes sharing a volume raced on such a probe folder, one removing it while another looked
 * into it); a missing folder is as writable as its nearest existing ancestor, where `probe`
 * creates a file of a name no other process uses (the kernel's own verdict: root, a read-only
 * mount, /proc) and removes it at once.
 */
export function checkWritableTarget(target: string, cwd: string, shown = target, check: WriteCheck = 'probe', flag: FileFlag = '-o'): void {
  const path = resolve(cwd, target);
  const refuse = (reason: string, hint?: string): never => { throw new UsageError(`cannot write ${flag} ${shown}: ${reason}`, hint).about(flag); };
  const existing = statOf(path);
  if (existing?.isDirectory()) refuse('it is a folder', `name a file inside it, for example ${flag} ${join(target, EXAMPLE_FILE[flag])}`);
  // a file is replaced by renaming another over it: a device or a pipe would be replaced, not written
  if (existing && !existing.isFile()) refuse('it is not a regular file', flag === '-o' ? 'write to stdout (-o - or no -o) and redirect it' : 'name a regular file');
  let folders: ReturnType<typeof missingFolders>;
  try {
    folders = missingFolders(dirname(path));
  } catch (error) {
    return refuse((error as Error).message);
  }
  if (!folders.stats.isDirectory()) refuse(`${folders.existing} is a file, not a folder`);
  const first = folders.missing[0];
  const where = first ? `cannot create the folder ${first}` : `cannot create a file in ${folders.existing}`;
  const hint = 'choose a folder you can write to';
  try {
    // a file or a folder is made in a folder one may write in and search
    writableFolder(folders.existing);
    if (check === 'look') return;
    probeFolder(folders.existing, () => {
      const temp = tempPathFor(join(folders.existing, basename(first ?? path)));
      closeSync(openSync(temp, 'wx', 0o600));
      unlinkSync(temp);
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // the folder exists (just seen): ENOENT means its file system refuses (/proc)
    refuse(`${where}: ${code === 'ENOENT' ? 'the file system there does not allow it' : whyWriteFailed(error)}`, hint);
  }
}

function writeTo(stream: WriteStream, chunk: string | Buffer): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const onError = (error: Error) => reject(error);
    stream.once('error', onError);
    const more = stream.write(chunk);
    if (more) {
      stream.off('error', onError);
      resolvePromise();
    } else {
      stream.once('drain', () => {
        stream.off('error', onError);
        resolvePromise();
      });
    }
  });
}

/** A file written through a temporary file beside it, renamed into place by commit(). */
class FileSink implements Sink {
  private temp = '';
  private stream?: WriteStream;
  private failed?: Error;
  /** takes the temporary file off the host's exit cleanups */
  private forget = () => {};

  /** `scratch`: a file of the run's own folder, which only this process reads (a window's spool):
   * written in place, not flushed to the disk, removed with its folder */
  constructor(readonly path: string, private readonly host: Host, private readonly place: PlaceFile = placeFile, private readonly scratch = false) {}

  async open(): Promise<void> {
    this.temp = this.scratch ? this.path : tempPathFor(this.path, this.host.pid);
    // (a scratch file left by an attempt of this run is its own to replace)
    const handle = await open(this.temp, this.scratch ? 'w' : 'wx', 0o644).catch((error: unknown) => { throw fileError(error, this.path); });
    if (!this.scratch) {
      // removed even when the process exits abruptly
      const temp = this.temp;
      this.forget = this.host.atExit(() => {
        try {
          unlinkSync(temp);
        } catch {
          // already gone
        }
      });
      // a file replaced keeps its permissions (a 0600 report stays private)
      const previous = await stat(this.path).catch(() => undefined);
      if (previous?.isFile()) await handle.chmod(previous.mode & 0o777).catch(() => undefined);
    }
    this.failed = undefined;
    // the stream owns the handle: it flushes (fsync) and closes it when it ends
    this.stream = createWriteStream('', { fd: handle, highWaterMark: 1 << 18, flush: !this.scratch });
    this.stream.on('error', (error) => { this.failed = error; });
  }

  async write(chunk: string | Buffer): Promise<void> {
    if (this.failed || !this.stream) throw fileError(this.failed, this.path);
    try {
      await writeTo(this.stream, chunk);
    } catch (error) {
      throw fileError(error, this.path);
    }
  }

  /** Closes the stream, flushing it to the disk. */
  private async close(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    if (!stream || stream.closed) return;
    await new Promise<void>((res, rej) => {
      stream.once('error', rej);
      stream.end(() => res());
    });
    if (!stream.closed) await new Promise<void>((res) => stream.once('close', () => res()));
    if (this.failed) throw this.failed;
  }

  /** Replaces what was written by a transformation of it (through a second temporary file). */
  async rewrite(transform: (input: AsyncIterable<Buffer>) => AsyncIterable<string>): Promise<void> {
    // (a spool's JSON lines are never padded: only a CSV's header grows)
    if (this.scratch) throw new CliError(`internal: the scratch file ${this.path} cannot be rewritten`, EXIT.internal);
    try {
      await this.close();
    } catch (error) {
      throw fileError(error, this.path);
    }
    const previous = this.temp;
    const forgetPrevious = this.forget;
    await this.open();
    for await (const text of transform(createReadStream(previous) as AsyncIterable<Buffer>)) await this.write(text);
    await unlink(previous).catch(() => undefined);
    forgetPrevious();
  }

  async commit(): Promise<void> {
    try {
      await this.close();
      if (!this.scratch) await this.place(this.temp, this.path);
      this.forget();
    } catch (error) {
      await this.abort();
      throw fileError(error, this.path);
    }
  }

  async abort(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    if (stream && !stream.closed) {
      stream.destroy();
      await new Promise<void>((res) => stream.once('close', () => res()));
    }
    await unlink(this.temp).catch(() => undefined);
    this.forget();
  }
}

/** Puts the finished temporary file in place of the target (default: fs/atomic.ts placeFile). It may leave the
 * target as it is (the same content: src/fs/files.ts replaceIfChanged), but must not leave the
 * temporary file behind. */
export type PlaceFile = (temp: string, target: string) => Promise<void>;

/** A scratch file: a window's spool, in the run's own folder (`target` absolute, its folder made),
 * read back by this process and removed with the folder. Written in place, without a temporary
 * name, and not flushed to the disk, which only a later process would need: each flush of a
 * fleet's spools (the file and its folder, a window) held one of libuv's threads while other jobs
 * waited for theirs to record their states. */
export async function openScratchSink(target: string, host: Host): Promise<Sink> {
  const sink = new FileSink(target, host, undefined, true);
  await sink.open();
  return sink;
}

/** Opens `target`, resolved against the command's working directory; the host names the
 * temporary file and removes it on any exit. */
export async function openFileSink(target: string, where: { cwd: string; host: Host }, place?: PlaceFile): Promise<Sink> {
  const path = resolve(where.cwd, target);
  try {
    await makeFolders(dirname(path), path);
  } catch (error) {
    throw fileError(error, dirname(path));
  }
  cleanStaleTemps(path, where.host);
  const sink = new FileSink(path, where.host, place);
  await sink.open();
  return sink;
}

/** A failed write to stdout other than a closed pipe (`> /dev/full`, a full disk): an error. */
export function stdoutWriteError(error: unknown): CliError {
  return new CliError(fileError(error, 'standard output').message, EXIT.internal);
}

export function stdoutSink(out: Output): Sink {
  let closed = false;
  let failed: unknown;
  const onError = (error: unknown) => {
    if ((error as NodeJS.ErrnoException)?.code === 'EPIPE') closed = true;
    else failed ??= error;
  };
  out.once('error', onError);
  const refusal = () => (failed ? stdoutWriteError(failed) : closed ? new PipeClosedError() : undefined);
  return {
    write(chunk) {
      const refused = refusal();
      if (refused) return Promise.reject(refused);
      return new Promise((resolvePromise, reject) => {
        let settled = false;
        const settle = (error?: CliError) => {
          if (settled) return;
          settled = true;
          out.off?.('drain', onDrain);
          out.off?.('close', onClose);
          if (error) reject(error);
          else resolvePromise();
        };
        const onDrain = () => settle();
        const onClose = () => { closed = true; settle(refusal()); };
        const more = out.write(chunk, (error) => {
          if (error) {
            onError(error);
            settle(refusal() ?? stdoutWriteError(error));
          }
        });
        if (more) return settle(refusal());
        out.once('drain', onDrain);
        out.once('close', onClose);
      });
    },
    async commit() {
      // an empty write calls back once everything before it was flushed, or failed
      if (!refusal()) await new Promise<void>((resolvePromise) => { out.write('', (error) => { if (error) onError(error); resolvePromise(); }); });
      out.off?.('error', onError);
      const refused = refusal();
      if (refused) throw refused;
    },
    async abort() {
      out.off?.('error', onError);
    },
  };
}
