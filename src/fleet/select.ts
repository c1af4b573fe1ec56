// Which jobs of a file a command takes: names or globs (`buyer-*`, `*@acme`), --exclude, and a
// shard (--shard K/N, or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with REPORTING_SHARDS).

import { hash } from 'node:crypto';
import { UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import { parseShard, type Shard } from './shard.js';

/** The shard a job lands in: the SHA-256 of its expanded name, as a number, modulo N, plus one.
 * Stable: it depends on the name and N only, so adding a job moves no other job. */
export function shardOf(name: string, n: number): number {
  // (the digest, big-endian, modulo n a byte at a time: exact in a double for n <= 10,000, and a
  // tenth of a BigInt's time, for each of a file's 20,000 jobs; crypto.hash, one call and no Hash
  // object: 20,000 digests in 45-70 ms where createHash took 70-130 ms)
  const digest = hash('sha256', name, 'buffer');
  let rest = 0;
  for (let i = 0; i < digest.length; i++) rest = (rest * 256 + (digest[i] as number)) % n;
  return rest + 1;
}

/** --shard, else JOB_COMPLETION_INDEX (0-based) + 1 of REPORTING_SHARDS when both are set. */
export function shardFrom(flag: Shard | undefined, env: Record<string, string | undefined>): Shard | undefined {
  if (flag) return flag;
  const index = env.JOB_COMPLETION_INDEX?.trim();
  const shards = env.REPORTING_SHARDS?.trim();
  if (!index || !shards) return undefined;
  if (!/^\d+$/.test(index)) throw new UsageError(`JOB_COMPLETION_INDEX is a whole number from 0, not "${index}"`);
  return parseShard(`${Number(index) + 1}/${shards}`, `JOB_COMPLETION_INDEX + 1 / REPORTING_SHARDS (${index} + 1 / ${shards})`);
}

const globOf = (pattern: string) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);

/** The names among `all` that `patterns` name (all without any), less `exclude`'s, in shard `shard`.
 * A pattern that names no job is a usage error (a typo would otherwise run nothing). */
export function selectJobs<J extends { name: string }>(all: readonly J[], patterns: readonly string[], exclude: readonly string[], shard?: Shard): J[] {
  const names = all.map((job) => job.name);
  const matcher = (pattern: string, what: string) => {
    const regex = globOf(pattern);
    if (!names.some((name) => regex.test(name))) {
      throw new UsageError(`${what} "${pattern}" names no job of the file${didYouMean(pattern, names)}`, 'see `reporting jobs list`');
    }
    return regex;
  };
  const wanted = patterns.map((pattern) => matcher(pattern, 'NAME'));
  const unwanted = exclude.map((pattern) => matcher(pattern, '--exclude'));
  return all.filter((job) => (wanted.length === 0 || wanted.some((regex) => regex.test(job.name)))
    && !unwanted.some((regex) => regex.test(job.name))
    && (!shard || shardOf(job.name, shard.n) === shard.k));
}
