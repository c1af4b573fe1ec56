// Several processes loading one window of one DuckDB file at once (issue 30, item 1, DuckDB's half):
// DuckDB's lock on the file lets one write at a time, the others wait for it (--max-wait) or exit
// non-zero saying the file is held; the table holds the day's rows once, from one report. Read
// back by DuckDB's own client.

import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, startCli } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { withSandbox } from '../helpers/http.js';

const env = (sandbox: Sandbox, dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });

describe('DuckDB: processes loading one window of one file at once', () => {
  it.each([3, 8])('%i processes, 5 times: each exits 0 or says the file is held; the day\'s rows once, from one report', async (count) => {
    await withSandbox({ scaleRows: 2_000, readyDelayMs: 1 }, async (sandbox, dir) => {
      for (let round = 0; round < 5; round++) {
        const file = join(dir, `w${round}.duckdb`);
        const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', `duckdb:${file}`, '--poll-interval', '20ms', '-q'];
        // one waits for the file (--max-wait), the others not at all
        const results = await Promise.all(Array.from({ length: count }, (_, i) =>
          collect(startCli(i === 1 ? [...args, '--max-wait', '2m'] : args, { env: env(sandbox, dir), cwd: dir }), { timeoutMs: 120_000 })));
        // the one that waited loaded the window once the file was free
        expect(results[1]?.code, results[1]?.stderr).toBe(0);
        for (const result of results) {
          if (result.code === 0) continue;
          // one line saying so (and its hint), no stack
          expect(result.stderr, `round ${round}`).toMatch(/^error: the DuckDB database duckdb:\S+ is held by another process[^\n]*\nhint: [^\n]+\n$/);
        }
        expect(results.some((result) => result.code === 0), results.map((r) => r.stderr).join('')).toBe(true);
        expect(await duckdbRows(file, 'SELECT count(*), count(DISTINCT _report_id) FROM buyer_report')).toEqual(['2000|1']);
        // the file was made beside and linked into place: no draft left (named as the tool's
        // temporary files are, `.w0.duckdb.reporting-tmp-PID-...`; `.creating` before)
        expect(readdirSync(dir).filter((name) => name.endsWith('.creating') || name.includes('.reporting-tmp-'))).toEqual([]);
      }
    });
  }, 180_000);

  it('a file just written that is not a DuckDB database is refused in DuckDB\'s words after a moment, not called held; its bytes untouched', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const file = join(dir, 'notes.duckdb');
      const junk = 'not a database\n'.repeat(2000);
      writeFileSync(file, junk);
      const started = Date.now();
      const result = await collect(startCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', `duckdb:${file}`, '-q'], { env: env(sandbox, dir), cwd: dir }));
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/^error: cannot open the DuckDB database duckdb:\S+notes\.duckdb: [^\n]*not a valid DuckDB database file[^\n]*\nhint: check the path[^\n]*\n$/);
      // waited for as a file being created (a few seconds), then refused
      expect(Date.now() - started).toBeGreaterThan(1_000);
      const { readFileSync } = await import('node:fs');
      expect(readFileSync(file, 'utf8')).toBe(junk);
    });
  }, 60_000);
});
