// run --load (issue 22) end to end: nightly runs into DuckDB and a real Postgres (a throwaway
// cluster), against the sandbox's late restatements; tables read back by SQL (psql, DuckDB's own
// client) and compared with a fresh report, number for number. Failures: a wrong password, an
// unreachable server, a DuckDB file held by another process, a SIGKILL mid-run, schema drift.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { runCli as runInProcess } from '../../src/cli/program.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { call, withSandbox } from '../helpers/http.js';
import { POSTGRES_AVAILABLE } from '../helpers/postgres.js';
import { loadTargets } from '../helpers/load-targets.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';
import { duckdbRows } from '../helpers/duckdb.js';

const PARIS = 'Europe/Paris';
const DAY_MS = 86_400_000;
const env = (sandbox: Sandbox, dir: string, extra: Record<string, string> = {}) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, ...extra,
});

const { targets, postgresTarget, cluster } = loadTargets('e');

/** A fresh report of one window, straight from the sandbox (not through the CLI). */
async function freshReport(sandbox: Sandbox, since: number, until: number, metrics: string, breakdowns: string[]) {
  const submitted = await call(sandbox, '/buyer-reporting', { form: { since, until, metrics, breakdowns } });
  const id = submitted.json.response.report_id as string;
  await untilReady(sandbox, id);
  const fresh = await call(sandbox, '/download-reporting', { form: { id } });
  return fresh.json.data as Record<string, unknown>[];
}
async function untilReady(sandbox: Sandbox, id: string) {
  for (let i = 0; i < 500; i++) {
    if ((await call(sandbox, '/status-reporting', { form: { id } })).json.response.status === 'ready') return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`report ${id} never ready`);
}
/** A number as the database prints it back: the shortest text of its double (or the integer). */
const num = (value: unknown) => String(Number(value));

