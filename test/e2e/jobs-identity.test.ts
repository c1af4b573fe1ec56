// Issue 30, items 2 and 3: one identity per target, and the whole job file checked whatever is
// selected. Two jobs whose targets are one target however spelled (a symbolic link, `..`, a
// template whose windows expand to one path, localhost and 127.0.0.1, a table name in another
// case for DuckDB) are refused with exit 2 and both named at file:line:col, before any request:
// by `jobs validate`, and by `jobs run --shard K/N`, `jobs run NAME`, `jobs plan` and `jobs list
// --shard`, which checked only the jobs they selected. The built CLI, real symlinks, real folders.

import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/fleet/select.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

// a server that is never reached: every refusal here comes before any request
const ENV = (dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: 'http://127.0.0.1:9', REPORTING_TOKEN: 'tok-never-sent' });

function folder(file: string): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'db'));
  mkdirSync(join(dir, 'db', 'sub'));
  symlinkSync(join(dir, 'db'), join(dir, 'linked'));
  writeFileSync(join(dir, 'db', 'warehouse.duckdb'), '');
  symlinkSync(join(dir, 'db', 'warehouse.duckdb'), join(dir, 'alias.duckdb'));
  writeFileSync(join(dir, 'reporting.yaml'), file);
  return dir;
}

const jobsOf = (defaults: string, ...jobs: string[]) => `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-04
  breakdowns: DAILY
${defaults}jobs:
${jobs.map((job, i) => `  - name: job-${i + 1}\n    side: buyer\n${job}`).join('')}`;

const refused = (stderr: string) => {
  const line = stderr.split('\n').find((l) => l.startsWith('error:')) ?? stderr;
  return line;
};

describe('one identity per target', () => {
  it.each([
    ['one DuckDB file as a symlink to it and through a symlinked folder\'s sub/../', 'load into the same table t',
      jobsOf('  table: t\n', '    load: duckdb:alias.duckdb\n', '    load: duckdb:linked/sub/../warehouse.duckdb\n')],
    ['one DuckDB table named in two cases', 'load into the same table T',
      jobsOf('  load: duckdb:db/warehouse.duckdb\n', '    table: t\n', '    table: T\n')],
    ['one Postgres database as localhost and 127.0.0.1:5432', 'load into the same table t',
      jobsOf('  table: t\n', '    load: postgres://loader@localhost/db\n', '    load: postgres://loader@127.0.0.1:5432/db\n')],
    ['out/{since}.csv and out/{until}.csv with day windows', 'write the same file',
      jobsOf('  chunk: day\n', '    output: out/{since}.csv\n', '    output: out/{until}.csv\n')],
    ['one file through a symlinked folder', 'write the same file',
      jobsOf('', '    output: db/day.csv\n', '    output: linked/day.csv\n')],
    ['a state file that is another job\'s output', 'use the same state file',
      jobsOf('', '    output: db/run.json\n', '    state: linked/run.json\n    output: db/other.csv\n')],
  ])('%s: refused, exit 2, both jobs named at file:line:col, before any request', async (_name, said, file) => {
    const dir = folder(file);
    for (const args of [['jobs', 'validate'], ['jobs', 'run'], ['jobs', 'plan']]) {
      const result = await runCli(args, { env: ENV(dir), cwd: dir });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      const line = refused(result.stderr);
      expect(line).toMatch(/^error: reporting\.yaml:\d+:\d+: jobs "job-\d" \(reporting\.yaml:\d+:\d+\) and "job-\d" /);
      expect(line).toContain(said);
      expect(result.stderr).not.toContain('tok-never-sent');
    }
  });

  it('other databases, tables, files and scopes stay apart', async () => {
    const dir = folder(jobsOf('  chunk: day\n',
      '    load: duckdb:db/warehouse.duckdb\n    table: t\n    output: out/a-{since}.csv\n',
      '    load: duckdb:db/other.duckdb\n    table: t\n    output: out/b-{since}.csv\n',
      '    load: postgres://loader@localhost:5433/db\n    table: t\n',
      '    load: postgres://loader@localhost/db\n    table: t\n',
      '    load: postgres://loader@db.example.com/db\n    table: t\n',
      '    load: postgres://loader@localhost/db\n    table: t\n    scope: other\n'));
    const result = await runCli(['jobs', 'validate'], { env: ENV(dir), cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    // (from a review: the folder and the name as the file system reads them) an absolute path with
    // a trailing slash names the file without it, through a symlinked folder too
    for (const [first, second] of [['db/new.csv/', 'db/new.csv'], ['linked/new/', 'db/new']]) {
      const trailing = folder('');
      writeFileSync(join(trailing, 'reporting.yaml'), jobsOf('', `    output: '${join(trailing, first as string)}/'\n`, `    output: ${second}\n`));
      const clash = await runCli(['jobs', 'validate'], { env: ENV(trailing), cwd: trailing });
      expect(clash.code, clash.stderr).toBe(2);
      expect(refused(clash.stderr)).toContain('write the same file');
    }
    // on POSIX a `\` is a character of a file's name: out\2026-11-01.csv is not out/2026-11-01.csv
    const slashes = folder(jobsOf('  chunk: day\n', "    output: 'out\\{since}.csv'\n", '    output: out/{since}.csv\n'));
    const apart = await runCli(['jobs', 'validate'], { env: ENV(slashes), cwd: slashes });
    expect(apart.code, apart.stderr).toBe(0);
  });
});

describe('the whole file is checked whatever is selected', () => {
  // two jobs into one table with one scope, in different shards of 2
  const names = Array.from({ length: 40 }, (_, i) => `job-${i + 1}`);
  const a = names.find((name) => shardOf(name, 2) === 1) as string;
  const b = names.find((name) => shardOf(name, 2) === 2) as string;
  const file = `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-04
  breakdowns: DAILY
  load: duckdb:db/warehouse.duckdb
  table: t
jobs:
  - name: ${a}
    side: buyer
  - name: ${b}
    side: buyer
`;
  it.each([
    [['jobs', 'run', '--shard', '1/2']], [['jobs', 'run', '--shard', '2/2']], [['jobs', 'run', a]], [['jobs', 'run', b]],
    [['jobs', 'plan', '--shard', '1/2']], [['jobs', 'list', '--shard', '2/2']], [['jobs', 'list', a]],
  ])('%j: refused (exit 2, both named), though it selects one of the two', async (args) => {
    const dir = folder(file);
    const result = await runCli(args, { env: ENV(dir), cwd: dir });
    expect(result.code, result.stderr).toBe(2);
    expect(refused(result.stderr)).toContain(`jobs "${a}" (reporting.yaml:9:5) and "${b}" load into the same table t`);
  });
});
