// Issue 30, item 10: scopes are unique per request. `--carrier 'a,b'` (one carrier whose name
// holds a comma) and `--carrier a --carrier b` wrote one scope text, so each load replaced the
// other's rows. Filter values are now escaped in `_scope`; a table loaded by an earlier version
// keeps working: its rows under the old text are replaced by the next load, never left beside.

import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { loadTargets } from '../helpers/load-targets.js';

const { targets } = loadTargets('scope');
const env = sandboxEnv;

describe.each(targets)('--load %s: filter values in the scope', (_name, target, skip) => {
  it.skipIf(skip)('--carrier \'Orange,SFR\' does not replace --carrier Orange --carrier SFR\'s rows; the rows under the old text are named, not replaced', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const load = (...carriers: string[]) => runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'DAILY,CARRIER',
        '--metrics', 'displays', ...carriers.flatMap((c) => ['--carrier', c]), '--load', db.load, '--table', 'daily', '--poll-interval', '20ms'],
      { env: env(sandbox, dir), cwd: dir });
      const two = await load('Orange', 'SFR');
      expect(two.code, two.stderr).toBe(0);
      const table = async () => db.select('SELECT _scope, carrier, displays, _report_id FROM daily ORDER BY 2');
      const before = await table();
      expect(before.length).toBeGreaterThan(0);
      expect(before[0]).toContain('filters=carrier=Orange,SFR;');
      // one carrier whose name holds a comma (none in the sandbox: its window has no rows)
      const one = await load('Orange,SFR');
      expect(one.code, one.stderr).toBe(0);
      // its empty window replaced its own scope's rows: the two carriers' rows are untouched
      expect(await table()).toEqual(before);
      expect(one.stderr).toContain(`warning: daily holds ${before.length} rows of this period under the old scope text filters=carrier=Orange,SFR, which these filters split at their commas share: not replaced (docs/CHANGES.md)`);
    });
  }, 120_000);

  it.skipIf(skip)('a second breakdown set of one account in one table: the load says a sum across _scope counts twice', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const load = (breakdowns: string, ...extra: string[]) => runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', breakdowns,
        '--metrics', 'displays', '--load', db.load, '--table', 'daily', '--poll-interval', '20ms', ...extra], { env: env(sandbox, dir), cwd: dir });
      const first = await load('DAILY,COUNTRY');
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).not.toContain('counts it twice');
      const second = await load('DAILY,OS', '--on-schema-change', 'add-columns');
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toContain('warning: daily also holds this account\'s rows of the period for other breakdowns (COUNTRY,DAILY): each is a full count, so a sum across _scope counts it twice; sum within one _scope');
    });
  }, 120_000);
});