describe.each(targets)('--load %s: three nightly runs with --since auto --lookback 2d against --restate 2d', (_name, target, skip) => {
  it.skipIf(skip)('no duplicate, no stale row, no missing day; settled days equal a fresh report number for number; unchanged windows are not rewritten', async () => {
    const firstNight = DateTime.fromISO('2026-11-21T06:00:00', { zone: PARIS }).toMillis();
    let anchor = firstNight;
    let started = Date.now();
    const clock = () => anchor + (Date.now() - started);
    const night = (day: number) => { anchor = firstNight + day * DAY_MS; started = Date.now(); };
    await withSandbox({ readyDelayMs: 1, restateMs: 2 * DAY_MS, now: clock }, async (sandbox, dir) => {
      const db = target(dir);
      const metrics = 'displays,clicks,revenueEuro';
      const nightly = async (since: string, lookback = '2d') => {
        const { ctx, stdout, stderr } = fakeContext({ env: env(sandbox, dir), cwd: dir });
        const code = await runInProcess(argv('run', 'buyer', '--since', since, '--until', 'yesterday', '--lookback', lookback,
          '--breakdowns', 'DAILY,COUNTRY', '--metrics', metrics, '--state', 'buyer.state.json', '--load', db.load, '--table', 'buyer_daily',
          '--log-format', 'json', '--poll-interval', '20ms', '--json'), { ...ctx, now: clock });
        expect(code, stderr.text).toBe(0);
        const events = stderr.text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { event: string; window: { since: string }; table?: string; rows?: number });
        const days = (name: string) => events.filter((e) => e.event === name).map((e) => e.window.since.slice(0, 10)).sort();
        return { loaded: days('loaded'), unchanged: days('unchanged'), result: JSON.parse(stdout.text) as { table: string; rows: number; windows: { since: string; rows: number; outcome: string }[] } };
      };
      const perDay = async () => db.select('SELECT CAST(date AS VARCHAR), count(*), count(DISTINCT country), count(DISTINCT _report_id) FROM buyer_daily GROUP BY 1 ORDER BY 1');
      const check = async (days: string[]) => {
        const rows = await perDay();
        expect(rows.map((r) => r.split('|')[0])).toEqual(days);
        // one report's rows per day, each country once
        for (const row of rows) {
          const [, count, countries, reports] = row.split('|');
          expect(count, row).toBe(countries);
          expect(reports, row).toBe('1');
        }
      };

      const one = await nightly('2026-11-16');
      expect(one.loaded).toEqual(['2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20']);
      expect(one.result.table).toBe('buyer_daily');
      await check(['16', '17', '18', '19', '20'].map((d) => `2026-11-${d}`));

      night(1);
      const two = await nightly('auto');
      expect([...two.loaded, ...two.unchanged].sort()).toEqual(['2026-11-19', '2026-11-20', '2026-11-21']);
      await check(['16', '17', '18', '19', '20', '21'].map((d) => `2026-11-${d}`));

      night(2);
      const three = await nightly('auto');
      expect([...three.loaded, ...three.unchanged].sort()).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);
      // the same morning again, three days back: Nov 20 no longer moves, so it is not rewritten
      const before = await db.select(`SELECT DISTINCT _report_id FROM buyer_daily WHERE CAST(date AS VARCHAR) = '2026-11-20'`);
      const again = await nightly('auto', '3d');
      expect(again.unchanged).toContain('2026-11-20');
      expect(again.result.windows.find((w) => w.since === '2026-11-20')?.outcome).toBe('unchanged');
      expect(await db.select(`SELECT DISTINCT _report_id FROM buyer_daily WHERE CAST(date AS VARCHAR) = '2026-11-20'`)).toEqual(before);
      await check(['16', '17', '18', '19', '20', '21', '22'].map((d) => `2026-11-${d}`));

      // the state records each window loaded: table, rows, sha256
      const state = JSON.parse(readFileSync(join(dir, 'buyer.state.json'), 'utf8')) as { request: { load: unknown }; windows: { since: string; status: string; loaded: { table: string; rows: number; sha256: string } | null }[] };
      expect(state.request.load).toEqual({ target: db.load.replace(/:[^:@/]*@/, '@'), table: 'buyer_daily' });
      for (const entry of state.windows) {
        expect(entry.status).toBe('done');
        expect(entry.loaded?.table).toBe('buyer_daily');
        expect(entry.loaded?.sha256).toMatch(/^[0-9a-f]{64}$/);
      }

      // settled days: the table holds exactly what a fresh report says, number for number
      const loaded = await db.select(`SELECT CAST(date AS VARCHAR), country, displays, clicks, CAST("revenueEuro" AS VARCHAR) FROM buyer_daily WHERE CAST(date AS VARCHAR) < '2026-11-21' ORDER BY 1, 2`);
      const since = Math.floor(DateTime.fromISO('2026-11-16', { zone: PARIS }).toSeconds());
      const until = Math.floor(DateTime.fromISO('2026-11-21', { zone: PARIS }).toSeconds()) - 1;
      const fresh = await freshReport(sandbox, since, until, metrics, ['DAILY', 'COUNTRY']);
      const expected = fresh.map((r) => `${r.date}|${r.country}|${r.displays}|${r.clicks}|${num(r.revenueEuro)}`).sort();
      expect(loaded.map((row) => row.split('|').map((cell, i) => (i === 4 ? num(cell) : cell)).join('|')).sort()).toEqual(expected);
    });
  }, 120_000);
});

describe.each(targets)('--load %s: RANGE, no time breakdown, by days', (_name, target, skip) => {
  it.skipIf(skip)("the table's sums grouped by country equal one report's over the period", async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-04', '--chunk', 'day', '--breakdowns', 'COUNTRY',
        '--metrics', 'displays,clicks', '--load', db.load, '--poll-interval', '20ms', '-q'], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const sums = await db.select('SELECT country, CAST(sum(displays) AS BIGINT), CAST(sum(clicks) AS BIGINT), count(DISTINCT _window_since) FROM buyer_report GROUP BY 1 ORDER BY 1');
      const since = Math.floor(DateTime.fromISO('2026-11-01', { zone: PARIS }).toSeconds());
      const until = Math.floor(DateTime.fromISO('2026-11-05', { zone: PARIS }).toSeconds()) - 1;
      const fresh = await freshReport(sandbox, since, until, 'displays,clicks', ['COUNTRY']);
      expect(sums).toEqual(fresh.map((r) => `${r.country}|${r.displays}|${r.clicks}|4`).sort());
    });
  }, 60_000);
});

