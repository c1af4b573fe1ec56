// `jobs list|validate` and the job file's checks, in-process: every mistake is named by
// file:line:column with exit 2, found before any request; shards cover every job once.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { shardOf } from '../../src/fleet/select.js';
import { readJobFile } from '../../src/fleet/file.js';
import { REGISTRY, type AnyEntry } from '../../src/cli/registry.js';
import { runParser } from '../../src/cli/run-words.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { tempDir } from '../helpers/tmp.js';

const FILE = `version: 1
concurrency: 4
per-profile: 2
defaults:
  since: 2026-11-01
  until: 2026-11-05
  chunk: day
  state: state/{job}.json
  output: out/{job}/{since}.csv
jobs:
  - name: buyer-daily
    side: buyer
    profiles: [acme, globex]
    breakdowns: [DAILY, CAMPAIGN]
  - name: seller-apps
    side: seller
    profile: acme
    breakdowns: DAILY,APP
    app-id: [9001, 9002]
`;

/** A folder holding `reporting.yaml` (and a token store with profiles acme and globex). */
async function folder(text: string, profiles: string[] = ['acme', 'globex']): Promise<string> {
  const dir = tempDir();
  writeFileSync(join(dir, 'reporting.yaml'), text);
  for (const profile of profiles) {
    // a stored token, offline (--no-verify): the base URL is never contacted
    const { ctx } = fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config') }, stdin: 'x'.repeat(40) });
    expect(await runCli(argv('login', '--profile', profile, '--token-stdin', '--no-verify', '--base-url', 'http://127.0.0.1:9'), ctx)).toBe(0);
  }
  return dir;
}

