// One state and its outputs reached by two spellings: a job file read through a symbolic link to
// its folder names its outputs through that link, and `run` given `-o` and `--state` through a
// link or `..` names them so too. The state records the outputs as they were spelled when it was
// written; a later run by another spelling of the same files goes on from it (nothing fetched
// again), where it was refused as "written for another request". Another file is still refused.
// Real symlinks, the built CLI, the sandbox; each way run several times.

import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';

const FILE = ['version: 1', 'concurrency: 2', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-03', '  chunk: day',
  '  state: state/{job}.json', '  output: out/{job}/{since}.csv', 'jobs:',
  '  - name: buyer', '    side: buyer', '    breakdowns: DAILY', '  - name: seller', '    side: seller', '    breakdowns: DAILY', ''].join('\n');

describe('a state and its outputs reached by another spelling', () => {
  it('jobs run -f through a link to the file\'s folder, and back: the next run skips what is done', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      mkdirSync(join(dir, 'w'));
      writeFileSync(join(dir, 'w', 'reporting.yaml'), FILE);
      symlinkSync(join(dir, 'w'), join(dir, 'wlink'));
      for (const [first, then] of [['w', 'wlink'], ['wlink', 'w'], ['w', 'wlink']] as const) {
        rmSync(join(dir, 'w', 'state'), { recursive: true, force: true });
        rmSync(join(dir, 'w', 'out'), { recursive: true, force: true });
        const before = sandbox.stats().submitted;
        const one = await runCli(['jobs', 'run', '-q', '--json', '-f', join(dir, first, 'reporting.yaml')], { env, cwd: dir });
        expect(one.code, one.stderr).toBe(0);
        expect(sandbox.stats().submitted - before).toBe(6);
        const again = await runCli(['jobs', 'run', '-q', '--json', '-f', join(dir, then, 'reporting.yaml')], { env, cwd: dir });
        expect(again.code, again.stderr).toBe(0);
        const outcome = JSON.parse(again.stdout) as { jobs: { fetched: number; skipped: number }[] };
        expect(outcome.jobs.map((job) => [job.fetched, job.skipped])).toEqual([[0, 3], [0, 3]]);
        expect(sandbox.stats().submitted - before, 'nothing submitted again').toBe(6);
        for (const job of ['buyer', 'seller']) {
          for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) {
            const rows = parse(readFileSync(join(dir, 'w', 'out', job, `${day}.csv`)), { columns: true }) as Record<string, string>[];
            expect(rows.length).toBeGreaterThan(0);
          }
        }
      }
    });
  }, 120_000);

  it('run --state and -o through `..` and a link are the same request; another output is still refused', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      mkdirSync(join(dir, 'data', 'sub'), { recursive: true });
      symlinkSync(join(dir, 'data'), join(dir, 'link'));
      const run = (state: string, output: string) => runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--chunk', 'day', '--state', state, '-o', output, '-q'], { env, cwd: dir });
      const first = await run('data/s.json', 'data/{since}.csv');
      expect(first.code, first.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(2);
      for (const [state, output] of [['link/s.json', 'link/{since}.csv'], ['data/sub/../s.json', 'data/sub/../{since}.csv'], ['data/s.json', 'link/{since}.csv']]) {
        const again = await run(state as string, output as string);
        expect(again.code, again.stderr).toBe(0);
        expect(sandbox.stats().submitted, `${state} ${output}: nothing fetched again`).toBe(2);
      }
      const other = await run('data/s.json', 'data/other-{since}.csv');
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/was written for another request: the output is .*other-\{since\}\.csv here/);
      expect(existsSync(join(dir, 'data', 'other-2026-11-01.csv'))).toBe(false);
    });
  }, 120_000);

  it('run --load duckdb: through a link and `..` loads into the same table: nothing fetched again; another database is refused', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      mkdirSync(join(dir, 'db', 'sub'), { recursive: true });
      symlinkSync(join(dir, 'db'), join(dir, 'dblink'));
      const run = (database: string, table = 'buyer_report') => runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--chunk', 'day', '--state', 's.json', '--load', `duckdb:${database}`, '--table', table, '-q'], { env, cwd: dir });
      const first = await run('db/r.duckdb');
      expect(first.code, first.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(2);
      const count = () => duckdbRows(join(dir, 'db', 'r.duckdb'), 'select count(*) from buyer_report');
      const loaded = await count();
      for (const [database, table] of [['dblink/r.duckdb', 'buyer_report'], ['db/sub/../r.duckdb', 'main.BUYER_REPORT'], [join(dir, 'dblink', 'sub', '..', 'r.duckdb'), 'buyer_report']] as const) {
        for (let round = 0; round < 2; round++) {
          const again = await run(database, table);
          expect(again.code, again.stderr).toBe(0);
          expect(sandbox.stats().submitted, `${database} ${table}: nothing fetched again`).toBe(2);
        }
      }
      expect(await count(), 'no row loaded twice').toEqual(loaded);
      const other = await run('db/other.duckdb');
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/was written for another request: --load is buyer_report in duckdb:.*other\.duckdb here/);
      expect(existsSync(join(dir, 'db', 'other.duckdb'))).toBe(false);
    });
  }, 120_000);
});