describe.each(targets)('--load %s: schema changes', (_name, target, skip) => {
  it.skipIf(skip)('a metric added to the export: fail exits 2 before any row is written, printing the difference; add-columns adds it and goes on', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const run = (metrics: string, ...more: string[]) => runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY',
        '--metrics', metrics, '--load', db.load, '--poll-interval', '20ms', '-q', ...more], { env: env(sandbox, dir) });
      expect((await run('displays')).code).toBe(0);
      const reportsBefore = sandbox.reports().length;
      const refused = await run('displays,clicks');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: the table buyer_report does not have the export's columns: new in the export: clicks; nothing was loaded\nhint: .*--on-schema-change add-columns/);
      // checked before any report was requested
      expect(sandbox.reports().length).toBe(reportsBefore);
      const added = await run('displays,clicks', '--on-schema-change', 'add-columns');
      expect(added.code, added.stderr).toBe(0);
      expect(await db.select('SELECT CAST(date AS VARCHAR), clicks IS NULL FROM buyer_report ORDER BY 1')).toEqual([
        expect.stringMatching(/^2026-11-01\|(f|false)$/), expect.stringMatching(/^2026-11-02\|(f|false)$/),
      ]);
    });
  }, 60_000);
});

describe('--load postgres: passwords and servers', () => {
  it.skipIf(!POSTGRES_AVAILABLE)('a wrong password exits 3 and prints no secret; from PGPASSWORD it loads, and neither the output nor the state holds it', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const c = cluster();
      const wrong = 'Wr0ng-pa55word';
      const bad = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', c.url('postgres', false).replace('loader@', `loader:${wrong}@`),
        '--state', 's.json', '--log-format', 'json', '-v'], { env: env(sandbox, dir), cwd: dir });
      expect(bad.code).toBe(3);
      expect(bad.stderr + bad.stdout).not.toContain(wrong);
      expect(bad.stderr).toMatch(/password authentication failed/);
      // no password at all (none in the URL, no PGPASSWORD): said as such, not in the driver's words
      const none = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', c.url('postgres', false)], { env: env(sandbox, dir, { HOME: dir }), cwd: dir });
      expect(none.code).toBe(3);
      expect(none.stderr).toMatch(/^error: Postgres at postgres:\/\/loader@[^ ]+ asks for a password, and none was given\nhint: put it in the URL/m);
      expect(none.stderr).not.toMatch(/SASL|SCRAM/);
      const good = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', c.url('postgres', false),
        '--state', 's.json', '--log-format', 'json', '-v', '--json'], { env: env(sandbox, dir, { PGPASSWORD: c.password }), cwd: dir });
      expect(good.code, good.stderr).toBe(0);
      expect(good.stderr + good.stdout + readFileSync(join(dir, 's.json'), 'utf8')).not.toContain(c.password);
      expect(JSON.parse(good.stdout)).toMatchObject({ table: 'buyer_report', target: c.url('postgres', false) });
    });
  }, 60_000);

  it('an unreachable server exits 5, naming it without its password', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', 'postgres://loader:s3cret-x@127.0.0.1:1/db'], { env: env(sandbox, dir) });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^error: cannot connect to Postgres at postgres:\/\/loader@127\.0\.0\.1:1\/db: connect ECONNREFUSED/);
      expect(result.stderr).not.toContain('s3cret-x');
      expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(2); // the error and its hint, no stack
    });
  }, 30_000);
});

describe('--load duckdb: one writer per file', () => {
  it('a file held by another process: the run waits up to --max-wait, then fails in one line naming the file; the file is intact', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'w.duckdb');
      const first = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', `duckdb:${file}`, '-q'], { env: env(sandbox, dir) });
      expect(first.code, first.stderr).toBe(0);
      // another process opens the file for writing and keeps it
      const holder = spawn(process.execPath, ['--input-type=module', '-e', `
        import { DuckDBInstance } from '@duckdb/node-api';
        const instance = await DuckDBInstance.create(${JSON.stringify(file)});
        await instance.connect();
        console.log('held');
        setInterval(() => {}, 1000);`], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
        const started = Date.now();
        const second = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--load', `duckdb:${file}`, '--max-wait', '2s'], { env: env(sandbox, dir) });
        expect(second.code).toBe(2);
        expect(second.stderr).toMatch(new RegExp(`^error: the DuckDB database duckdb:${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is held by another process`, 'm'));
        expect(second.stderr).toMatch(/^hint: wait for the other run to end, or give a longer --max-wait$/m);
        expect(Date.now() - started).toBeGreaterThan(1500);
        // the wait was said as it began, naming the holder
        expect(second.stderr).toMatch(new RegExp(`^2026-11-02: warning: waiting up to 2\\.0s for the DuckDB database duckdb:\\S+w\\.duckdb \\(--max-wait\\): another process holds it \\(process ${holder.pid}\\)$`, 'm'));
      } finally {
        holder.kill('SIGKILL');
        await new Promise((resolve) => holder.once('close', resolve));
      }
      expect(await duckdbRows(file, 'SELECT CAST(date AS VARCHAR) FROM buyer_report GROUP BY 1')).toEqual(['2026-11-01']);
    });
  }, 60_000);
});

