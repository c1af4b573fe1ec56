// Small file primitives for recurring runs: the sha256 of a file, and "replace only if the content
// changed", so that a nightly re-fetch of unchanged numbers leaves the file, and its mtime, alone
// (downstream loaders that watch mtimes do nothing). Files are put in place by src/fs/atomic.ts.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { placeFile, writeFileAtomic } from './atomic.js';

export type WriteOutcome = 'written' | 'unchanged';

export interface Replaced {
  outcome: WriteOutcome;
  /** sha256 of the target's content now, hex */
  sha256: string;
  bytes: number;
}

function sha256Of(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

/** sha256 (hex) and size of a file, streamed; undefined when it does not exist. */
export async function sha256File(path: string): Promise<{ sha256: string; bytes: number } | undefined> {
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/**
 * Puts a finished temporary file in place of `target` unless `target` already holds the same
 * bytes: then the temporary file is removed and `target` is left untouched (same inode, same
 * mtime). For downloads that were streamed into a temporary file beside the target.
 */
export async function replaceIfChanged(temp: string, target: string): Promise<Replaced> {
  const fresh = await sha256File(temp);
  if (!fresh) throw Object.assign(new Error(`${temp} does not exist`), { code: 'ENOENT' });
  const current = await sha256File(target);
  if (current && current.sha256 === fresh.sha256) {
    await unlink(temp);
    return { outcome: 'unchanged', ...fresh };
  }
  await placeFile(temp, target);
  return { outcome: 'written', ...fresh };
}

/** Writes `content` to `path` atomically, only if it differs from what `path` holds. */
export async function writeFileIfChanged(path: string, content: string | Uint8Array, mode = 0o644): Promise<Replaced> {
  const sha256 = sha256Of(content);
  const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
  const current = await sha256File(path);
  if (current && current.sha256 === sha256) return { outcome: 'unchanged', sha256, bytes };
  await writeFileAtomic(path, content, mode);
  return { outcome: 'written', sha256, bytes };
}

