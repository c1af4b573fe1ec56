// One DuckDB file, one database (issue 30, item 2, DuckDB's half): within one process (`jobs run`),
// jobs reaching one file by several spellings of its path (the path, a symlink to it, `sub/..`
// through a symlinked folder) share one database, by the file's real path: each job's table is in
// the file. Before, each spelling was a database of its own: `sub/..` a second file beside the job
// file, and the symlink a second database of the same file, whose writes the other's lost. Read
// back by DuckDB's own client.

import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { withSandbox } from '../helpers/http.js';

const env = (sandbox: Sandbox, dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });

describe('DuckDB: one file by three spellings in one `jobs run`', () => {
  it('the path, a symlink to it and sub/.. through a symlinked folder: all three tables in the one file, with their rows (5 times)', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      for (let round = 0; round < 5; round++) {
        const root = join(dir, `r${round}`);
        mkdirSync(join(root, 'data', 'inner'), { recursive: true });
        // the file does not exist yet: the first job to open it creates it. `sub/..` is spelled as
        // an absolute path: the job file's folder is joined to a relative one by src/fleet/file.ts
        symlinkSync(join('data', 'warehouse.duckdb'), join(root, 'link.duckdb'));
        symlinkSync(join('data', 'inner'), join(root, 'sub'));
        const job = (name: string, load: string) => `  - name: ${name}
    side: buyer
    breakdowns: DAILY,CAMPAIGN
    load: duckdb:${load}
    table: t_${name}
`;
        writeFileSync(join(root, 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-03
  chunk: day
  poll-interval: 20ms
jobs:
${job('a', 'data/warehouse.duckdb')}${job('b', 'link.duckdb')}${job('c', `${root}/sub/../warehouse.duckdb`)}`);
        const result = await runCli(['jobs', 'run', '--json'], { env: env(sandbox, dir), cwd: root, timeoutMs: 120_000 });
        expect(result.code, result.stderr).toBe(0);
        // `sub/../warehouse.duckdb` is data/warehouse.duckdb (sub is data/inner), not ./warehouse.duckdb
        expect(existsSync(join(root, 'warehouse.duckdb')), `round ${round}: a second database`).toBe(false);
        expect(readdirSync(join(root, 'data')).sort()).toEqual(['inner', 'warehouse.duckdb']);
        const file = join(root, 'data', 'warehouse.duckdb');
        const counts = await duckdbRows(file, `SELECT 'a', count(*), count(DISTINCT _window_since) FROM t_a UNION ALL SELECT 'b', count(*), count(DISTINCT _window_since) FROM t_b
          UNION ALL SELECT 'c', count(*), count(DISTINCT _window_since) FROM t_c ORDER BY 1`);
        const rows = counts[0]?.split('|')[1];
        expect(Number(rows)).toBeGreaterThan(0);
        expect(counts).toEqual([`a|${rows}|3`, `b|${rows}|3`, `c|${rows}|3`]);
      }
    });
  }, 180_000);
});