describe.each(targets)('--load %s: SIGKILL in the middle of a run', (_name, target, skip) => {
  it.skipIf(skip)("keeps each window's previous rows whole, and the rerun completes it", async () => {
    const dir = tempDir();
    const db = target(dir);
    // three sandboxes in turn on one port (one base URL, so one scope), with the same data
    const port = await new Promise<number>((resolve) => {
      void startSandbox({ port: 0, readyDelayMs: 1 }).then(async (s) => { const p = Number(new URL(s.baseUrl).port); await s.close(); resolve(p); });
    });
    const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--load', db.load, '--state', 's.json', '--concurrency', '1', '--poll-interval', '20ms'];
    const snapshot = () => db.select('SELECT CAST(date AS VARCHAR), country, displays, _report_id FROM buyer_report ORDER BY 1, 2');

    let sandbox = await startSandbox({ port, readyDelayMs: 1 });
    const first = await runCli(args, { env: env(sandbox, dir), cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    await sandbox.close();
    const loaded = await snapshot();
    expect(loaded.length).toBeGreaterThan(3);

    // again with --full-refresh; the second window's download goes silent: killed there
    sandbox = await startSandbox({ port, readyDelayMs: 1, faults: { latencyMs: 0, errors: [], stallDownload: { afterBytes: 200, times: 100 } } });
    const killed = startCli([...args, '--full-refresh', '--log-format', 'json'], { env: env(sandbox, dir), cwd: dir });
    const done = collect(killed);
    let log = '';
    killed.stderr?.on('data', (chunk: Buffer) => { log += chunk.toString(); });
    await until(() => log.includes('"download_started"'), 'a download started');
    await new Promise((resolve) => setTimeout(resolve, 300));
    killed.kill('SIGKILL');
    await done;
    await sandbox.close();
    expect(await snapshot()).toEqual(loaded);

    sandbox = await startSandbox({ port, readyDelayMs: 1 });
    const rerun = await runCli([...args, '--full-refresh'], { env: env(sandbox, dir), cwd: dir });
    await sandbox.close();
    expect(rerun.code, rerun.stderr).toBe(0);
    const after = await snapshot();
    // the same numbers, from the new run's reports
    expect(after.map((row) => row.split('|').slice(0, 3).join('|'))).toEqual(loaded.map((row) => row.split('|').slice(0, 3).join('|')));
    expect(new Set(after.map((row) => row.split('|')[3]))).not.toEqual(new Set(loaded.map((row) => row.split('|')[3])));
  }, 90_000);
});

describe.each(targets)('schema --for-load --as %s', (name, target, skip) => {
  it.skipIf(skip)('prints the CREATE TABLE that --load runs: a table made from it takes the load with no schema change', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const request = ['--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,revenueEuro', '--columns', 'requested'];
      const ddl = await runCli(['schema', 'buyer', ...request, '--as', name, '--for-load', '--table', 'daily'], { env: env(sandbox, dir) });
      expect(ddl.code, ddl.stderr).toBe(0);
      expect(ddl.stdout).toContain('"_window_since"');
      if (name === 'duckdb') {
        const instance = await DuckDBInstance.create(db.load.slice('duckdb:'.length));
        const connection = await instance.connect();
        await connection.run(ddl.stdout);
        connection.closeSync();
        instance.closeSync();
      } else cluster().psql(ddl.stdout, new URL(db.load).pathname.slice(1));
      const loaded = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', ...request, '--load', db.load, '--table', 'daily', '-q'], { env: env(sandbox, dir) });
      expect(loaded.code, loaded.stderr).toBe(0);
      expect(await db.select('SELECT count(DISTINCT CAST(date AS VARCHAR)) FROM daily')).toEqual(['2']);
    });
  }, 60_000);
});

