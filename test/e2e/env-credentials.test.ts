// Credentials from the environment, per profile (issue 31, item 4): REPORTING_TOKEN_<PROFILE> gives
// that profile its token with no token store at all, REPORTING_EMAIL_<PROFILE> and
// REPORTING_PASSWORD_<PROFILE> its re-login; a job file over several profiles runs from these
// alone (a pod: an empty HOME, credentials from a Secret). Nothing is written to the configuration
// folder, and no secret is shown.

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { withSandbox } from '../helpers/http.js';

const JOBS = `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-03
  chunk: day
  breakdowns: [DAILY]
  state: state/{job}.json
jobs:
  - name: daily
    side: buyer
    profiles: [acme, globex-fr]
    output: out/{job}/{since}.csv
`;

/** A pod's environment: no token store (the configuration folder does not even exist), the base URL
 * and each profile's token from the environment. */
const podEnv = (sandbox: Sandbox, dir: string, extra: Record<string, string> = {}) => ({
  REPORTING_CONFIG_DIR: join(dir, 'config'), HOME: join(dir, 'home'), REPORTING_BASE_URL: sandbox.baseUrl,
  REPORTING_TOKEN_ACME: sandbox.token, REPORTING_TOKEN_GLOBEX_FR: sandbox.token, ...extra,
});

/** Every file under `dir`'s state and out folders, and the texts to search for secrets. */
const written = (dir: string) => ['state', 'out'].flatMap((sub) => (existsSync(join(dir, sub)) ? readdirSync(join(dir, sub), { recursive: true, withFileTypes: true }) : []))
  .filter((entry) => entry.isFile()).map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'));

describe('credentials from the environment, per profile', () => {
  it('a job file of two profiles runs from REPORTING_TOKEN_<PROFILE> alone: no token store is read or made, no token shown', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS);
      const env = podEnv(sandbox, dir);
      const result = await runCli(['jobs', 'run', '-v'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      for (const profile of ['acme', 'globex-fr']) {
        for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) {
          const rows = parse(readFileSync(join(dir, 'out', `daily@${profile}`, `${day}.csv`)), { columns: true }) as Record<string, string>[];
          expect(rows.length, `${profile} ${day}`).toBeGreaterThan(0);
          expect(rows.every((row) => row.date === day)).toBe(true);
        }
      }
      expect(existsSync(join(dir, 'config'))).toBe(false);
      for (const text of [result.stdout, result.stderr, ...written(dir)]) expect(text).not.toContain(sandbox.token);
    });
  });

  it("a profile's own variable is the one used: a wrong REPORTING_TOKEN_GLOBEX_FR fails that job, naming the variable; acme's goes on", async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS);
      const wrong = 'wrong-token-for-globex-0000000000000000';
      const result = await runCli(['jobs', 'run'], { env: podEnv(sandbox, dir, { REPORTING_TOKEN_GLOBEX_FR: wrong }), cwd: dir });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^daily@globex-fr: hint: the token comes from REPORTING_TOKEN_GLOBEX_FR: check that it is a valid token/m);
      expect(result.stderr).not.toContain(wrong);
      expect(existsSync(join(dir, 'out', 'daily@acme', '2026-11-03.csv'))).toBe(true);
      expect(existsSync(join(dir, 'out', 'daily@globex-fr'))).toBe(false);
    });
  });

  it('REPORTING_TOKEN alone stands for every profile: refused for two; beside each profile\'s own variable it is not used', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS);
      const generic = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const refused = await runCli(['jobs', 'validate'], { env: generic, cwd: dir });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: reporting\.yaml:\d+:\d+: jobs of several profiles \("acme", "globex-fr"\) with REPORTING_TOKEN and REPORTING_BASE_URL set/m);
      expect(refused.stderr).toMatch(/^hint: give each profile a token of its own \(REPORTING_TOKEN_ACME for "acme"/m);
      // a profile with no token of its own (and no base URL from the environment): its variable is named
      const { REPORTING_BASE_URL: _, ...noBase } = podEnv(sandbox, dir);
      const missing = await runCli(['jobs', 'validate'], { env: { ...noBase, REPORTING_TOKEN_GLOBEX_FR: '' }, cwd: dir });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/job "daily@globex-fr": profile "globex-fr" does not exist\nhint: log in with `reporting login --profile globex-fr`, set REPORTING_TOKEN_GLOBEX_FR, or fix the name/);
      const both = await runCli(['jobs', 'run', '-q'], { env: { ...podEnv(sandbox, dir), REPORTING_TOKEN: 'never-used-generic-token-000000000000' }, cwd: dir });
      expect(both.code, both.stderr).toBe(0);
      expect(existsSync(join(dir, 'config'))).toBe(false);
    });
  });

  it('a token refused mid-run: a new one from REPORTING_EMAIL_<PROFILE>/PASSWORD, kept in memory and said once for the process; nothing stored, no password shown', async () => {
    // the sandbox's token stops working after a few uses: each job logs in again
    await withSandbox({ faults: { tokenUses: 3 } }, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS.replace('profiles: [acme, globex-fr]', 'profile: acme').replace('  - name: daily', '  - name: daily\n    concurrency: 1') + `  - name: again
    side: buyer
    profile: acme
    output: out/{job}/{since}.csv
`);
      const env = podEnv(sandbox, dir, { REPORTING_EMAIL_ACME: sandbox.email, REPORTING_PASSWORD_ACME: sandbox.password });
      const result = await runCli(['jobs', 'run'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      const notes = result.stderr.split('\n').filter((line) => line.includes('logged in again for profile "acme"'));
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(/REPORTING_TOKEN_ACME was refused\); the new token is kept in memory for this run, not stored$/);
      expect(existsSync(join(dir, 'config'))).toBe(false);
      expect(existsSync(join(dir, 'out', 'again', '2026-11-03.csv'))).toBe(true);
      for (const text of [result.stdout, result.stderr, ...written(dir)]) {
        expect(text).not.toContain(sandbox.password);
        expect(text).not.toContain(sandbox.token);
      }
    });
  });

  it("loads into one table with each profile's rows under its own scope (not `env`)", async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS.replace('    output: out/{job}/{since}.csv\n', '    load: duckdb:w.duckdb\n'));
      const result = await runCli(['jobs', 'run', '-q'], { env: podEnv(sandbox, dir), cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      const scopes = await duckdbRows(join(dir, 'w.duckdb'), 'SELECT DISTINCT _scope FROM buyer_report ORDER BY 1');
      expect(scopes).toHaveLength(2);
      expect(scopes.some((scope) => scope.includes('acme'))).toBe(true);
      expect(scopes.some((scope) => scope.includes('globex-fr'))).toBe(true);
      expect(scopes.some((scope) => /\benv\b/.test(scope))).toBe(false);
    });
  });

});