async function jobs(dir: string, args: string[], env: Record<string, string> = {}) {
  const { ctx, stdout, stderr } = fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config'), ...env } });
  const code = await runCli(argv('jobs', ...args), ctx);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** FILE with `line` (1-based) replaced by `text`. */
const edit = (line: number, text: string, base = FILE) => base.split('\n').map((l, i) => (i === line - 1 ? text : l)).join('\n');

describe('jobs list and validate', () => {
  it('lists the expanded names: NAME@PROFILE for profiles, NAME for profile; --json an array', async () => {
    const dir = await folder(FILE);
    const text = await jobs(dir, ['list']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe('buyer-daily@acme\nbuyer-daily@globex\nseller-apps\n');
    expect(JSON.parse((await jobs(dir, ['list', '--json'])).stdout)).toEqual(['buyer-daily@acme', 'buyer-daily@globex', 'seller-apps']);
    expect((await jobs(dir, ['list', '*@acme'])).stdout).toBe('buyer-daily@acme\n');
    expect((await jobs(dir, ['list', 'buyer-*', '--exclude', '*@globex'])).stdout).toBe('buyer-daily@acme\n');
    const typo = await jobs(dir, ['list', 'buyer-dialy@acme']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/NAME "buyer-dialy@acme" names no job of the file; did you mean buyer-daily@acme\?/);
  });

  it('validate: each job is its run command line, paths relative to the file, {job} filled in', async () => {
    const dir = await folder(FILE);
    const result = await jobs(dir, ['validate', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const seller = JSON.parse(result.stdout).jobs.find((job: { job: string }) => job.job === 'seller-apps');
    expect(seller.command).toBe(`reporting run seller --since=2026-11-01 --until=2026-11-05 --chunk=day --state=${join(dir, 'state/seller-apps.json')} --output=${join(dir, 'out/seller-apps/{since}.csv')} --breakdowns=DAILY,APP --app-id=9001 --app-id=9002 --profile acme`.replace(/\{since\}/, "'{since}'").replace(/--output=(\S+)'\{since\}'\.csv/, "'--output=$1{since}.csv'"));
    expect(result.stderr).toBe('reporting.yaml: 3 jobs, valid\n');
  });

  it('-f names the file; relative paths are relative to its folder, not the current one', async () => {
    const dir = await folder(FILE);
    const { ctx, stdout, stderr } = fakeContext({ cwd: '/', env: { REPORTING_CONFIG_DIR: join(dir, '.config') } });
    expect(await runCli(argv('jobs', 'validate', '--json', '-f', join(dir, 'reporting.yaml')), ctx), stderr.text).toBe(0);
    expect(stdout.text).toContain(`--state=${join(dir, 'state')}`);
  });
});

describe('${VAR}', () => {
  it('reads the environment; the value is masked wherever the job\'s words are shown', async () => {
    const secret = 'k3y-fr0m-th3-3nv1r0nm3nt';
    const dir = await folder(edit(19, '    param: apikey=${API_KEY}'));
    const result = await jobs(dir, ['validate', '--json'], { API_KEY: secret });
    expect(result.code, result.stderr).toBe(0);
    const seller = JSON.parse(result.stdout).jobs.find((job: { job: string }) => job.job === 'seller-apps');
    expect(seller.command).toContain('--param=apikey=');
    expect(result.stdout + result.stderr).not.toContain(secret);
  });
});

describe('the job file\'s mistakes: file:line:column, exit 2, before any request', () => {
  const cases: [string, string, RegExp][] = [
    ['an unknown key, with did-you-mean', edit(18, '    breakdown: DAILY,APP'), /^error: reporting\.yaml:18:5: unknown option "breakdown"; did you mean breakdowns\?$/m],
    ['a wrong value, as run says it', edit(7, '  chunk: fortnight'), /^error: reporting\.yaml:7:10: job "buyer-daily@acme": /m],
    ['a value out of range, at the value', edit(19, '    concurrency: 99'), /^error: reporting\.yaml:19:18: job "seller-apps": --concurrency wants a whole number from 1 to 16, not "99"$/m],
    ['a format with did-you-mean', edit(19, '    format: xslx'), /^error: reporting\.yaml:19:13: job "seller-apps": unknown format "xslx".*did you mean xlsx\?$/m],
    ['an unknown time', edit(6, '  until: 2026-11-0x'), /^error: reporting\.yaml:6:10: job "buyer-daily@acme": --until "2026-11-0x"/m],
    ['a missing ${VAR}', edit(8, '  state: ${STATE_DIR}/{job}.json'), /^error: reporting\.yaml:8:10: \$\{STATE_DIR\} is not set in the environment$/m],
    ['two jobs of one name', `${FILE}  - name: seller-apps\n    side: seller\n    profile: globex\n`, /^error: reporting\.yaml:20:5: jobs "seller-apps" \(line 15\) and "seller-apps" have the same name$/m],
    ['two jobs, one state file', edit(8, '  state: state/{profile}.json'), /^error: reporting\.yaml:8:10: jobs "buyer-daily@acme" \(line 11\) and "seller-apps" write the same state file .*state\/acme\.json$/m],
    ['a profile that does not exist', edit(13, '    profiles: [acme, initech]'), /^error: reporting\.yaml:13:22: job "buyer-daily@initech": profile "initech" does not exist$/m],
    ['a top-level key', `${FILE}concurency: 3\n`, /^error: reporting\.yaml:20:1: unknown key "concurency"; did you mean concurrency\?$/m],
    ['not YAML', edit(14, '    breakdowns: [DAILY, CAMPAIGN'), /^error: reporting\.yaml:\d+:\d+: not valid YAML/m],
    ['an unknown side', edit(12, '    side: buyre'), /^error: reporting\.yaml:12:11: job "buyer-daily@acme": unknown side "buyre"; did you mean buyer\?$/m],
    // (a list was taken, its last item winning: the table of run's flags says --table takes one value)
    // (at the key the error is about, not at the first key its text names: --since, in defaults)
    ['a check between flags, at the flag it is about', edit(19, '    start: 2026-10-01'), /^error: reporting\.yaml:19:12: job "seller-apps": --start only applies with --since auto/m],
    ['a list where run takes one value', edit(19, '    table: [a, b]'), /^error: reporting\.yaml:19:12: table takes one value, not a list$/m],
  ];
  it.each(cases)('%s', async (_title, text, expected) => {
    const dir = await folder(text);
    const result = await jobs(dir, ['validate']);
    expect(result.stderr).toMatch(expected);
    expect(result.code).toBe(2);
    // run refuses the same file the same way (no request: a request would be exit 5, port 9)
    expect((await jobs(dir, ['run'])).code).toBe(2);
  });

  it('REPORTING_TOKEN with jobs of several profiles is refused (one account saved under each)', async () => {
    const dir = await folder(FILE);
    const result = await jobs(dir, ['run'], { REPORTING_TOKEN: 'a'.repeat(40) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: reporting\.yaml:13:22: jobs of several profiles \("acme", "globex"\) with REPORTING_TOKEN set/m);
    expect(result.stderr).not.toContain('a'.repeat(40));
    // validate checks every job of the file: refused too
    expect((await jobs(dir, ['validate', '--json'], { REPORTING_TOKEN: 'a'.repeat(40) })).code).toBe(2);
  });

  it('--profile does not apply to jobs run (each job names its own): refused, not ignored', async () => {
    const dir = await folder(FILE);
    const result = await jobs(dir, ['run', '--profile', 'acme']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: --profile acme \(or REPORTING_PROFILE\) does not apply to jobs.*\nhint: .*reporting jobs run '\*@acme'/);
  });

  it('no job file: says so, and how to name one', async () => {
    const dir = tempDir();
    const result = await jobs(dir, ['list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: no job file reporting\.yaml in \S+\nhint: .*-f FILE or REPORTING_JOBS/);
    expect(result.stderr).toContain(` in ${dir}\n`);
  });
});

describe('--shard K/N', () => {
  const many = (count: number) => `version: 1\njobs:\n${Array.from({ length: count }, (_, i) => `  - name: job-${i}\n    side: buyer\n    since: 2026-11-01\n    until: 2026-11-01\n    output: out/{job}.csv\n`).join('')}`;
  const names = async (dir: string, args: string[], env: Record<string, string> = {}) => {
    const result = await jobs(dir, ['list', '--json', ...args], env);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as string[];
  };

  it('for N = 1..5 the shards hold every job exactly once; adding a job moves no other', async () => {
    const dir = await folder(many(20), []);
    const all = await names(dir, []);
    expect(all).toHaveLength(20);
    const bigger = await folder(many(21), []);
    for (let n = 1; n <= 5; n++) {
      const shards = await Promise.all(Array.from({ length: n }, (_, k) => names(dir, ['--shard', `${k + 1}/${n}`])));
      expect(shards.flat().sort()).toEqual([...all].sort());
      for (const [k, shard] of shards.entries()) {
        expect(shard.every((name) => shardOf(name, n) === k + 1)).toBe(true);
        const after = await names(bigger, ['--shard', `${k + 1}/${n}`]);
        expect(after.filter((name) => name !== 'job-20')).toEqual(shard);
      }
    }
  });

  it('JOB_COMPLETION_INDEX (0-based) + REPORTING_SHARDS is --shard INDEX+1/N; bad values are exit 2', async () => {
    const dir = await folder(many(10), []);
    for (let index = 0; index < 3; index++) {
      expect(await names(dir, [], { JOB_COMPLETION_INDEX: String(index), REPORTING_SHARDS: '3' })).toEqual(await names(dir, ['--shard', `${index + 1}/3`]));
    }
    // JOB_COMPLETION_INDEX alone (any Indexed Job) shards nothing
    expect(await names(dir, [], { JOB_COMPLETION_INDEX: '1' })).toHaveLength(10);
    expect((await jobs(dir, ['list', '--shard', '4/3'])).stderr).toMatch(/--shard wants K\/N with 1 <= K <= N/);
    expect((await jobs(dir, ['list'], { JOB_COMPLETION_INDEX: '3', REPORTING_SHARDS: '3' })).code).toBe(2);
  });
});

describe('load: jobs into one table', () => {
  const LOADS = (jobs: string, load = 'duckdb:db/warehouse.duckdb') => `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-05
  state: state/{job}.json
  load: ${load}
  table: buyer_daily
  breakdowns: DAILY
jobs:
${jobs}`;

  it('two jobs, one table, one scope: refused, both named at file:line:column, before any request (exit 2)', async () => {
    const dir = await folder(LOADS(`  - name: first
    side: buyer
    profile: acme
  - name: second
    side: buyer
    profile: acme
    metrics: clicks
`));
    for (const action of ['validate', 'run', 'plan']) {
      const result = await jobs(dir, [action]);
      expect(result.stderr).toMatch(/^error: reporting\.yaml:13:5: jobs "first" \(reporting\.yaml:10:5\) and "second" load into the same table buyer_daily \(duckdb:.*warehouse\.duckdb\) with the same scope: each would replace the other's rows$/m);
      expect(result.stderr).toMatch(/^hint: give each its own table, or its own scope/m);
      // a request would fail with exit 5 (port 9)
      expect(result.code).toBe(2);
    }
  });

  it('one scope for two profiles (scope: NAME) is refused at the second profile; main.TABLE is TABLE', async () => {
    const dir = await folder(LOADS(`  - name: buyer
    side: buyer
    profiles: [acme, globex]
    scope: acme-fr
  - name: other
    side: buyer
    profile: acme
    table: main.buyer_other
`));
    const result = await jobs(dir, ['validate']);
    expect(result.stderr).toMatch(/^error: reporting\.yaml:12:22: jobs "buyer@acme" \(reporting\.yaml:12:16\) and "buyer@globex" load into the same table buyer_daily /m);
    expect(result.code).toBe(2);
    const clash = await folder(LOADS(`  - name: one
    side: buyer
    profile: acme
    table: main.buyer_daily
  - name: two
    side: buyer
    profile: acme
`));
    expect((await jobs(clash, ['validate'])).stderr).toMatch(/^error: reporting\.yaml:14:5: jobs "one" \(reporting\.yaml:10:5\) and "two" load into the same table buyer_daily/m);
  });

  it('one table, different scopes (profiles, filters, --scope, another database): allowed', async () => {
    const dir = await folder(LOADS(`  - name: buyer
    side: buyer
    profiles: [acme, globex]
  - name: campaign-7
    side: buyer
    profile: acme
    campaign-id: 7
  - name: named
    side: buyer
    profile: acme
    scope: acme-fr
  - name: elsewhere
    side: buyer
    profile: acme
    load: duckdb:other.duckdb
`));
    const result = await jobs(dir, ['validate']);
    expect(result.stderr).toBe('reporting.yaml: 5 jobs, valid\n');
    expect(result.code).toBe(0);
  });

  it('duckdb:PATH is relative to the file\'s folder; a postgres URL is left alone, its ${VAR} password masked', async () => {
    const dir = await folder(LOADS(`  - name: local
    side: buyer
    profile: acme
  - name: absolute
    side: buyer
    profile: acme
    load: duckdb:/tmp/elsewhere.duckdb
  - name: server
    side: buyer
    profile: acme
    load: postgres://loader:\${PG_SECRET}@127.0.0.1:9/warehouse
`));
    const secret = 'pg-s3cr3t-from-env';
    const { ctx, stdout, stderr } = fakeContext({ cwd: '/', env: { REPORTING_CONFIG_DIR: join(dir, '.config'), PG_SECRET: secret } });
    expect(await runCli(argv('jobs', 'validate', '--json', '-f', join(dir, 'reporting.yaml')), ctx), stderr.text).toBe(0);
    const commands = Object.fromEntries(JSON.parse(stdout.text).jobs.map((job: { job: string; command: string }) => [job.job, job.command]));
    expect(commands.local).toContain(`--load=duckdb:${join(dir, 'db', 'warehouse.duckdb')}`);
    expect(commands.absolute).toContain('--load=duckdb:/tmp/elsewhere.duckdb');
    expect(commands.server).toContain('--load=postgres://loader:');
    expect(commands.server).toContain('@127.0.0.1:9/warehouse');
    expect(stdout.text + stderr.text).not.toContain(secret);
  });
});

describe('YAML aliases (issue 30, item 11)', () => {
  it('a value, a list item and a job given by an alias are read as what their anchor names', async () => {
    const dir = await folder(`version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-05
  breakdowns: &daily [DAILY, COUNTRY]
jobs:
  - &base
    name: one
    side: buyer
    profile: acme
    metrics: [displays, &clicks clicks]
  - name: two
    side: buyer
    profile: acme
    breakdowns: *daily
    metrics: [*clicks]
    output: two.csv
`);
    const result = await jobs(dir, ['validate', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const commands = Object.fromEntries((JSON.parse(result.stdout) as { jobs: { job: string; command: string }[] }).jobs.map((j) => [j.job, j.command]));
    expect(commands.two).toContain('--breakdowns=DAILY --breakdowns=COUNTRY');
    expect(commands.two).toContain('--metrics=clicks');
    expect(commands.one).toContain('--metrics=displays --metrics=clicks');
  });
});

describe('a job drops a default by naming its key with no value (a newcomer could not)', () => {
  const flags = runParser(REGISTRY.find((e) => e.name === 'run') as AnyEntry).flags;
  const read = (job: string) => readJobFile(`version: 1\ndefaults:\n  output: out/{job}.csv\n  max-wait: 5m\njobs:\n  - name: j\n    side: buyer\n${job}`, 'reporting.yaml', '/tmp/j', {}, flags).jobs[0]?.words ?? [];
  it('output: (or null) drops the defaults\' output, and that key only; a key no default has, with no value, is refused as before', () => {
    expect(read('')).toContain('--output=/tmp/j/out/j.csv');
    for (const empty of ['    output:\n', '    output: null\n', '    output: ~\n']) {
      const words = read(`${empty}    load: duckdb:w.duckdb\n`);
      expect(words.filter((word) => word.startsWith('--output'))).toEqual([]);
      expect(words).toContain('--max-wait=5m');
      expect(words).toContain('--load=duckdb:/tmp/j/w.duckdb');
    }
    expect(() => read('    carrier:\n')).toThrow(/carrier wants a value/);
  });

  it('a profile with no value is refused, never the default profile (another account\'s token)', () => {
    const text = 'version: 1\ndefaults:\n  profile: acme\njobs:\n  - name: j\n    side: buyer\n    profile:\n';
    expect(() => readJobFile(text, 'reporting.yaml', '/tmp/j', {}, flags)).toThrow(/profile/);
  });
});

describe('the job file read as YAML 1.2 (the `yaml` package\'s reading, from a review)', () => {
  const flags = runParser(REGISTRY.find((e) => e.name === 'run') as AnyEntry).flags;
  const wordsOf = (body: string) => readJobFile(`version: 1\njobs:\n  - name: j\n    side: buyer\n${body}`, 'reporting.yaml', '/tmp', {}, flags).jobs[0]?.words;
  it.each([
    ['carrier: 0b101', '--carrier=0b101'],
    ['carrier: -0x10', '--carrier=-0x10'],
    ['carrier: 0x10', '--carrier=16'],
    ['carrier: 0o17', '--carrier=15'],
    ['carrier: 1e3', '--carrier=1000'],
    ['carrier: "0x10"', '--carrier=0x10'],
    ['carrier: !foo SFR', '--carrier=SFR'],
    ['carrier: yes', '--carrier=yes'],
  ])('%s is %s, as `yaml` reads it', (body, word) => {
    expect(wordsOf(`    ${body}\n`)).toContain(word);
  });

  it('a %YAML 1.1 file is read by its version\'s rules (yes is true)', () => {
    const file = readJobFile('%YAML 1.1\n---\nversion: 1\njobs:\n  - name: j\n    side: buyer\n    bom: yes\n', 'reporting.yaml', '/tmp', {}, flags);
    expect(file.jobs[0]?.words).toContain('--bom');
  });
});

describe('words every job shares, found once (a value, a list, a number, {job} and ${VAR})', () => {
  const flags = runParser(REGISTRY.find((e) => e.name === 'run') as AnyEntry).flags;
  const head = 'version: 1\ndefaults:\n  state: state/{job}.json\n  load: duckdb:db/w.duckdb\njobs:\n';
  const items = [
    '  - name: a\n    side: buyer\n    breakdowns: DAILY\n    app-id: [9001, "9002"]\n    output: out/a.csv\n',
    '  - name: b\n    side: buyer\n    breakdowns: [DAILY]\n    app-id: ["9001", 9002]\n    output: ["out/{job}.csv", out/b2.csv]\n',
    '  - name: c\n    side: buyer\n    breakdowns: "[DAILY]"\n    carrier: ${CARRIER}\n    output: [out/c.csv, "out/{profile}.csv"]\n    load: duckdb:db/w.duckdb\n',
    '  - name: d\n    side: buyer\n    carrier: ${CARRIER}\n    app-id: 9001\n',
  ];
  const read = (text: string) => readJobFile(text, 'reporting.yaml', '/tmp/j', { CARRIER: 'SFR' }, flags);

  it('each job has the words it has alone in a file, whatever the jobs before it had', () => {
    const file = read(head + items.join(''));
    expect(file.jobs.map((job) => job.name)).toEqual(['a', 'b', 'c', 'd']);
    for (const [index, item] of items.entries()) {
      const alone = read(head + item).jobs[0];
      const job = file.jobs[index];
      expect([job?.words, job?.state, job?.output, job?.more]).toEqual([alone?.words, alone?.state, alone?.output, alone?.more]);
    }
    expect(file.jobs[1]?.words).toEqual(['buyer', '--state=/tmp/j/state/b.json', expect.stringMatching(/^--load=duckdb:/), '--breakdowns=DAILY', '--app-id=9001', '--app-id=9002', '--output=/tmp/j/out/b.csv', '--output=/tmp/j/out/b2.csv']);
    expect([file.jobs[2]?.output, file.jobs[2]?.more]).toEqual(['/tmp/j/out/c.csv', ['/tmp/j/out/default.csv']]);
    expect(file.jobs[2]?.words).toContain('--breakdowns=[DAILY]');
    expect(file.jobs[3]?.words).toContain('--carrier=SFR');
    expect(file.secrets).toEqual(['SFR']);
  });
});

describe('output: a list (several outputs of one report, issue 33 item 3)', () => {
  it('each file is an --output word of the job; two jobs may not share one of them', async () => {
    const dir = await folder(edit(9, '  output: ["out/{job}/{since}.csv", "out/{job}/{since}.parquet"]'));
    const result = await jobs(dir, ['validate', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const seller = JSON.parse(result.stdout).jobs.find((job: { job: string }) => job.job === 'seller-apps');
    expect(seller.command).toContain(`'--output=${join(dir, 'out/seller-apps/{since}.csv')}' '--output=${join(dir, 'out/seller-apps/{since}.parquet')}'`);
    const shared = await jobs(await folder(edit(18, '    output: ["out/{job}/{since}.csv", "out/shared/{since}.parquet"]', edit(9, '  output: ["out/{job}/{since}.csv", "out/shared/{since}.parquet"]'))), ['validate']);
    expect(shared.code).toBe(2);
    expect(shared.stderr).toMatch(/write the same output .*out\/shared\/\{since\}\.parquet/);
  });

  it('a job\'s own two outputs that are one file: refused as run refuses them', async () => {
    const dir = await folder(edit(9, '  output: ["out/{job}/{since}.csv", "out/{job}/../{job}/{since}.csv"]'));
    const result = await jobs(dir, ['validate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/-o and the second -o name the same file/);
    // placed at the key the error is about (-o: output), not at a word of its text ("name")
    expect(result.stderr).toMatch(/^error: reporting\.yaml:9:11: job "buyer-daily@acme": -o and the second -o/m);
  });
});
