// The table destination against the real engines: DuckDB embedded, Postgres in a throwaway
// cluster (test/helpers/postgres.ts). Report bodies are crafted here; the table is read back by
// SQL (psql for Postgres, DuckDB's own client for DuckDB).

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { TableDestination, type TableSpec } from '../../src/destinations/table.js';
import { openDuckDb } from '../../src/load/duckdb.js';
import { openPostgres } from '../../src/load/postgres.js';
import { parseLoadTarget } from '../../src/load/engines.js';
import type { Column } from '../../src/report/schema.js';
import type { Window } from '../../src/report/windows.js';
import { POSTGRES_AVAILABLE, startCluster, type Cluster } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';

const DAY = 86_400;
const D1 = Date.parse('2026-11-01T00:00:00+01:00') / 1000;
const day = (n: number): Window => ({ since: D1 + n * DAY, until: D1 + (n + 1) * DAY - 1 });
const span = (a: number, b: number): Window => ({ since: day(a).since, until: day(b).until });

const COLUMNS: Column[] = [
  { name: 'date', type: 'date', nullable: true, key: true },
  { name: 'country', type: 'string', nullable: true, key: true },
  { name: 'displays', type: 'int64', nullable: true, key: false },
  { name: 'revenueEuro', type: 'double', nullable: true, key: false },
];

const body = (rows: Record<string, unknown>[]) => (async function* () {
  yield Buffer.from(JSON.stringify({ data: rows, summary: null }));
})();
const rowsOf = (w: Window, countries: string[], displays = 10) =>
  countries.map((country) => ({ date: new Date((w.since + 3600) * 1000).toISOString().slice(0, 10), country, displays, revenueEuro: 1.25 }));

interface Engine {
  name: 'duckdb' | 'postgres';
  spec(overrides?: Partial<TableSpec>): TableSpec;
  /** rows as text, `|`-separated, sorted */
  select(sql: string): Promise<string[]>;
}

let cluster: Cluster | undefined;
let pgDb = 0;

beforeAll(async () => {
  if (POSTGRES_AVAILABLE) cluster = await startCluster();
}, 60_000);
afterAll(() => cluster?.stop());

function duckdbEngine(): Engine {
  const file = join(tempDir(), 'w.duckdb');
  const signal = new AbortController().signal;
  return {
    name: 'duckdb',
    spec: (overrides = {}) => baseSpec(() => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal), overrides),
    async select(sql) {
      const instance = await DuckDBInstance.create(file);
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll(sql);
        return reader.getRows().map((row) => row.map((v) => (v === null ? 'NULL' : String(v))).join('|')).sort();
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    },
  };
}

function postgresEngine(): Engine {
  const c = cluster as Cluster;
  const db = `t${++pgDb}`;
  c.psql(`CREATE DATABASE ${db}`);
  const target = parseLoadTarget(c.url(db), '/');
  return {
    name: 'postgres',
    spec: (overrides = {}) => baseSpec(() => openPostgres(target, {}), overrides),
    async select(sql) {
      return c.psql(sql, db).split('\n').filter(Boolean).sort();
    },
  };
}

function baseSpec(connect: TableSpec['connect'], overrides: Partial<TableSpec>): TableSpec {
  return { connect, table: ['buyer_daily'], columns: COLUMNS, selected: false, scope: 'scope-a', onSchemaChange: 'fail', fullRefresh: false, period: span(0, 6), now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined, ...overrides };
}

/** Loads each window's rows, one transaction each, as the engine would. */
async function load(spec: TableSpec, windows: [Window, Record<string, unknown>[]][]) {
  const destination = new TableDestination(spec);
  const committed = [];
  try {
    for (const [window, rows] of windows) {
      const output = await destination.begin(window, window, `r${window.since}`);
      await output.take(body(rows));
      committed.push(...await output.commit());
    }
    await destination.finish();
  } catch (error) {
    await destination.abort();
    throw error;
  }
  return committed;
}

const engines: [string, () => Engine, boolean][] = [
  ['duckdb', duckdbEngine, false],
  ['postgres', postgresEngine, !POSTGRES_AVAILABLE],
];

