// A job's words parsed without commander's per-parse work (src/cli/run-words.ts quickParser) give
// exactly what commander's parse gives, or leave the words to commander: the same options, the
// same error. The quick parse answers for the words a job file makes (else it saves nothing).

import { Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { REGISTRY, type AnyEntry } from '../../src/cli/registry.js';
import { jobKeys, quickParser, runCommand, runParser } from '../../src/cli/run-words.js';
import { runFlags } from '../../src/cli/options.js';
import { readJobFile } from '../../src/fleet/file.js';
import { jobFileSchema } from '../../src/fleet/schema.js';

const entry = REGISTRY.find((e) => e.name === 'run') as AnyEntry;
const quick = runParser(entry);
const commander = runParser(entry, { quick: false });
const outcome = (parse: () => unknown) => {
  try {
    return { options: parse() };
  } catch (error) {
    return { error: `${(error as Error).constructor.name}: ${(error as Error).message}`, hint: (error as { hint?: string }).hint };
  }
};

const CASES: string[][] = [
  ['buyer'],
  ['seller'],
  ['Buyer', '--since=2026-11-01', '--until=2026-11-05'],
  ['buyer', '--since=2026-11-01', '--until=2026-11-05', '--chunk=day', '--state=/tmp/s/job-1.json', '--output=/tmp/out/job-1/{since}.csv', '--breakdowns=DAILY', '--breakdowns=CAMPAIGN', '--metrics=clicks,displays'],
  ['seller', '--since=auto', '--until=yesterday', '--lookback=3d', '--chunk=week', '--concurrency=3', '--no-split', '--state=s.json', '--log-format=JSON'],
  ['buyer', '--since=-7d', '--until=yesterday', '--load=duckdb:/tmp/w.duckdb', '--table=t_{side}', '--scope=acme', '--on-schema-change=add-columns'],
  ['buyer', '--since=-7d', '--load=postgres://u@localhost/db', '--columns=all', '--delimiter=;', '--bom', '--excel', '--no-validate', '--no-resume', '--full-refresh'],
  ['buyer', '--carrier=Orange', '--carrier=SFR, Bouygues', '--param=a=b', '--param=c=d', '--max-wait=2m', '--poll-interval=20ms'],
  ['buyer', '--since=2026-11-01', '--until=2026-11-05', '--output=a.csv', '--output=b.csv'],
  ['buyer', '--chunk=fortnight'],
  ['buyer', '--concurrency=3'],
  ['buyer', '--no-split'],
  ['buyer', '--log-format=yaml'],
  ['buyer', '--lookback=3'],
  ['buyer', '--metrics='],
  ['buyer', '--nonsense=1'],
  ['buyer', '--bom=true'],
  ['buyer', '--since'],
  ['buyer', 'extra'],
  ['sellers', '--since=2026-11-01'],
  ['buyer', '--max-wait=forever'],
];

describe("run's words: the quick parse and commander's", () => {
  it.each(CASES.map((words) => [words.join(' '), words]))('%s: the same options, or the same error', (_, words) => {
    expect(outcome(() => quick.parse(words as string[]))).toEqual(outcome(() => commander.parse(words as string[])));
  });

  it('answers for the words of a job file, and leaves a mistake to commander', () => {
    const parse = quickParser(runCommand(entry), entry);
    expect(parse(CASES[3] as string[])).toBeDefined();
    expect(parse(CASES[4] as string[])).toBeDefined();
    expect(parse(CASES[6] as string[])).toBeDefined();
    expect(parse(['buyer', '--log-format=yaml'])).toBeUndefined();
    expect(parse(['buyer', '--metrics='])).toBeUndefined();
    expect(parse(['buyer', '--nonsense=1'])).toBeUndefined();
  });
});

describe("run's flags: one table", () => {
  it("is run's options, in help's order, and a job file's keys: every one but --plan and --metrics-file", () => {
    const longs = (options: readonly { long?: string }[]) => options.map((option) => option.long).filter((long) => long !== '--help');
    expect(longs(runCommand(entry).options)).toEqual(longs(runFlags().map((flag) => flag.option)));
    const keys = jobKeys();
    expect(keys.map((key) => `--${key.name}`)).toEqual(longs(runCommand(entry).options).filter((long) => long !== '--plan' && long !== '--metrics-file'));
    expect(quick.flags).toEqual(keys);
  });

  it('says which keys take a YAML list and which are read from the file\'s folder', () => {
    const keys = new Map(jobKeys().map((key) => [key.name, key]));
    for (const name of ['metrics', 'breakdowns', 'param', 'columns', 'output', 'app-id', 'carrier']) expect(keys.get(name)?.many, name).toBe(true);
    for (const name of ['since', 'table', 'scope', 'state', 'load', 'format', 'chunk']) expect(keys.get(name)?.many, name).toBe(false);
    expect([...keys.values()].filter((key) => key.place).map((key) => [key.name, key.place])).toEqual([['output', 'path'], ['state', 'state'], ['load', 'load']]);
    expect(keys.get('split')).toBeUndefined();
    expect(keys.get('no-split')).toMatchObject({ value: false, negate: true });
  });

  it('a row added to the table is a job file\'s key, read as its words, and a property of the schema', () => {
    const keys = jobKeys([...runFlags(), { group: 'Test:', option: new Option('--extra <list>', 'a test row'), key: { many: true } }]);
    expect(keys.at(-1)).toEqual({ name: 'extra', value: true, negate: false, many: true });
    const file = readJobFile('version: 1\njobs:\n  - name: a\n    side: buyer\n    extra: [x, y]\n', 'reporting.yaml', '/tmp', {}, keys);
    expect(file.jobs[0]?.words).toEqual(['buyer', '--extra=x', '--extra=y']);
    const schema = jobFileSchema(keys) as { properties: { defaults: { properties: Record<string, { description: string }> } } };
    expect(schema.properties.defaults.properties.extra?.description).toBe('--extra: a list, or the comma form');
    expect(() => readJobFile('version: 1\njobs:\n  - name: a\n    side: buyer\n    extra: [x, y]\n', 'reporting.yaml', '/tmp', {}, jobKeys())).toThrow(/unknown option "extra"/);
  });
});
