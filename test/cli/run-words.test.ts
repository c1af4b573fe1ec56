// A job's words parsed without commander's per-parse work (src/cli/run-words.ts quickParser) give
// exactly what commander's parse gives, or leave the words to commander: the same options, the
// same error. The quick parse answers for the words a job file makes (else it saves nothing).

import { describe, expect, it } from 'vitest';
import { REGISTRY, type AnyEntry } from '../../src/cli/registry.js';
import { quickParser, runCommand, runParser } from '../../src/cli/run-words.js';

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
