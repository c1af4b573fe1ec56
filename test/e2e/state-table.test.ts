// Issue 31, item 2: `--state table` keeps a run's state in the --load database (_reporting_state),
// each window's done-record committed in the same transaction as its rows. Checked by the
// databases' own clients (DuckDB's node client, psql), with real processes: runs killed at random
// points (the table's rows and the state agree after every kill), two runs at once (one exits 2
// naming the holder), and `state show|forget|unlock DATABASE`.

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { POSTGRES_AVAILABLE } from '../helpers/postgres.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { sandboxEnv, sleep, withSandbox } from '../helpers/http.js';
import { loadTargets, type Target } from '../helpers/load-targets.js';

const { targets, postgresTarget, cluster } = loadTargets('stab');

const submits = (sandbox: Sandbox) => sandbox.reports().filter((report) => report.events.some((e) => e.kind === 'submit')).length;

const RUN = ['run', 'buyer', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays', '--chunk', 'day', '--table', 'daily', '--state', 'table', '--poll-interval', '20ms'];

interface Entry { status: string; rows: number | null; reportId: string | null; loaded: { rows: number; reportIds?: string[] } | null }

/** The state's windows as the database holds them: since (Unix) -> record. */
async function stateRows(db: Target): Promise<Map<number, Entry>> {
  // a run killed before it made the table left none
  const exists = await db.select("SELECT count(*) FROM information_schema.tables WHERE table_name = '_reporting_state'");
  if (exists[0] === '0') return new Map();
  const rows = await db.select('SELECT window_since, body FROM _reporting_state WHERE window_since >= 0 ORDER BY window_since');
  return new Map(rows.map((row) => {
    const at = row.indexOf('|');
    return [Number(row.slice(0, at)), JSON.parse(row.slice(at + 1)) as Entry];
  }));
}

/** The table's rows per window: since (Unix) -> rows and report IDs. */
async function tableRows(db: Target): Promise<Map<number, { rows: number; ids: string[] }>> {
  const exists = await db.select("SELECT count(*) FROM information_schema.tables WHERE table_name = 'daily'");
  if (exists[0] === '0') return new Map();
  const rows = await db.select("SELECT CAST(EXTRACT(EPOCH FROM _window_since) AS BIGINT), count(*), string_agg(DISTINCT _report_id, ',') FROM daily GROUP BY 1 ORDER BY 1");
  return new Map(rows.map((row) => {
    const [since, count, ids] = row.split('|');
    return [Number(since), { rows: Number(count), ids: (ids ?? '').split(',').sort() }];
  }));
}

/** Every window with rows is recorded done with those rows and reports; every window recorded done holds them. */
async function agree(db: Target): Promise<{ done: number }> {
  const state = await stateRows(db);
  const table = await tableRows(db);
  for (const [since, held] of table) {
    const entry = state.get(since);
    expect(entry?.status, `window ${since} has ${held.rows} rows in the table`).toBe('done');
    expect(entry?.loaded?.rows).toBe(held.rows);
    expect([...entry?.loaded?.reportIds ?? []].sort()).toEqual(held.ids);
  }
  const done = [...state].filter(([, entry]) => entry.status === 'done');
  for (const [since, entry] of done) expect(table.get(since)?.rows, `window ${since} recorded done`).toBe(entry.loaded?.rows);
  return { done: done.length };
}

describe.each(targets)('--state table in %s', (name, target, skip) => {
  it.skipIf(skip)('keeps the state beside the rows: a second run fetches nothing; state show, forget and unlock take the database', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const db = target(dir);
      const env = sandboxEnv(sandbox, dir);
      const first = await runCli([...RUN, '--since', '-3d', '--until', 'yesterday', '--load', db.load, '--log-format', 'json'], { env, cwd: dir });
      expect(first.code, first.stderr).toBe(0);
      expect((await agree(db)).done).toBe(3);
      // one header row and three windows, under one key: the table and the scope
      const keys = await db.select('SELECT DISTINCT state_key FROM _reporting_state');
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/^daily base=http:\/\/127\.0\.0\.1:\d+;side=buyer;breakdowns=COUNTRY,DAILY;filters=-;account=env$/);
      expect(await db.select('SELECT count(*) FROM _reporting_state')).toEqual(['4']);

      const again = await runCli([...RUN, '--since', '-3d', '--until', 'yesterday', '--load', db.load], { env, cwd: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/nothing to fetch/);
      expect(submits(sandbox)).toBe(3);

      const shown = await runCli(['state', 'show', db.load], { env, cwd: dir });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/windows:\s+3 \(3 done\)/);
      expect(shown.stdout).not.toMatch(/pg-s3cret/);
      // --key: the whole key, its table alone, or a part of it; another is refused naming those there are
      const byTable = await runCli(['state', 'show', db.load, '--key', 'daily'], { env, cwd: dir });
      expect(byTable.code, byTable.stderr).toBe(0);
      expect(byTable.stdout).toBe(shown.stdout);
      const wrong = await runCli(['state', 'show', db.load, '--key', 'weekly'], { env, cwd: dir });
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain(`holds no state "weekly" in _reporting_state; it holds "${keys[0]}"`);
      const table = await runCli(['state', 'show', 'table'], { env, cwd: dir });
      expect(table.code).toBe(2);
      expect(table.stderr).toMatch(/name that database here/);
      const forgot = await runCli(['state', 'forget', db.load, 'all'], { env, cwd: dir });
      expect(forgot.code, forgot.stderr).toBe(0);
      expect((await stateRows(db)).size).toBe(3);
      expect([...(await stateRows(db)).values()].every((entry) => entry.status === 'pending')).toBe(true);
      const unlocked = await runCli(['state', 'unlock', db.load], { env, cwd: dir });
      expect(unlocked.code, unlocked.stderr).toBe(0);
      expect(unlocked.stderr).toMatch(/not locked/);
      // forgotten: the next run loads the three days again, and the state and the table agree
      const third = await runCli([...RUN, '--since', '-3d', '--until', 'yesterday', '--load', db.load], { env, cwd: dir });
      expect(third.code, third.stderr).toBe(0);
      expect(submits(sandbox)).toBe(6);
      expect((await agree(db)).done).toBe(3);
      if (name === 'postgres') expect(await db.select('SELECT count(*) FROM daily')).toEqual([String(7 * 3)]);
    });
  }, 120_000);

  it.skipIf(skip)('runs killed at random points: the rows and the state agree after every kill, and the last run ends the period', async () => {
    await withSandbox({ readyDelayMs: 1, workMsPerDay: 250 }, async (sandbox, dir) => {
      const db = target(dir);
      const env = sandboxEnv(sandbox, dir);
      const args = [...RUN, '--since', '-8d', '--until', 'yesterday', '--concurrency', '2', '--load', db.load];
      for (let round = 0; round < 4; round++) {
        const child = startCli(args, { env, cwd: dir });
        const done = collect(child);
        await sleep(300 + Math.floor(Math.random() * 1500));
        child.kill('SIGKILL');
        await done;
        await agree(db);
      }
      const last = await runCli(args, { env, cwd: dir });
      expect(last.code, last.stderr).toBe(0);
      expect((await agree(db)).done).toBe(8);
    });
  }, 180_000);

  it.skipIf(skip)('two runs at once: one loads, the other exits 2 naming the holder', async () => {
    await withSandbox({ readyDelayMs: 1, workMsPerDay: 300 }, async (sandbox, dir) => {
      const db = target(dir);
      const env = sandboxEnv(sandbox, dir);
      const args = [...RUN, '--since', '-4d', '--until', 'yesterday', '--load', db.load];
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all([runCli([...args, '--full-refresh'], { env, cwd: dir }), sleep(50).then(() => runCli([...args, '--full-refresh'], { env, cwd: dir }))]);
        const codes = results.map((r) => r.code).sort();
        expect(codes, results.map((r) => r.stderr).join('\n')).toEqual([0, 2]);
        const loser = results.find((r) => r.code === 2);
        expect(loser?.stderr).toMatch(name === 'duckdb' ? /held by another process \(process \d+\)/ : /in use by process \d+/);
        if (name !== 'duckdb') expect(loser?.stderr).toContain('another run with this state is still going');
        // the file's wait is the state's: --lock-wait (--max-wait, the load's, does not wait for it)
        else expect(loser?.stderr).toMatch(/^hint: wait for the other run to end, or give --lock-wait to wait for the file$/m);
        expect(loser?.stderr.trim().split('\n').length).toBeLessThanOrEqual(3);
        expect((await agree(db)).done).toBe(4);
      }
      // with --lock-wait the second waits (for Postgres' key, for DuckDB's file), saying so as it
      // begins, then loads in turn
      const waiting = [...args, '--full-refresh', '--lock-wait', '30s'];
      const both = await Promise.all([runCli(waiting, { env, cwd: dir }), sleep(50).then(() => runCli(waiting, { env, cwd: dir }))]);
      expect(both.map((r) => r.code), both.map((r) => r.stderr).join('\n')).toEqual([0, 0]);
      const line = name === 'duckdb'
        ? /^warning: waiting up to 30s for the DuckDB database duckdb:.*\.duckdb \(--lock-wait\): another process holds it \(process \d+\)$/gm
        : /^warning: waiting up to \d+s for the state's lock \(--lock-wait\): .* is in use by process \d+/gm;
      const said = both.map((r) => r.stderr.match(line) ?? []);
      expect(said.flat(), both.map((r) => r.stderr).join('\n')).toHaveLength(1);
      expect((await agree(db)).done).toBe(4);
    });
  }, 180_000);
});

