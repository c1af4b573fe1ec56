// What a newcomer met trying the CLI on a fresh clone: each mistake of theirs gets one line that
// says what is wrong and how to fix it, with the exit code of its kind (SPEC section 4: 1 is a bug,
// never the user's input), and changes nothing on disk.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';

const errorLines = (stderr: string) => stderr.split('\n').filter((line) => /^(\S+: )?error:/.test(line));

describe('no token: one error before the state is opened', () => {
  it('run --chunk --state: exit 3, one error line with its hint, as without --state; no state file is made', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { HOME: join(dir, 'home'), REPORTING_CONFIG_DIR: join(dir, 'config') };
      const args = ['run', 'buyer', '--base-url', sandbox.baseUrl, '--since', '2026-11-01', '--until', '2026-11-05', '--chunk', 'day'];
      const plain = await runCli([...args.slice(0, -2), '-o', 'one.csv'], { env, cwd: dir });
      const result = await runCli([...args, '--state', 's.json', '-o', 'out/{since}.csv'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(3);
      expect(result.code).toBe(plain.code);
      expect(result.stderr).toBe(plain.stderr);
      expect(errorLines(result.stderr)).toEqual(['error: no token: not logged in']);
      expect(result.stderr).toMatch(/^hint: run `reporting login --profile default`, or set REPORTING_TOKEN_DEFAULT/m);
      expect(result.stderr).not.toContain('failed');
      expect(() => readFileSync(join(dir, 's.json'))).toThrow(/ENOENT/);
      expect(sandbox.requests.filter((r) => r.endpoint === 'buyer')).toHaveLength(0);
    });
  });

  it('jobs run --full-refresh after logout: the job fails with one line (exit 3), its state byte for byte as it was, its windows still done', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { HOME: join(dir, 'home'), REPORTING_CONFIG_DIR: join(dir, 'config') };
      writeFileSync(join(dir, 'reporting.yaml'), 'version: 1\njobs:\n  - name: daily\n    side: buyer\n    profile: acme\n    since: 2026-11-01\n    until: 2026-11-03\n    chunk: day\n    state: s.json\n    output: out/{since}.csv\n');
      const login = await runCli(['login', '--profile', 'acme', '--token-stdin', '--base-url', sandbox.baseUrl], { env, cwd: dir, input: `${sandbox.token}\n` });
      expect(login.code, login.stderr).toBe(0);
      const first = await runCli(['jobs', 'run'], { env, cwd: dir });
      expect(first.code, first.stderr).toBe(0);
      const before = readFileSync(join(dir, 's.json'));
      expect((await runCli(['logout', '--profile', 'acme'], { env, cwd: dir })).code).toBe(0);
      const result = await runCli(['jobs', 'run', '--full-refresh', 'daily'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr.split('\n').filter((line) => line.startsWith('daily: '))).toEqual([
        'daily: error: no token: not logged in',
        'daily: hint: run `reporting login --profile acme`, or set REPORTING_TOKEN_ACME (or REPORTING_TOKEN)',
      ]);
      expect(readFileSync(join(dir, 's.json')).equals(before)).toBe(true);
      const status = await runCli(['jobs', 'status', '--json'], { env, cwd: dir });
      const [job] = (JSON.parse(status.stdout) as { jobs: { lastDone: { until: string } | null; failed: number }[] }).jobs;
      expect(job?.lastDone?.until).toMatch(/^2026-11-03T/);
      expect(job?.failed).toBe(0);
    });
  });
});

