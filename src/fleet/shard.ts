// `--shard K/N`: what the flag says, apart from which jobs fall in a shard (select.ts), so that
// the registry, which parses the flag for every command's start, loads no node:crypto.

import { UsageError } from '../errors.js';

export interface Shard {
  k: number;
  n: number;
}

/** `K/N` with 1 <= K <= N. */
export function parseShard(text: string, what = '--shard'): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const k = Number(match?.[1]);
  const n = Number(match?.[2]);
  if (!match || n < 1 || k < 1 || k > n || n > 10_000) throw new UsageError(`${what} wants K/N with 1 <= K <= N (like 2/5), not "${text}"`);
  return { k, n };
}