/** Every line of `stderr` as JSON (a line that is not JSON fails the test, naming it). */
const jsonLines = (stderr: string) => stderr.split('\n').filter((line) => line !== '').map((line) => {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new Error(`not a JSON line: ${line}`);
  }
});

describe('logs that stay JSON (issue 31, item 5)', () => {
  it.each([
    ['jobs run --log-format json', ['jobs', 'run', '--log-format', 'json'], {}, JOBS],
    ['REPORTING_LOG_FORMAT=json', ['jobs', 'run'], { REPORTING_LOG_FORMAT: 'json' }, JOBS],
    ["the file's log-format: json", ['jobs', 'run'], {}, JOBS.replace('  chunk: day\n', '  chunk: day\n  log-format: json\n')],
  ])('%s: every stderr line is JSON, the summary a `job` event per job with its retry, the error last', async (_, args, extra, file) => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), file as string);
      const result = await runCli(args as string[], { env: podEnv(sandbox, dir, { REPORTING_TOKEN_GLOBEX_FR: 'wrong-token-0000000000000000000000', ...(extra as Record<string, string>) }), cwd: dir });
      expect(result.code).toBe(3);
      const lines = jsonLines(result.stderr);
      const jobs = lines.filter((line) => line.event === 'job');
      expect(jobs.map((line) => [line.job, line.exitCode])).toEqual([['daily@acme', 0], ['daily@globex-fr', 3]]);
      expect(jobs[1]?.retry).toBe('reporting jobs run -f reporting.yaml daily@globex-fr');
      expect(jobs[0]).not.toHaveProperty('retry');
      expect(lines.at(-1)).toMatchObject({ event: 'error', exitCode: 3, message: '1 of 2 jobs failed: daily@globex-fr' });
      // the jobs' own lines are JSON too, each naming its job
      expect(lines.filter((line) => line.event === 'written' && line.job === 'daily@acme')).toHaveLength(3);
    });
  });

  it('a re-login is a `relogin` event, once for the process, in a stream that stays JSON', async () => {
    await withSandbox({ faults: { tokenUses: 3 } }, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), JOBS.replace('profiles: [acme, globex-fr]', 'profile: acme') + `  - name: again
    side: buyer
    profile: acme
    output: out/{job}/{since}.csv
`);
      const env = podEnv(sandbox, dir, { REPORTING_EMAIL_ACME: sandbox.email, REPORTING_PASSWORD_ACME: sandbox.password });
      const result = await runCli(['jobs', 'run', '--log-format', 'json'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      const lines = jsonLines(result.stderr);
      const relogins = lines.filter((line) => line.event === 'relogin');
      expect(relogins).toHaveLength(1);
      expect(relogins[0]?.message).toMatch(/^logged in again for profile "acme" \(REPORTING_TOKEN_ACME was refused\)/);
      expect(relogins[0]?.profile).toBe('acme');
      expect(result.stderr).not.toContain(sandbox.password);
    });
  });

  it('REPORTING_LOG_FORMAT=json makes `run` log JSON to its last line; --log-format text wins over it; a bad value is refused', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: 'wrong-token-0000000000000000000000', REPORTING_LOG_FORMAT: 'json' };
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '-o', join(dir, 'r.csv')];
      const json = await runCli(args, { env });
      expect(json.code).toBe(3);
      expect(jsonLines(json.stderr).at(-1)).toMatchObject({ event: 'error', exitCode: 3 });
      const text = await runCli([...args, '--log-format', 'text'], { env });
      expect(text.code).toBe(3);
      expect(text.stderr).toMatch(/^error: the API rejected the token/m);
      const bad = await runCli(args, { env: { ...env, REPORTING_TOKEN: sandbox.token, REPORTING_LOG_FORMAT: 'yaml' } });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/REPORTING_LOG_FORMAT="yaml" is not a log format/);
    });
  });
});