describe('--state table in postgres: a window is loaded and recorded at once', () => {
  it.skipIf(!POSTGRES_AVAILABLE)('with the state\'s own writes held back, windows loaded meanwhile are recorded done by their own transactions; a kill then loses no record', async () => {
    await withSandbox({ readyDelayMs: 1000 }, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      for (let round = 0; round < 3; round++) {
        // a database each round (--full-refresh would start the state over with the rows still there)
        const db = postgresTarget();
        const args = [...RUN, '--since', '-6d', '--until', 'yesterday', '--concurrency', '6', '--load', db.load, '--log-format', 'json'];
        const child = startCli(args, { env, cwd: dir });
        const result = collect(child);
        let loaded = 0;
        let blocker: ReturnType<typeof spawn> | undefined;
        const twoMore = new Promise<void>((resolve) => {
          child.stderr?.on('data', (chunk: Buffer) => {
            for (const line of chunk.toString().split('\n')) {
              if (!line.includes('"event":"loaded"')) continue;
              loaded++;
              // the first window loaded: the state's header row is held (psql, FOR UPDATE), so every
              // write of the state's own connection waits; the windows loaded next record
              // themselves in their transactions, or not at all
              if (loaded === 1) {
                const c = cluster();
                blocker = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(c.port), '-U', c.user, '-d', new URL(db.load).pathname.slice(1),
                  '-c', 'BEGIN; SELECT 1 FROM _reporting_state WHERE window_since = -1 FOR UPDATE; SELECT pg_sleep(60); COMMIT;'], { env: { ...process.env, PGPASSWORD: c.password }, stdio: 'ignore' });
                // (a busy machine may not have submitted every window before the hold: those wait)
                setTimeout(resolve, 8000);
              }
              if (loaded >= 3) resolve();
            }
          });
        });
        await Promise.race([twoMore, result]);
        child.kill('SIGKILL');
        await result;
        blocker?.kill('SIGKILL');
        // at least one window loaded while the state's own writes were held
        expect(loaded, 'windows loaded before the kill').toBeGreaterThanOrEqual(2);
        await sleep(200);
        // every window the table holds is recorded done with its rows and reports
        expect((await agree(db)).done).toBeGreaterThanOrEqual(loaded);
      }
    });
  }, 180_000);
});

describe('--state table refused where it cannot be', () => {
  it('without --load, and --state with a database URL, exit 2 before any request', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      const noLoad = await runCli(['run', 'buyer', '--since', '-2d', '--until', 'yesterday', '--metrics', 'displays', '--state', 'table', '-o', 'x.csv'], { env, cwd: dir });
      expect(noLoad.code).toBe(2);
      expect(noLoad.stderr).toMatch(/--state table keeps the state in the --load database/);
      const url = await runCli(['run', 'buyer', '--since', '-2d', '--until', 'yesterday', '--metrics', 'displays', '--state', 'duckdb:w.duckdb', '--load', 'duckdb:w.duckdb'], { env, cwd: dir });
      expect(url.code).toBe(2);
      expect(url.stderr).toMatch(/--state table/);
      expect(submits(sandbox)).toBe(0);
    });
  });
});