describe('--load postgres: concurrency', () => {
  it.skipIf(!POSTGRES_AVAILABLE)('two processes loading different windows of one table (created by whichever comes first) both succeed', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = postgresTarget();
      const run = (since: string, until: string) => runCli(['run', 'buyer', '--since', since, '--until', until, '--breakdowns', 'DAILY,COUNTRY',
        '--load', db.load, '--table', 'shared', '--poll-interval', '20ms', '-q'], { env: env(sandbox, dir) });
      const [a, b] = await Promise.all([run('2026-11-01', '2026-11-03'), run('2026-11-04', '2026-11-06')]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const days = await db.select('SELECT CAST(date AS VARCHAR), count(*) = count(DISTINCT country) FROM shared GROUP BY 1 ORDER BY 1');
      expect(days).toEqual(['01', '02', '03', '04', '05', '06'].map((d) => `2026-11-${d}|t`));
    });
  }, 60_000);
});

describe('--load with -o: both are written', () => {
  it('the file holds what the table holds, row for row', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'w.duckdb');
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays',
        '--load', `duckdb:${file}`, '-o', join(dir, 'out.csv'), '--poll-interval', '20ms', '--json'], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ table: 'buyer_report', rows: expect.any(Number), files: [join(dir, 'out.csv')] });
      const { parse } = await import('csv-parse/sync');
      const csv = (parse(readFileSync(join(dir, 'out.csv'), 'utf8'), { columns: true }) as Record<string, string>[]).map((r) => `${r.date}|${r.country}|${r.displays}`).sort();
      expect(csv.length).toBeGreaterThan(3);
      expect(await duckdbRows(file, 'SELECT CAST(date AS VARCHAR), country, displays FROM buyer_report ORDER BY 1, 2')).toEqual(csv);
    });
  }, 60_000);
});

describe('REPORTING_LOAD', () => {
  it('sets --load from the environment; --table without any --load is refused', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'env.duckdb');
      const loaded = await runCli(['run', 'seller', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--table', '{side}_daily', '-q'], { env: env(sandbox, dir, { REPORTING_LOAD: `duckdb:${file}` }) });
      expect(loaded.code, loaded.stderr).toBe(0);
      expect(await duckdbRows(file, 'SELECT CAST(date AS VARCHAR), _scope FROM seller_daily GROUP BY ALL ORDER BY 1')).toEqual([
        `2026-11-01|base=${sandbox.baseUrl};side=seller;breakdowns=DAILY;filters=-;account=env`,
        `2026-11-02|base=${sandbox.baseUrl};side=seller;breakdowns=DAILY;filters=-;account=env`,
      ]);
      const refused = await runCli(['run', 'seller', '--since', '2026-11-01', '--until', '2026-11-02', '--table', 't'], { env: env(sandbox, dir) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: --table only applies with --load/);
    });
  }, 60_000);
});

describe.each(targets)('--load %s: SIGKILL inside a window\'s transaction', (_name, target, skip) => {
  it.skipIf(skip)('a large window killed while its rows go in: the previous rows stay whole, the database opens, the rerun completes', async () => {
    const dir = tempDir();
    const db = target(dir);
    const port = await new Promise<number>((resolve) => {
      void startSandbox({ port: 0 }).then(async (s) => { const p = Number(new URL(s.baseUrl).port); await s.close(); resolve(p); });
    });
    const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--load', db.load, '--poll-interval', '20ms'];
    const reports = () => db.select('SELECT _report_id, count(*) FROM buyer_report GROUP BY 1');
    let sandbox = await startSandbox({ port, readyDelayMs: 1, scaleRows: 100_000 });
    try {
      const first = await runCli(args, { env: env(sandbox, dir), cwd: dir });
      expect(first.code, first.stderr).toBe(0);
    } finally {
      await sandbox.close();
    }
    const before = await reports();
    expect(before).toEqual([expect.stringMatching(/\|100000$/)]);

    sandbox = await startSandbox({ port, readyDelayMs: 1, scaleRows: 100_000 });
    try {
      const killed = startCli([...args, '--log-format', 'json'], { env: env(sandbox, dir), cwd: dir });
      const done = collect(killed);
      let log = '';
      killed.stderr?.on('data', (chunk: Buffer) => { log += chunk.toString(); });
      // one window to fetch streams straight into the table: its transaction opens as the
      // download starts and its rows go in as they come (100,000 rows take well over a second)
      await until(() => log.includes('"download_started"'), 'the download started', 60_000);
      await new Promise((resolve) => setTimeout(resolve, 400));
      killed.kill('SIGKILL');
      await done;
      expect(log).not.toContain('"loaded"');
    } finally {
      await sandbox.close();
    }
    expect(await reports()).toEqual(before);

    sandbox = await startSandbox({ port, readyDelayMs: 1, scaleRows: 100_000 });
    try {
      const rerun = await runCli(args, { env: env(sandbox, dir), cwd: dir });
      expect(rerun.code, rerun.stderr).toBe(0);
    } finally {
      await sandbox.close();
    }
    const after = await reports();
    expect(after).toEqual([expect.stringMatching(/\|100000$/)]);
    expect(after).not.toEqual(before);
  }, 180_000);
});

