// Choosing jobs by name (issue 34: a surviving mutant left `?` untested): `*` any run of
// characters, `?` exactly one, every other character itself.

import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { selectJobs } from '../../src/fleet/select.js';

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
