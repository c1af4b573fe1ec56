// The JSON Schema of a job file, for editors' YAML validation (the YAML language server reads a
// `# yaml-language-server: $schema=...` comment). Built from run's flags (the table of
// src/cli/options.ts, as a job file's keys), so that it never lists a key `run` does not take;
// docs/jobs.schema.json is this, written by `npm run schema:jobs` and compared with it by
// test/fleet/schema.test.ts.

import { MAX_BUDGET, type RunFlagInfo } from './file.js';

export function jobFileSchema(flags: readonly RunFlagInfo[]): Record<string, unknown> {
  const scalar = { type: ['string', 'number'] };
  const options: Record<string, unknown> = {};
  for (const flag of flags) {
    if (!flag.value) {
      options[flag.name] = { type: 'boolean', description: `--${flag.name}` };
      if (flag.negate) options[flag.name.slice(3)] = { type: 'boolean', description: `false is --${flag.name}` };
    } else {
      options[flag.name] = flag.many
        ? { description: flag.about ?? `--${flag.name}: a list, or the comma form`, oneOf: [scalar, { type: 'array', items: scalar, minItems: 1 }] }
        : { description: flag.about ?? `--${flag.name}`, ...scalar };
    }
  }
  // a job's option may be null: it drops the defaults' (docs/jobs.md)
  const orNull = (schema: Record<string, unknown>): Record<string, unknown> =>
    Array.isArray(schema.oneOf) ? { ...schema, oneOf: [...schema.oneOf, { type: 'null' }] }
      : { ...schema, type: [...(Array.isArray(schema.type) ? schema.type : [schema.type]), 'null'] };
  const jobOptions = Object.fromEntries(Object.entries(options).map(([name, schema]) => [name, orNull(schema as Record<string, unknown>)]));
  const own = {
    side: { enum: ['buyer', 'seller'], description: 'run\'s side' },
    profile: { type: 'string', description: 'the profile (account) of the job; it keeps its name' },
    profiles: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'one job per profile, named NAME@PROFILE' },
  };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://github.com/reporting/reporting/docs/jobs.schema.json',
    title: 'reporting job file (reporting.yaml)',
    description: 'Jobs for `reporting jobs run|plan|list|validate`: each job is a `run` command line, its keys run\'s long flag names. See docs/jobs.md.',
    type: 'object',
    required: ['version', 'jobs'],
    additionalProperties: false,
    properties: {
      version: { const: 1 },
      concurrency: { type: 'integer', minimum: 1, maximum: MAX_BUDGET, description: 'reports running at once across all jobs (default 8)' },
      'per-profile': { type: 'integer', minimum: 1, maximum: MAX_BUDGET, description: 'reports running at once for one profile (default: concurrency)' },
      defaults: { type: 'object', additionalProperties: false, properties: { ...own, ...options }, description: 'run options applied to every job (a job\'s own win)' },
      jobs: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }, ...own, ...jobOptions },
        },
      },
    },
  };
}
