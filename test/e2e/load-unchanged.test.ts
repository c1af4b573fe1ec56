// Issue 30, item 4: `unchanged` is checked against the destination. Rows deleted from a loaded
// table never came back: the next lookback run said `unchanged` from the state file alone. Now a
// window is unchanged only when the table still holds its rows as recorded (their number and
// report IDs); a removed DuckDB file is a fresh load of every window of the period.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { loadTargets } from '../helpers/load-targets.js';

const { targets } = loadTargets('unch');
const env = sandboxEnv;

describe.each(targets)('--load %s with --state: unchanged against the table', (name, target, skip) => {
  it.skipIf(skip)('a day whose rows were deleted is loaded again by the lookback run; the others stay unchanged', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const run = async (lookback: string) => {
        const result = await runCli(['run', 'buyer', '--since', '-3d', '--until', 'yesterday', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays',
          '--state', 'day.state.json', '--lookback', lookback, '--load', db.load, '--table', 'daily', '--poll-interval', '20ms', '--log-format', 'json'],
        { env: env(sandbox, dir), cwd: dir });
        expect(result.code, result.stderr).toBe(0);
        const events = result.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { event: string; window?: { since: string } });
        const days = (event: string) => events.filter((e) => e.event === event).map((e) => e.window?.since.slice(0, 10)).sort();
        return { loaded: days('loaded'), unchanged: days('unchanged') };
      };
      const perDay = async () => db.select('SELECT CAST(date AS VARCHAR), count(*), count(DISTINCT _report_id) FROM daily GROUP BY 1 ORDER BY 1');
      const first = await run('3d');
      expect(first.loaded).toHaveLength(3);
      const full = await perDay();
      const [, middle] = first.loaded;
      await db.select(`DELETE FROM daily WHERE CAST(date AS VARCHAR) = '${middle}'`);
      expect(await perDay()).toHaveLength(2);

      const second = await run('3d');
      expect(second.loaded).toEqual([middle]);
      expect(second.unchanged).toEqual(first.loaded.filter((day) => day !== middle));
      expect(await perDay()).toEqual(full);
      // and again: all three as loaded, all unchanged
      expect((await run('3d')).unchanged).toEqual(first.loaded);

      if (name === 'duckdb') {
        // the database file removed: every window of the period is loaded again, lookback or not
        rmSync(join(dir, 'warehouse.duckdb'));
        const fresh = await run('0d');
        expect(fresh.loaded).toEqual(first.loaded);
        expect(await perDay()).toEqual(full);
      }
    });
  }, 120_000);
});
