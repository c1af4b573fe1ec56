// `reporting state` end to end (issue 20, item 11): the built CLI against the sandbox. A state file
// made by a real run is shown (--json read by Python's json and jq), a day forgotten, the run that
// fetches it again killed, its lock named and removed, and the next run finishing the day.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { PYTHON } from '../helpers/python.js';
import { until } from '../helpers/wait.js';

const env = (sandbox: Sandbox, dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });
const HAS_JQ = spawnSync('jq', ['--version']).status === 0;

interface Entry { since: string; status: string; reportId: string | null; file: string | null }
const windowsOf = (path: string): Entry[] => {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { windows: Entry[] }).windows;
  } catch {
    return [];
  }
};

describe('reporting state', () => {
  it('show --json is read by Python and jq; forget, a killed run, unlock naming it, and the day fetched again', async () => {
    await withSandbox({ readyDelayMs: 600 }, async (sandbox, dir) => {
      const state = join(dir, 'buyer.state.json');
      const run = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--chunk', 'day', '--breakdowns', 'DAILY', '--metrics', 'displays',
        '-o', join(dir, 'out', '{since}.csv'), '--state', state, '--poll-interval', '50ms', '-q'];
      const first = await runCli(run, { env: env(sandbox, dir) });
      expect(first.code, first.stderr).toBe(0);

      const shown = await runCli(['state', 'show', state, '--json'], { env: env(sandbox, dir) });
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toEqual(windowsOf(state));
      if (PYTHON) {
        const python = spawnSync(PYTHON, ['-c', 'import json, sys; print(" ".join(w["since"][:10] + ":" + w["status"] for w in json.load(sys.stdin)))'], { input: shown.stdout, encoding: 'utf8' });
        expect(python.stdout.trim(), python.stderr).toBe('2026-11-01:done 2026-11-02:done 2026-11-03:done');
      }
      if (HAS_JQ) {
        const jq = spawnSync('jq', ['-r', '.[] | select(.status == "done") | .file'], { input: shown.stdout, encoding: 'utf8' });
        expect(jq.stdout.trim().split('\n')).toEqual(['01', '02', '03'].map((day) => join(dir, 'out', `2026-11-${day}.csv`)));
      }

      const forgot = await runCli(['state', 'forget', state, '2026-11-02'], { env: env(sandbox, dir) });
      expect(forgot.code, forgot.stderr).toBe(0);
      expect(forgot.stdout).toMatch(/^forgot 2026-11-02 \(done, report \w+, file .*2026-11-02\.csv\)\n$/);
      expect(existsSync(join(dir, 'out', '2026-11-02.csv'))).toBe(true);

      // the run that fetches it again is killed while it waits: its lock stays behind
      const killed = startCli(run, { env: env(sandbox, dir) });
      const killedDone = collect(killed);
      await until(() => windowsOf(state)[1]?.status === 'submitted', 'the forgotten day submitted again');
      killed.kill('SIGKILL');
      await killedDone;
      expect(existsSync(`${state}.lock`)).toBe(true);

      const plain = await runCli(['state', 'show', state], { env: env(sandbox, dir) });
      expect(plain.code).toBe(0);
      expect(plain.stderr).toContain(`note: ${state}.lock was left by process ${killed.pid}, which is gone`);
      expect(plain.stdout).toMatch(/^2026-11-02\tsubmitted\t\w+\t1\t\t\t$/m);

      const unlocked = await runCli(['state', 'unlock', state], { env: env(sandbox, dir) });
      expect(unlocked.code, unlocked.stderr).toBe(0);
      expect(unlocked.stdout).toMatch(new RegExp(`^removed .*buyer\\.state\\.json\\.lock of process ${killed.pid} since \\S+ \\(not running any more\\)\\n$`));
      expect(existsSync(`${state}.lock`)).toBe(false);

      const last = await runCli(run, { env: env(sandbox, dir) });
      expect(last.code, last.stderr).toBe(0);
      expect(windowsOf(state).map((w) => w.status)).toEqual(['done', 'done', 'done']);
      // three reports, and one for the day forgotten: the killed run's, resumed by the last run, not submitted again
      expect(sandbox.reports()).toHaveLength(4);
    });
  });
});
