// One path for two files (issue 20, item 1): the state file, its lock, every output the run can
// write, the journal and the token store are compared before the first request, symlinks and `..`
// resolved; two the same is a usage error naming both, and nothing is written or requested.

import { execFileSync } from 'node:child_process';
import { DateTime } from 'luxon';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';

const PERIOD = ['--since', '2026-11-01', '--until', '2026-11-03'];

describe('a path given for two things is refused before the first request', () => {
  it('-o, --state, the state lock, one window of a per-window template, the token store and the journal', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const config = join(dir, '.config');
      const env = { REPORTING_CONFIG_DIR: config, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      mkdirSync(join(dir, 'real'));
      symlinkSync(join(dir, 'real'), join(dir, 'link'));
      const cases: { args: string[]; error: RegExp; hint: RegExp }[] = [
        { args: ['-o', 'report.csv', '--state', 'report.csv'], error: /--state and -o name the same file \(report\.csv\)/, hint: /give --state and -o different paths/ },
        { args: ['--chunk', 'day', '-o', 'out/{since}.json', '--state', 'out/2026-11-02.json'], error: /--state and -o name the same file/, hint: /give --state and -o different paths/ },
        { args: ['-o', 's.json.lock', '--state', 's.json'], error: /refusing to write over the state's lock file .*s\.json\.lock: -o names it/, hint: /choose another -o path/ },
        { args: ['-o', 's.json.log', '--state', 's.json'], error: /refusing to write over the state's log .*s\.json\.log: -o names it/, hint: /choose another -o path/ },
        { args: ['-o', 'x.csv', '--state', '.config/config.json'], error: /refusing to write over the token store .*config\.json: --state names it/, hint: /choose another --state path/ },
        { args: ['-o', '.config/journal/a.csv'], error: /refusing to write over the journal/, hint: /choose another -o path/ },
        { args: ['-o', 'link/r.csv', '--state', 'real/../real/r.csv'], error: /--state and -o name the same file/, hint: /give --state and -o different paths/ },
      ];
      for (const { args, error, hint } of cases) {
        const before = sandbox.requests.length;
        const result = await runCli(['run', 'buyer', ...PERIOD, ...args], { env, cwd: dir });
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        const [first, second] = result.stderr.trim().split('\n');
        expect(first).toMatch(/^error: /);
        expect(first).toMatch(error);
        expect(second).toMatch(/^hint: /);
        expect(second).toMatch(hint);
        expect(sandbox.requests.length, args.join(' ')).toBe(before);
      }
      // nothing was written: no report, no state, no lock left behind
      expect(readdirSync(dir).sort()).toEqual(['link', 'real']);
      expect(readdirSync(join(dir, 'real'))).toEqual([]);
    });
  });

  it('a state file given its own path still works, and a per-window -o beside it is fine', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      writeFileSync(join(dir, 'keep.txt'), 'x');
      const result = await runCli(['run', 'buyer', ...PERIOD, '-q', '--chunk', 'day', '-o', 'out/{since}.json', '--state', 'out/state.json'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(join(dir, 'out')).sort()).toEqual(['2026-11-01.json', '2026-11-02.json', '2026-11-03.json', 'state.json']);
      expect(existsSync(join(dir, 'out', 'state.json.lock'))).toBe(false);
    });
  });
});

describe('special files and links (issue 20, items 6 and 7)', () => {
  it('a FIFO as --state or -o is refused at once (exit 2), nothing requested; a dangling link as --state too', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      symlinkSync(join(dir, 'nowhere', 'state.json'), join(dir, 'dangling'));
      // a link through a regular file: its own error (ENOTDIR), not "into a folder that does not exist"
      writeFileSync(join(dir, 'file.txt'), 'hi\n');
      symlinkSync(join(dir, 'file.txt', 'x'), join(dir, 'through-file'));
      for (const [args, message] of [
        [['--state', 'fifo', '-o', 'x.csv'], /^error: --state fifo is a named pipe \(FIFO\), not a regular file$/m],
        [['-o', 'fifo'], /^error: cannot write -o fifo: it is not a regular file$/m],
        [['--state', 'dangling', '-o', 'x.csv'], /^error: --state dangling is a symbolic link into a folder that does not exist$/m],
        [['--state', 'through-file', '-o', 'x.csv', '--plan'], /^error: cannot read the state file \S+file\.txt\/x: ENOTDIR/m],
      ] as const) {
        const result = await runCli(['run', 'buyer', ...PERIOD, ...args], { env, cwd: dir, timeoutMs: 15_000 });
        expect(result.signal, args.join(' ')).toBeNull();
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toMatch(message);
      }
      expect(sandbox.requests).toHaveLength(0);
      expect(readdirSync(dir).filter((name) => name.endsWith('.lock') || name.endsWith('.csv'))).toEqual([]);
    });
  });

  it('a symbolic link as --state is written through: the link stays, the file it names holds the state', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      mkdirSync(join(dir, 'states'));
      symlinkSync(join(dir, 'states', 'buyer.json'), join(dir, 'current.json'));
      const args = ['run', 'buyer', ...PERIOD, '-q', '--chunk', 'day', '-o', 'out/{since}.csv', '--state', 'current.json'];
      expect((await runCli(args, { env, cwd: dir })).code).toBe(0);
      expect(lstatSync(join(dir, 'current.json')).isSymbolicLink()).toBe(true);
      const state = JSON.parse(readFileSync(join(dir, 'states', 'buyer.json'), 'utf8')) as { windows: { status: string }[] };
      expect(state.windows.map((w) => w.status)).toEqual(['done', 'done', 'done']);
      const submits = sandbox.reports().length;
      const again = await runCli(args, { env, cwd: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(sandbox.reports()).toHaveLength(submits); // every window done: nothing submitted
      expect(lstatSync(join(dir, 'current.json')).isSymbolicLink()).toBe(true);
    });
  });
});

describe('a period that ends after today (issue 21, item 6)', () => {
  const PARIS = 'Europe/Paris';
  it('warns that the days to come have no numbers yet (not with -q); with --state it is refused before any request', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const today = DateTime.now().setZone(PARIS);
      const later = today.plus({ days: 5 }).toISODate() as string;
      const args = ['run', 'buyer', '--since', today.minus({ days: 1 }).toISODate() as string, '--until', later, '-o', 'x.csv'];
      const warned = await runCli(args, { env, cwd: dir });
      expect(warned.code, warned.stderr).toBe(0);
      expect(warned.stderr).toContain(`warning: the period ends on ${later}, after today (${today.toISODate()}): the days after today have no numbers yet`);
      const quiet = await runCli([...args, '-q'], { env, cwd: dir });
      expect(quiet.code).toBe(0);
      expect(quiet.stderr).toBe('');
      // --until today is not "after today": no warning (its numbers are refetched by the next run with --state)
      const untilToday = await runCli(['run', 'buyer', '--since', 'today', '--until', 'today', '-o', 'y.csv'], { env, cwd: dir });
      expect(untilToday.stderr).not.toContain('warning');
      const before = sandbox.requests.length;
      const stated = await runCli([...args, '--state', 's.json'], { env, cwd: dir });
      expect(stated.code).toBe(2);
      expect(stated.stderr).toMatch(new RegExp(`^error: --until ${later} is after today \\(${today.toISODate()}\\): with --state, days that have not happened would be recorded done\\nhint: `));
      expect(sandbox.requests.length).toBe(before);
      expect(existsSync(join(dir, 's.json'))).toBe(false);
    });
  });
});
