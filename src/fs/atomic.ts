// The one way a file is replaced: a temporary file beside the target, written and fsynced, renamed
// over the target, and the folder fsynced so that the rename survives a power loss. Readers see
// the old file or the new one, never a part. Streamed outputs (export/sink.ts), whole-file writes
// (the state file, the journal) and "replace only if changed" (files.ts) all end in placeFile.

import { randomBytes } from 'node:crypto';
import { readdirSync, unlinkSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Host } from '../host.js';

const TEMP_MARK = '.reporting-tmp-';
/** what follows the mark: the pid (at most 10 digits), `-`, 8 hex digits */
const TEMP_SUFFIX_BYTES = 19;
const NAME_MAX_BYTES = 255;

/**
 * `.NAME.reporting-tmp-`: the start of this target's temporary names. A long NAME is cut (on a
 * character boundary) so that the temporary name fits in the 255 bytes a file name may have.
 */
function tempPrefix(target: string): string {
  const budget = NAME_MAX_BYTES - 1 - TEMP_MARK.length - TEMP_SUFFIX_BYTES;
  let name = basename(target);
  while (Buffer.byteLength(name) > budget) name = [...name].slice(0, -1).join('');
  return `.${name}${TEMP_MARK}`;
}

/**
 * A fresh temporary name beside `target`. With the writer's pid, cleanStaleTemps can tell a file
 * left by a killed writer from one still being written; without it (a write that lasts one call),
 * the name is never taken for a stale one.
 */
export function tempPathFor(target: string, pid?: number): string {
  const tag = pid === undefined ? `x${randomBytes(4).toString('hex')}` : String(pid);
  return join(dirname(target), `${tempPrefix(target)}${tag}-${randomBytes(4).toString('hex')}`);
}

/** Removes temporary files of this target left by a process that was killed (SIGKILL, power loss). */
export function cleanStaleTemps(target: string, host: Pick<Host, 'pid' | 'isAlive'>): string[] {
  const dir = dirname(target);
  const prefix = tempPrefix(target);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (!Number.isInteger(pid) || pid === host.pid || host.isAlive(pid)) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      // another run cleaned it
    }
  }
  return removed;
}

/** The folders being synced: the sync in flight, and the next one, shared by every caller that
 * came while the first ran. */
const dirSyncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();

/**
 * Makes a rename durable: the folder's entry is flushed too (best effort: not every system allows
 * it). Renames in one folder at once share a sync: each caller's promise settles after a sync that
 * began after its call, the one in flight when it came being too early for it (a fleet's jobs
 * keep their states in one folder, and each state change was a sync of its own).
 */
export function syncDir(dir: string): Promise<void> {
  const syncing = dirSyncs.get(dir);
  if (!syncing) return startDirSync(dir);
  return syncing.next ??= syncing.running.then(() => startDirSync(dir));
}

function startDirSync(dir: string): Promise<void> {
  const running: Promise<void> = syncDirNow(dir).finally(() => {
    if (dirSyncs.get(dir)?.running === running) dirSyncs.delete(dir);
  });
  dirSyncs.set(dir, { running });
  return running;
}

async function syncDirNow(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // e.g. EISDIR/EPERM on some platforms: the rename is still atomic, only less durable
  }
}

/** Puts a finished (written and fsynced) temporary file in place of `target`, durably. */
export async function placeFile(temp: string, target: string): Promise<void> {
  await rename(temp, target);
  await syncDir(dirname(target));
}

/** Writes `content` to `path` atomically: readers see the old file or the new one, never a part.
 * `durable` false: the file's bytes are flushed before the rename, but the folder is not synced
 * after it, so that a power loss may leave the old file (whole) in place of the new one. */
export async function writeFileAtomic(path: string, content: string | Uint8Array, mode = 0o644, durable = true): Promise<void> {
  const temp = tempPathFor(path);
  // the folder made only where it is missing (a fleet's states are written thousands of times into
  // a few folders: a mkdir each was one more call queued for libuv's threads)
  const handle = await open(temp, 'wx', mode).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dirname(path), { recursive: true });
    return open(temp, 'wx', mode);
  });
  try {
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (durable) await placeFile(temp, path);
    else await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
