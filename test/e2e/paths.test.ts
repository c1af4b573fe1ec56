// One path for two files (issue 20, item 1): the state file, its lock, every output the run can
// write, the journal and the token store are compared before the first request, symlinks and `..`
// resolved; two the same is a usage error naming both, and nothing is written or requested.

import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
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