describe('--load where other features meet (a review of the merged features)', () => {
  it('windows split by the platform, with a file per window too: one window at a time into the table, every row once; the done event counts rows once', async () => {
    await withSandbox({ readyDelayMs: 1, failOverDays: 3 }, async (sandbox, dir) => {
      const request = ['--since', '2026-09-01', '--until', '2026-09-28', '--breakdowns', 'DAILY,COUNTRY', '--poll-interval', '20ms'];
      const file = join(dir, 'w.duckdb');
      const result = await runCli(['run', 'buyer', ...request, '--chunk', 'week', '--concurrency', '8', '-o', join(dir, 'out-{since}.csv'), '--load', `duckdb:${file}`, '--log-format', 'json'], { env: env(sandbox, dir), timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; rows?: number });
      expect(lines.some((line) => line.event === 'split')).toBe(true);
      // the reference: the same period by day, as one JSON document (the sandbox refuses more than 3 days a report)
      const single = await runCli(['run', 'buyer', ...request, '--chunk', 'day', '--json', '-q'], { env: env(sandbox, dir), timeoutMs: 120_000 });
      expect(single.code, single.stderr).toBe(0);
      const expected = (JSON.parse(single.stdout) as { data: unknown[] }).data.length;
      expect(expected).toBeGreaterThan(28);
      expect(await duckdbRows(file, 'SELECT count(*) FROM buyer_report')).toEqual([String(expected)]);
      expect(await duckdbRows(file, 'SELECT count(*) FROM (SELECT DISTINCT date, country FROM buyer_report)')).toEqual([String(expected)]);
      expect(lines.find((line) => line.event === 'done')?.rows).toBe(expected);
    });
  }, 150_000);

  it('a relative duckdb:PATH is recorded absolute: the same command from another folder is refused, not taken for the database loaded', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const state = join(dir, 's.json');
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY', '--load', 'duckdb:w.duckdb', '--state', state, '-q'];
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(dir, 'a'));
      mkdirSync(join(dir, 'b'));
      expect((await runCli(args, { env: env(sandbox, dir), cwd: join(dir, 'a') })).code).toBe(0);
      expect(readFileSync(state, 'utf8')).toContain(JSON.stringify(`duckdb:${join(dir, 'a', 'w.duckdb')}`).slice(1, -1));
      const other = await runCli(args, { env: env(sandbox, dir), cwd: join(dir, 'b') });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/--load is buyer_report in duckdb:.*[/\\]b[/\\]w\.duckdb here, buyer_report in duckdb:.*[/\\]a[/\\]w\.duckdb in the state file/);
    });
  }, 60_000);

  it('MONTHLY with --load is not split (a table would keep a month\'s halves side by side): one row per month and country', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const file = join(dir, 'm.duckdb');
      const request = ['--since', '2026-07-01', '--until', '2026-09-30', '--breakdowns', 'MONTHLY,COUNTRY', '--poll-interval', '20ms'];
      const result = await runCli(['run', 'buyer', ...request, '--load', `duckdb:${file}`, '-q'], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const single = await runCli(['run', 'buyer', ...request, '--json', '-q'], { env: env(sandbox, dir) });
      const expected = (JSON.parse(single.stdout) as { data: unknown[] }).data.length;
      expect(await duckdbRows(file, 'SELECT count(*) FROM buyer_report')).toEqual([String(expected)]);
    });
  }, 60_000);
});
