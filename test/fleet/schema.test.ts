// The job file's JSON Schema shipped in docs/ is the one built from run's flags, and it accepts
// the files the docs and tests use while refusing what `jobs validate` refuses for its keys.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { REGISTRY, type AnyEntry } from '../../src/cli/registry.js';
import { runParser } from '../../src/cli/run-words.js';
import { jobFileSchema } from '../../src/fleet/schema.js';

const SHIPPED = fileURLToPath(new URL('../../docs/jobs.schema.json', import.meta.url));
const built = jobFileSchema(runParser(REGISTRY.find((entry) => entry.name === 'run') as AnyEntry).flags);

describe('docs/jobs.schema.json', () => {
  it('is the schema built from run\'s flags (npm run schema:jobs writes it)', () => {
    const text = `${JSON.stringify(built, null, 2)}\n`;
    if (process.env.UPDATE_JOBS_SCHEMA) writeFileSync(SHIPPED, text);
    expect(readFileSync(SHIPPED, 'utf8')).toBe(text);
  });

  it('accepts the docs\' job file; refuses an unknown key, a wrong version, a job without name', () => {
    const validate = new Ajv2020({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(SHIPPED, 'utf8')));
    const docs = readFileSync(fileURLToPath(new URL('../../docs/jobs.md', import.meta.url)), 'utf8');
    const example = /```yaml\n([\s\S]*?)```/.exec(docs)?.[1] as string;
    expect(example).toContain('version: 1');
    const file = parse(example);
    expect(validate(file), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...file, jobs: [{ ...file.jobs[0], breakdown: 'DAILY' }] })).toBe(false);
    expect(validate({ ...file, version: 2 })).toBe(false);
    expect(validate({ ...file, jobs: [{ side: 'buyer' }] })).toBe(false);
    expect(validate({ ...file, jobs: [{ name: 'a', side: 'buyer', split: false, 'no-resume': true, metrics: ['displays', 'clicks'] }] })).toBe(true);
    // a job's option with no value drops the default's; the defaults' own cannot be null
    expect(validate({ ...file, jobs: [{ name: 'a', side: 'buyer', output: null, load: 'duckdb:w.duckdb' }] }), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...file, defaults: { ...file.defaults, output: null } })).toBe(false);
  });
});
