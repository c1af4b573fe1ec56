// Choosing jobs by name (issue 34: a surviving mutant left `?` untested): `*` any run of
// characters, `?` exactly one, every other character itself.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { selectJobs, shardOf } from '../../src/fleet/select.js';

const jobs = ['buyer-1', 'buyer-10', 'buyer-2', 'seller-1', 'buyer.x', 'buyerAx'].map((name) => ({ name }));
const names = (patterns: string[], exclude: string[] = []) => selectJobs(jobs, patterns, exclude).map((job) => job.name);

describe('job names by glob', () => {
  it('? is one character, * any number', () => {
    expect(names(['buyer-?'])).toEqual(['buyer-1', 'buyer-2']);
    expect(names(['buyer-??'])).toEqual(['buyer-10']);
    expect(names(['*-1'])).toEqual(['buyer-1', 'seller-1']);
    expect(names(['buyer-*'], ['buyer-?'])).toEqual(['buyer-10']);
  });

  it('a dot is a dot, not any character', () => {
    expect(names(['buyer.x'])).toEqual(['buyer.x']);
  });

  it('a pattern that names no job is a usage error', () => {
    expect(() => names(['buyer-???'])).toThrow(UsageError);
  });
});

describe('the shard of a job', () => {
  it('is the SHA-256 of its name, as a number, modulo N, plus one: for every N up to 10,000', () => {
    const byBigInt = (name: string, n: number) => Number(BigInt(`0x${createHash('sha256').update(name, 'utf8').digest('hex')}`) % BigInt(n)) + 1;
    const names = ['job-0', 'buyer-daily@acme', 'é-ü-漢字', '', ...Array.from({ length: 200 }, (_, i) => `job-${i * 7919}`)];
    for (const n of [1, 2, 3, 7, 8, 255, 256, 257, 1000, 9973, 9999, 10_000]) {
      for (const name of names) expect(shardOf(name, n), `${name} of ${n}`).toBe(byBigInt(name, n));
    }
    // (a known value: moving jobs between pods would be a change of every deployed fleet)
    expect([shardOf('job-0', 8), shardOf('buyer-daily@acme', 10_000)]).toEqual([2, 389]);
  });
});
