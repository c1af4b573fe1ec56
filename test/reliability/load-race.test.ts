// Issue 30, item 1: several `run --load` of one window at once (a cron run overlapping a manual
// rerun, a retried task) leave the window's rows once, from one report. Real processes of the
// built CLI, a real Postgres cluster, each scenario five times. Postgres: every loader waits for
// the window's advisory lock, then replaces, and exits 0.

import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { loadTargets } from '../helpers/load-targets.js';
import { POSTGRES_AVAILABLE } from '../helpers/postgres.js';

const { postgresTarget } = loadTargets('race');
const ROWS = 4000;

const env = sandboxEnv;

describe('several loaders of one window at once (Postgres)', () => {
  it.skipIf(!POSTGRES_AVAILABLE).each([3, 8])('%i processes, five times: every loader exits 0, the rows are there once, from one report', async (processes) => {
    await withSandbox({ readyDelayMs: 1, scaleRows: ROWS }, async (sandbox, dir) => {
      const db = postgresTarget();
      const load = () => runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'DAILY,COUNTRY',
        '--metrics', 'displays,clicks', '--load', db.load, '--table', 'race', '--poll-interval', '20ms', '-q'],
      { env: env(sandbox, dir), cwd: dir, timeoutMs: 120_000 });
      for (let round = 1; round <= 5; round++) {
        const results = await Promise.all(Array.from({ length: processes }, load));
        for (const result of results) expect(result.code, `round ${round}: ${result.stderr}`).toBe(0);
        const [count, reports] = (await db.select('SELECT count(*), count(DISTINCT _report_id) FROM race'))[0]!.split('|');
        expect({ round, count: Number(count), reports: Number(reports) }).toEqual({ round, count: ROWS, reports: 1 });
      }
    });
  }, 300_000);
});