describe('--state under a file: exit 2 as -o says it, before any request', () => {
  it('run --state day.csv/s.json (and deeper), day.csv a file; the job file\'s state: placed at its key', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'day.csv'), 'x');
      const env = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--chunk', 'day', '-o', 'out/{since}.csv'];
      const under = await runCli([...args, '--state', 'day.csv/s.json'], { env, cwd: dir });
      expect(under.code, under.stderr).toBe(2);
      expect(under.stderr).toBe(`error: cannot write --state day.csv/s.json: ${dir}/day.csv is a file, not a folder\n`);
      const deeper = await runCli([...args, '--state', 'day.csv/a/b/s.json'], { env, cwd: dir });
      expect(deeper.code, deeper.stderr).toBe(2);
      expect(deeper.stderr).toBe(`error: cannot write --state day.csv/a/b/s.json: ${dir}/day.csv is a file, not a folder\n`);
      writeFileSync(join(dir, 'reporting.yaml'), 'version: 1\njobs:\n  - name: daily\n    side: buyer\n    since: 2026-11-01\n    until: 2026-11-02\n    chunk: day\n    state: day.csv/s.json\n    output: out/{since}.csv\n');
      for (const command of ['validate', 'run']) {
        const job = await runCli(['jobs', command], { env, cwd: dir });
        expect(job.code, job.stderr).toBe(2);
        expect(job.stderr).toMatch(new RegExp(`^error: reporting\\.yaml:8:12: job "daily": cannot write --state ${dir}/day\\.csv/s\\.json: ${dir}/day\\.csv is a file, not a folder$`, 'm'));
      }
      expect(sandbox.requests).toHaveLength(0);
      expect(readFileSync(join(dir, 'day.csv'), 'utf8')).toBe('x');
    });
  });
});

describe('--metrics-file that cannot be written: its errors name --metrics-file', () => {
  it('run and jobs run: under a file, a folder (the hint a .prom file); exit 2, no request', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'day.csv'), 'x');
      mkdirSync(join(dir, 'adir'));
      writeFileSync(join(dir, 'reporting.yaml'), 'version: 1\njobs:\n  - name: daily\n    side: buyer\n    since: 2026-11-01\n    until: 2026-11-02\n    output: out.csv\n');
      const env = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      for (const command of [['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '-o', 'out.csv'], ['jobs', 'run']]) {
        const under = await runCli([...command, '--metrics-file', 'day.csv/x.prom'], { env, cwd: dir });
        expect(under.code, under.stderr).toBe(2);
        expect(under.stderr).toBe(`error: cannot write --metrics-file ${dir}/day.csv/x.prom: ${dir}/day.csv is a file, not a folder\n`);
        const folder = await runCli([...command, '--metrics-file', 'adir'], { env, cwd: dir });
        expect(folder.code, folder.stderr).toBe(2);
        expect(folder.stderr).toBe(`error: cannot write --metrics-file ${dir}/adir: it is a folder\nhint: name a file inside it, for example --metrics-file ${dir}/adir/reporting.prom\n`);
      }
      expect(sandbox.requests).toHaveLength(0);
    });
  });
});

