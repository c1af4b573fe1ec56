// DuckDB holds real nights (issue 30): a nightly `run --load duckdb:FILE`, each night a new process,
// into one file whose table holds the nights before. Before, the second night of 30,000 rows failed
// at COMMIT ("failed to pin block") and so did every night after. Each night here exits 0, leaves
// no WAL beside the file, and the file is read back by DuckDB's own client and by the `duckdb`
// command line's stand-in (test/helpers/duckdb-cli.mjs): each day's rows once, from one report.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { withSandbox } from '../helpers/http.js';
import type { Sandbox } from '../../src/sandbox/server.js';

const DUCKDB_CLI = join(import.meta.dirname, '..', 'helpers', 'duckdb-cli.mjs');
const env = (sandbox: Sandbox, dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });
const dayOf = (night: number) => DateTime.fromISO('2026-11-01', { zone: 'Europe/Paris' }).plus({ days: night }).toISODate() as string;

/** `nights` nights, one day each, every field (37 columns, 32 of the export), into `file` */
async function nights(sandbox: Sandbox, dir: string, file: string, from: number, count: number): Promise<void> {
  for (let night = from; night < from + count; night++) {
    const day = dayOf(night);
    const result = await runCli(['run', 'buyer', '--since', day, '--until', day, '--breakdowns', 'HOURLY,CAMPAIGN', '--columns', 'all',
      '--load', `duckdb:${file}`, '--poll-interval', '20ms', '-q'], { env: env(sandbox, dir), cwd: dir, timeoutMs: 60_000 });
    expect(result.code, `night ${night + 1} (${day}): ${result.stderr}`).toBe(0);
    expect(existsSync(`${file}.wal`), `night ${night + 1}: a WAL was left beside the file`).toBe(false);
  }
}

/** per window: its rows and its reports */
const perWindow = (file: string) => duckdbRows(file, "SELECT strftime(_window_since AT TIME ZONE 'Europe/Paris', '%Y-%m-%d'), count(*), count(DISTINCT _report_id) FROM buyer_report GROUP BY 1 ORDER BY 1");

describe('DuckDB: night after night, each a new process', () => {
  it('10 nights of 30,000 rows into one file: every night exits 0; each day holds its 30,000 rows from one report; both clients open the file', async () => {
    await withSandbox({ scaleRows: 30_000, readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'warehouse.duckdb');
      await nights(sandbox, dir, file, 0, 10);
      expect(await perWindow(file)).toEqual(Array.from({ length: 10 }, (_, night) => `${dayOf(night)}|30000|1`));
      const cli = spawnSync(process.execPath, [DUCKDB_CLI, file, '-c', 'SELECT count(*), count(DISTINCT _report_id) FROM buyer_report'], { encoding: 'utf8' });
      expect(cli.status, cli.stderr).toBe(0);
      expect(cli.stdout.trim().split('\n').at(-1)).toBe('300000\t10');
    });
  }, 90_000);

  it('3 nights of 100,000 rows into a table that holds rows: each exits 0, each day holds its 100,000 rows from one report', async () => {
    await withSandbox({ scaleRows: 100_000, readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'warehouse.duckdb');
      await nights(sandbox, dir, file, 0, 3);
      expect(await perWindow(file)).toEqual([0, 1, 2].map((night) => `${dayOf(night)}|100000|1`));
    });
  }, 90_000);
});