describe.each(engines)('table destination: %s', (_name, make, skip) => {
  it.skipIf(skip)('each window replaces its own rows of its scope, and only them; zero rows leave zero rows', async () => {
    const engine = make();
    await load(engine.spec(), [[day(0), rowsOf(day(0), ['FR', 'DE'])], [day(1), rowsOf(day(1), ['FR', 'DE'])]]);
    // another scope in the same table, same days
    await load(engine.spec({ scope: 'scope-b' }), [[day(0), rowsOf(day(0), ['IT'])]]);
    // day 0 again (restated): new numbers; day 1 restated to nothing
    await load(engine.spec(), [[day(0), rowsOf(day(0), ['FR'], 99)], [day(1), []]]);
    expect(await engine.select('SELECT _scope, CAST(date AS VARCHAR), country, displays FROM buyer_daily')).toEqual([
      'scope-a|2026-11-01|FR|99',
      'scope-b|2026-11-01|IT|10',
    ]);
  });

  it.skipIf(skip)('metadata columns: report ID, the window as recorded, the scope, when; a null stays NULL and an empty text stays empty', async () => {
    const engine = make();
    const committed = await load(engine.spec(), [[day(2), [{ date: '2026-11-03', country: null, displays: 1, revenueEuro: null }, { date: '2026-11-03', country: '', displays: 2, revenueEuro: 0.1 }]]]);
    expect(committed.map((c) => [c.table, c.rows, c.outcome])).toEqual([['buyer_daily', 2, 'written']]);
    const rows = await engine.select(`SELECT displays, coalesce(country, 'NULL-country'), length(country), _report_id, CAST(EXTRACT(EPOCH FROM _window_since) AS BIGINT), CAST(EXTRACT(EPOCH FROM _window_until) AS BIGINT), CAST(EXTRACT(EPOCH FROM _loaded_at) AS BIGINT) FROM buyer_daily`);
    expect(rows).toEqual([
      `1|NULL-country|NULL|r${day(2).since}|${day(2).since}|${day(2).until}|${Date.parse('2026-11-25T06:00:00Z') / 1000}`,
      `2||0|r${day(2).since}|${day(2).since}|${day(2).until}|${Date.parse('2026-11-25T06:00:00Z') / 1000}`,
    ]);
  });

  it.skipIf(skip)('a window overlapping an earlier load only partly is refused, nothing changed; --full-refresh replaces the period, and refuses rows straddling its edges', async () => {
    const engine = make();
    await load(engine.spec(), [[span(0, 6), rowsOf(day(0), ['FR'])]]); // a week loaded with --chunk week
    const refused = await load(engine.spec(), [[day(2), rowsOf(day(2), ["DE"])]]).catch((error: unknown) => error as Error & { hint?: string });
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/loaded for 2026-11-01\.\.2026-11-07, which overlaps the window 2026-11-03 only partly/);
    expect((refused as { hint?: string }).hint).toMatch(/--full-refresh/);
    expect(await engine.select('SELECT country FROM buyer_daily')).toEqual(['FR']);
    // the period cuts the week: refused before anything is written
    await expect(load(engine.spec({ fullRefresh: true, period: span(0, 2) }), [[day(0), rowsOf(day(0), ['DE'])]])).rejects.toThrow(/straddle/);
    expect(await engine.select('SELECT country FROM buyer_daily')).toEqual(['FR']);
    // the whole week, by days
    await load(engine.spec({ fullRefresh: true, period: span(0, 6) }), [0, 1, 2, 3, 4, 5, 6].map((n) => [day(n), rowsOf(day(n), ['DE'])] as [Window, Record<string, unknown>[]]));
    expect(await engine.select('SELECT CAST(date AS VARCHAR), country FROM buyer_daily')).toEqual([0, 1, 2, 3, 4, 5, 6].map((n) => `2026-11-0${n + 1}|DE`));
  });

  it.skipIf(skip)('schema drift: fail prints the difference and writes nothing; add-columns adds them nullable; a type change always fails', async () => {
    const engine = make();
    const narrow = COLUMNS.slice(0, 3);
    await load(engine.spec({ columns: narrow, selected: true }), [[day(0), rowsOf(day(0), ['FR'])]]);
    await expect(load(engine.spec(), [[day(1), rowsOf(day(1), ['FR'])]])).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/new in the export: revenueEuro/) });
    expect(await engine.select('SELECT count(*) FROM buyer_daily')).toEqual(['1']);
    await load(engine.spec({ onSchemaChange: 'add-columns' }), [[day(1), rowsOf(day(1), ['FR'])]]);
    expect(await engine.select('SELECT CAST(date AS VARCHAR), coalesce(CAST("revenueEuro" AS VARCHAR), \'-\') FROM buyer_daily')).toEqual(['2026-11-01|-', '2026-11-02|1.25']);
    const retyped = COLUMNS.map((c) => (c.name === 'displays' ? { ...c, type: 'string' as const } : c));
    await expect(load(engine.spec({ columns: retyped, onSchemaChange: 'add-columns' }), [[day(2), rowsOf(day(2), ['FR'])]])).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/type changed: displays/) });
  });

  it.skipIf(skip)('a hostile column name is a quoted column, never SQL; a row field the table has no column for is an error', async () => {
    const engine = make();
    const hostile = 'a"; DROP TABLE x; --';
    const columns: Column[] = [...COLUMNS.slice(0, 2), { name: hostile, type: 'string', nullable: true, key: false }];
    await load(engine.spec({ columns, table: ['t"; DROP TABLE buyer_daily; --'] }), [[day(0), [{ date: '2026-11-01', country: 'FR', [hostile]: "x'); DROP TABLE y; --" }]]]);
    expect(await engine.select(`SELECT "a""; DROP TABLE x; --" FROM "t""; DROP TABLE buyer_daily; --"`)).toEqual(["x'); DROP TABLE y; --"]);
    await expect(load(engine.spec({ columns: COLUMNS.slice(0, 2) }), [[day(1), [{ date: '2026-11-02', country: 'FR', surprise: 1 }]]])).rejects.toThrow(/^the table buyer_daily does not have the export.s columns: new in the rows of 2026-11-02: surprise; nothing of this window was loaded$/);
  });

  it.skipIf(skip)('a later piece of a window whose transaction is not open is refused, never loaded in place of the whole window', async () => {
    const engine = make();
    await load(engine.spec(), [[span(0, 1), [...rowsOf(day(0), ['FR']), ...rowsOf(day(1), ['FR'])]]]);
    const destination = new TableDestination(engine.spec());
    await expect(destination.begin(day(1), span(0, 1), 'r2')).rejects.toThrow(/without its first piece/);
    await destination.abort();
    expect(await engine.select('SELECT count(*) FROM buyer_daily')).toEqual(['2']);
  });

  it.skipIf(skip)('a split window: its first piece is restartable (the window starts again), a later piece is not (its rows would lose the first piece\'s)', async () => {
    const engine = make();
    const destination = new TableDestination(engine.spec());
    try {
      const first = await destination.begin(day(0), span(0, 1), 'r1');
      expect(first.restartable).toBe(true);
      await first.take(body(rowsOf(day(0), ['FR'])));
      expect(await first.commit()).toEqual([]);
      const second = await destination.begin(day(1), span(0, 1), 'r2');
      expect(second.restartable).toBe(false);
      await second.take(body(rowsOf(day(1), ['FR'])));
      expect((await second.commit()).map((c) => c.rows)).toEqual([2]);
    } finally {
      await destination.finish();
    }
    expect(await engine.select('SELECT count(*) FROM buyer_daily')).toEqual(['2']);
  });

  it.skipIf(skip)('add-columns: the copy of a window\'s body goes at a forced exit (registered with the host), and is forgotten once the window commits', async () => {
    const engine = make();
    const registered = new Set<() => void>();
    const atExit = (cleanup: () => void) => { registered.add(cleanup); return () => { registered.delete(cleanup); }; };
    const temp = mkdtempSync(join(tmpdir(), 'table-copies-'));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    try {
      const killed = new TableDestination(engine.spec({ onSchemaChange: 'add-columns', atExit }));
      const out = await killed.begin(day(0), day(0), 'r1');
      await out.take(body(rowsOf(day(0), ['FR'])));
      expect(readdirSync(temp)).toEqual([expect.stringMatching(/^reporting-load-/)]);
      expect(registered.size).toBe(1);
      // what main.ts runs when the process is made to exit (a second Ctrl-C) before the commit
      for (const cleanup of registered) cleanup();
      expect(readdirSync(temp)).toEqual([]);
      await killed.abort();
      registered.clear();
      const kept = new TableDestination(engine.spec({ onSchemaChange: 'add-columns', atExit }));
      const again = await kept.begin(day(1), day(1), 'r2');
      await again.take(body(rowsOf(day(1), ['FR'])));
      await again.commit();
      await kept.finish();
      expect(readdirSync(temp)).toEqual([]);
      expect(registered.size).toBe(0);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      rmSync(temp, { recursive: true, force: true });
    }
  });

  it.skipIf(skip)('add-columns: fields first seen in the middle of a window (a later chunk, a later piece, one after another) add their columns, and the window is loaded once', async () => {
    const engine = make();
    await load(engine.spec(), [[day(5), rowsOf(day(5), ['FR'])]]);
    const spec = engine.spec({ onSchemaChange: 'add-columns' });
    const destination = new TableDestination(spec);
    // a body in chunks of 40 bytes: rows are appended before the new field comes
    const chunked = (rows: Record<string, unknown>[]) => (async function* () {
      const text = JSON.stringify({ data: rows, summary: null });
      for (let i = 0; i < text.length; i += 40) yield Buffer.from(text.slice(i, i + 40));
    })();
    const window = span(0, 1);
    const first = await destination.begin(day(0), window, 'r1');
    await first.take(chunked([...rowsOf(day(0), ['FR', 'DE']), { ...rowsOf(day(0), ['IT'])[0], extra1: 5 }, ...rowsOf(day(0), ['NL'])]));
    expect(await first.commit()).toEqual([]);
    const second = await destination.begin(day(1), window, 'r2');
    await second.take(chunked([...rowsOf(day(1), ['FR']), { ...rowsOf(day(1), ['DE'])[0], extra2: 'x' }, { ...rowsOf(day(1), ['ES'])[0], extra1: 7 }]));
    const [committed] = await second.commit();
    await destination.finish();
    expect(committed).toMatchObject({ rows: 7, outcome: 'written' });
    expect(await engine.select(`SELECT _report_id, CAST(date AS VARCHAR), country, coalesce(CAST(extra1 AS VARCHAR), 'NULL'), coalesce(extra2, 'NULL') FROM buyer_daily`)).toEqual([
      'r1|2026-11-01|DE|NULL|NULL', 'r1|2026-11-01|FR|NULL|NULL', 'r1|2026-11-01|IT|5|NULL', 'r1|2026-11-01|NL|NULL|NULL',
      'r2|2026-11-02|DE|NULL|x', 'r2|2026-11-02|ES|7|NULL', 'r2|2026-11-02|FR|NULL|NULL',
      `r${day(5).since}|2026-11-06|FR|NULL|NULL`,
    ].sort());
    // the same rows again: the sha256 of what was loaded is the same as if the table had had the columns from the start
    const again = new TableDestination(engine.spec({ onSchemaChange: 'add-columns', columns: [...COLUMNS, { name: 'extra1', type: 'string', nullable: true, key: false }, { name: 'extra2', type: 'string', nullable: true, key: false }] }));
    const a = await again.begin(day(0), window, 'r1');
    await a.take(chunked([...rowsOf(day(0), ['FR', 'DE']), { ...rowsOf(day(0), ['IT'])[0], extra1: 5 }, ...rowsOf(day(0), ['NL'])]));
    await a.commit();
    const b = await again.begin(day(1), window, 'r2');
    await b.take(chunked([...rowsOf(day(1), ['FR']), { ...rowsOf(day(1), ['DE'])[0], extra2: 'x' }, { ...rowsOf(day(1), ['ES'])[0], extra1: 7 }]));
    const [same] = await b.commit();
    await again.finish();
    expect(same?.sha256).toBe(committed?.sha256);
  });
});