describe('a mistyped profile', () => {
  it('"does not exist" with a did-you-mean and the stored profiles, exit 2, with or without --base-url; a profile of the environment runs; login makes a new one', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { HOME: join(dir, 'home'), REPORTING_CONFIG_DIR: join(dir, 'config') };
      for (const profile of ['acme', 'globex']) {
        const login = await runCli(['login', '--profile', profile, '--token-stdin', '--base-url', sandbox.baseUrl], { env, cwd: dir, input: `${sandbox.token}\n` });
        expect(login.code, login.stderr).toBe(0);
      }
      const report = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '-o', 'x.csv'];
      const said = (typed: string, near: string) => `error: profile "${typed}" does not exist; did you mean ${near}?\nhint: log in with \`reporting login --profile ${typed}\`, set REPORTING_TOKEN_${typed.toUpperCase().replace(/-/g, '_')}, or fix the name (profiles: acme, globex)\n`;
      for (const args of [[...report, '--profile', 'acme-typo'], [...report, '--profile', 'acme-typo', '--base-url', sandbox.baseUrl], ['campaigns', '--profile', 'acme-typo']]) {
        const result = await runCli(args, { env, cwd: dir });
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toBe(said('acme-typo', 'acme'));
      }
      const typo = await runCli([...report, '--profile', 'globx'], { env, cwd: dir });
      expect(typo.stderr).toBe(said('globx', 'globex'));
      expect(sandbox.requests).toHaveLength(2);
      // a profile the environment gives a token is no mistake
      const fromEnv = await runCli([...report, '--profile', 'acme-typo', '--base-url', sandbox.baseUrl], { env: { ...env, REPORTING_TOKEN_ACME_TYPO: sandbox.token }, cwd: dir });
      expect(fromEnv.code, fromEnv.stderr).toBe(0);
      // login names a profile that does not exist yet: no refusal; without a base URL, as before
      const fresh = await runCli(['login', '--profile', 'initech', '--token-stdin'], { env, cwd: dir, input: `${sandbox.token}\n` });
      expect(fresh.code).toBe(2);
      expect(fresh.stderr).toMatch(/^error: no base URL for profile "initech"\n/);
      const made = await runCli(['login', '--profile', 'initech', '--token-stdin', '--base-url', sandbox.baseUrl], { env, cwd: dir, input: `${sandbox.token}\n` });
      expect(made.code, made.stderr).toBe(0);
      // a job file's profile: the same words
      writeFileSync(join(dir, 'reporting.yaml'), 'version: 1\njobs:\n  - name: daily\n    side: buyer\n    profile: globx\n    since: 2026-11-01\n    until: 2026-11-01\n    output: out.csv\n');
      const job = await runCli(['jobs', 'validate'], { env, cwd: dir });
      expect(job.code).toBe(2);
      expect(job.stderr).toBe('error: reporting.yaml:5:14: job "daily": profile "globx" does not exist; did you mean globex?\nhint: log in with `reporting login --profile globx`, set REPORTING_TOKEN_GLOBX, or fix the name (profiles: acme, globex, initech)\n');
    });
  });
});

describe('a list cut by a space', () => {
  it('--breakdowns DAILY COUNTRY: separate with commas, the list as it should be typed (metrics too); other extra words keep commander\'s error', async () => {
    const since = ['--since', '2026-11-01', '--until', '2026-11-02'];
    const spaced = await runCli(['run', 'buyer', ...since, '--breakdowns', 'DAILY', 'COUNTRY']);
    expect(spaced.code).toBe(2);
    expect(spaced.stderr).toBe("error: too many arguments for 'run': COUNTRY\nhint: separate breakdowns with commas: --breakdowns DAILY,COUNTRY\n");
    const both = await runCli(['buyer', ...since, '--breakdowns', 'daily,campaign', 'country', '--metrics', 'clicks', 'displays']);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe("error: too many arguments for 'buyer': country displays\nhint: separate breakdowns with commas: --breakdowns daily,campaign,country; separate metrics with commas: --metrics clicks,displays\n");
    const other = await runCli(['run', 'buyer', 'extra', ...since]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^error: too many arguments for 'run'\. Expected 1 argument but got 2\.\n/);
  });
});

describe('a failed report is named once', () => {
  it('the window\'s line and its failure line name the report once: `report ID ended in status "failed"`', async () => {
    await withSandbox({ faults: { reportStatus: 'failed' } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const since = ['--since', '2026-11-01', '--until', '2026-11-02', '--chunk', 'day', '--poll-interval', '20ms', '--no-resume'];
      for (const output of ['day-{since}.csv', 'all.csv']) {
        const result = await runCli(['run', 'buyer', ...since, '-o', output], { env, cwd: dir });
        expect(result.code, result.stderr).toBe(6);
        const lines = result.stderr.split('\n').filter((line) => line.includes('ended in status'));
        expect(lines.length, result.stderr).toBeGreaterThanOrEqual(2);
        for (const line of lines) {
          const ids = line.match(/[0-9a-f]{24}/g) ?? [];
          expect(ids, line).toHaveLength(1);
          expect(line).toMatch(/^(2026-11-0[12]: report [0-9a-f]{24} |(failed|error): window 2026-11-0[12], report [0-9a-f]{24}: )ended in status "failed"$/);
        }
      }
    });
  });
});
