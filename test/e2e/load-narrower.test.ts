// Issue 30, item 8: a narrower load is refused. The same day loaded again with fewer metrics
// (`--metrics displays` into a table of three) set the other metric columns to NULL for that day,
// with exit 0 and no word said. Now it is refused before any report is requested (exit 2, the
// columns it would leave empty named, the table unchanged), on both engines; an explicit
// `--on-schema-change allow-missing` (or add-columns) loads it and says so at the end.

import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { loadTargets } from '../helpers/load-targets.js';

const { targets } = loadTargets('narrow');
const env = sandboxEnv;

describe.each(targets)('--load %s: a load with fewer columns than the table', (_name, target, skip) => {
  it.skipIf(skip)('is refused before any request, the table unchanged; allow-missing loads it and says which columns stay NULL', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const load = (metrics: string, ...extra: string[]) => runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'DAILY,COUNTRY',
        '--metrics', metrics, '--load', db.load, '--table', 'daily', '--poll-interval', '20ms', ...extra], { env: env(sandbox, dir), cwd: dir });
      const first = await load('displays,clicks,revenueEuro');
      expect(first.code, first.stderr).toBe(0);
      const table = async () => db.select('SELECT country, displays, clicks, "revenueEuro", _report_id FROM daily ORDER BY country');
      const before = await table();
      expect(before.length).toBeGreaterThan(0);
      const submitted = sandbox.requests.filter((r) => r.endpoint === 'buyer').length;

      const narrower = await load('displays');
      expect(narrower.code, narrower.stderr).toBe(2);
      expect(narrower.stderr).toMatch(/^error: the table daily has columns this load does not write: clicks, revenueEuro; its rows would hold NULL there; nothing was loaded$/m);
      expect(narrower.stderr).toMatch(/^hint: .*--on-schema-change allow-missing/m);
      expect(sandbox.requests.filter((r) => r.endpoint === 'buyer').length).toBe(submitted);
      expect(await table()).toEqual(before);

      const allowed = await load('displays', '--on-schema-change', 'allow-missing');
      expect(allowed.code, allowed.stderr).toBe(0);
      expect(allowed.stderr).toContain('has columns this load does not write, left NULL in its rows (--on-schema-change allow-missing): clicks, revenueEuro');
      const after = await db.select('SELECT count(*), count(displays), count(clicks), count("revenueEuro") FROM daily');
      const [count, displays, clicks, revenue] = after[0]!.split('|').map(Number);
      expect({ displays, clicks, revenue }).toEqual({ displays: count, clicks: 0, revenue: 0 });
    });
  }, 120_000);
});
