// Two runs of one process (`jobs run`) loading two tables of one DuckDB file share its database, and
// memory_limit is the database's: while both windows are being loaded it is the sum of what each
// table's width asks for, and goes back as each window's transaction ends. Read back with
// current_setting('memory_limit'), compared with what DuckDB shows for the same SET.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { TableDestination, type TableSpec } from '../../src/destinations/table.js';
import { loadMemoryLimit, openDuckDb } from '../../src/load/duckdb.js';
import type { Column } from '../../src/report/schema.js';
import type { Window } from '../../src/report/windows.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/tmp.js';

const D1 = Date.parse('2026-11-01T00:00:00+01:00') / 1000;
const window: Window = { since: D1, until: D1 + 86_399 };
const signal = new AbortController().signal;

const columnsOf = (metrics: number): Column[] => [
  { name: 'date', type: 'date', nullable: true, key: true },
  ...Array.from({ length: metrics }, (_, i): Column => ({ name: `m${i}`, type: 'int64', nullable: true, key: false })),
];
const rowsOf = (metrics: number, count: number) => Array.from({ length: count }, (_, r) =>
  Object.fromEntries([['date', '2026-11-01'], ...Array.from({ length: metrics }, (_, i) => [`m${i}`, r * 100 + i])]));
const body = (rows: Record<string, unknown>[]) => (async function* () {
  yield Buffer.from(JSON.stringify({ data: rows, summary: null }));
})();

/** memory_limit as DuckDB shows it after SET memory_limit = '<limit>' */
async function shown(limit: string): Promise<string> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`SET memory_limit = '${limit}'`);
    return String((await connection.runAndReadAll("SELECT current_setting('memory_limit')")).getRows()[0]?.[0]);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

describe('DuckDB: one database, two tables loading at once', () => {
  it("memory_limit is the sum over the windows being loaded, back to each one's as the other commits; both tables get their rows", async () => {
    const file = join(tempDir(), 'shared.duckdb');
    const spec = (table: string, metrics: number): TableSpec => ({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: [table], columns: columnsOf(metrics), selected: false, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
      period: window, now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined,
    });
    const narrow = new TableDestination(spec('narrow', 3));
    const wide = new TableDestination(spec('wide', 120));
    // the tables' widths: the export's columns and five metadata columns
    const a = loadMemoryLimit(1 + 3 + 5);
    const b = loadMemoryLimit(1 + 120 + 5);
    const watcher = await openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal);
    const limit = async () => (await watcher.query("SELECT current_setting('memory_limit')"))[0]?.[0];
    try {
      const first = await narrow.begin(window, window, 'r1');
      await first.take(body(rowsOf(3, 5000)));
      expect(await limit()).toBe(await shown(`${a}MB`));
      const second = await wide.begin(window, window, 'r2');
      await second.take(body(rowsOf(120, 3000)));
      expect(await limit()).toBe(await shown(`${a + b}MB`));
      await first.commit();
      expect(await limit()).toBe(await shown(`${b}MB`));
      await second.commit();
      expect(await limit()).toBe(await shown('64MB'));
      await narrow.finish();
      await wide.finish();
      expect(await watcher.query('SELECT count(*), sum(m2) FROM narrow')).toEqual([['5000', String(rowsOf(3, 5000).reduce((sum, row) => sum + (row.m2 as number), 0))]]);
      expect(await watcher.query('SELECT count(*), sum(m119) FROM wide')).toEqual([['3000', String(rowsOf(120, 3000).reduce((sum, row) => sum + (row.m119 as number), 0))]]);
    } finally {
      await narrow.abort();
      await wide.abort();
      await watcher.close();
    }
  }, 60_000);
});

describe('DuckDB: memory_limit for a window that replaces rows', () => {
  it('replacing 100,000 rows of 30 columns of distinct text commits (the delete versions and the commit are counted), and the table holds the new rows only', async () => {
    const file = join(tempDir(), 'replace.duckdb');
    const columns: Column[] = [{ name: 'date', type: 'date', nullable: true, key: true },
      ...Array.from({ length: 30 }, (_, i): Column => ({ name: `c${i}`, type: 'string', nullable: true, key: false }))];
    const rows = (load: number) => Array.from({ length: 100_000 }, (_, r) =>
      Object.fromEntries([['date', '2026-11-01'], ...Array.from({ length: 30 }, (_, c) => [`c${c}`, `v${load}-${r}-${c}-${(r * 2654435761 + c) % 1000003}x`])]));
    const destination = new TableDestination({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
      period: window, now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined,
    });
    try {
      for (const load of [1, 2]) {
        const out = await destination.begin(window, window, `r${load}`);
        await out.take(body(rows(load)));
        expect((await out.commit())[0]?.rows).toBe(100_000);
      }
      await destination.finish();
    } finally {
      await destination.abort();
    }
    expect(await duckdbRows(file, "SELECT _report_id, count(*), count(DISTINCT c29), min(c0 LIKE 'v2-%') FROM t GROUP BY 1")).toEqual(['r2|100000|100000|true']);
  }, 120_000);
});

describe('DuckDB: night after night into a table that holds rows', () => {
  // each night opens the file anew (its database closed the night before, as a new process would),
  // loads a new day and commits it into the table the previous nights filled; before, the commit
  // failed ("failed to pin block"), and a wide table's checkpoint at closing failed, leaving the
  // WAL (with a failed checkpoint's marker) that the next open could not replay
  const textColumns = (count: number): Column[] => [{ name: 'date', type: 'date', nullable: true, key: true },
    ...Array.from({ length: count }, (_, i): Column => ({ name: `c${i}`, type: 'string', nullable: true, key: false }))];
  const textRows = (night: number, count: number, columns: number) => Array.from({ length: count }, (_, r) =>
    Object.fromEntries([['date', '2026-11-01'], ...Array.from({ length: columns }, (_, c) => [`c${c}`, `v${night}-${r}-${c}-${(r * 2654435761 + c) % 1000003}x`])]));

  it.each([[30, 30_000], [100, 5_000]])('%i columns of distinct text, %i rows a night, 3 nights: each commits, no WAL is left, DuckDB\'s client reads every night back', async (width, count) => {
    const file = join(tempDir(), 'nights.duckdb');
    for (let night = 0; night < 3; night++) {
      const day: Window = { since: D1 + night * 86_400, until: D1 + night * 86_400 + 86_399 };
      const destination = new TableDestination({
        connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
        table: ['t'], columns: textColumns(width), selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
        period: day, now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined,
      });
      try {
        const out = await destination.begin(day, day, `r${night}`);
        await out.take(body(textRows(night, count, width)));
        expect((await out.commit())[0]?.rows).toBe(count);
        await destination.finish();
      } finally {
        await destination.abort();
      }
      expect(existsSync(`${file}.wal`), `night ${night}: a WAL was left`).toBe(false);
    }
    expect(await duckdbRows(file, 'SELECT _report_id, count(*), count(DISTINCT c0) FROM t GROUP BY 1 ORDER BY 1'))
      .toEqual([0, 1, 2].map((night) => `r${night}|${count}|${count}`));
  }, 120_000);
});

describe('DuckDB: a file with a WAL left beside it', () => {
  it('a wide table\'s WAL (its writer closed without a checkpoint) is replayed as the loader opens the file: the night loads, no WAL is left', async () => {
    const file = join(tempDir(), 'wal.duckdb');
    // another client leaves 5,000 rows of 100 text columns in the WAL: replaying them needs more
    // than the loader's opening memory_limit (before: "held by another process", exit 2)
    const cols = Array.from({ length: 100 }, (_, k) => `md5((range * ${k + 1})::varchar) || 'x' AS c${k}`).join(', ');
    const other = await DuckDBInstance.create(file, { threads: '1' });
    const connection = await other.connect();
    await connection.run(`CREATE TABLE other AS SELECT range AS id, ${cols} FROM range(5000)`);
    await connection.run('CHECKPOINT');
    await connection.run('PRAGMA disable_checkpoint_on_shutdown');
    await connection.run("SET checkpoint_threshold = '10GB'");
    await connection.run(`INSERT INTO other SELECT range + 5000 AS id, ${cols} FROM range(5000)`);
    connection.closeSync();
    other.closeSync();
    expect(existsSync(`${file}.wal`)).toBe(true);

    const destination = new TableDestination({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns: columnsOf(3), selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
      period: window, now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined,
    });
    try {
      const out = await destination.begin(window, window, 'r1');
      await out.take(body(rowsOf(3, 1000)));
      expect((await out.commit())[0]?.rows).toBe(1000);
      await destination.finish();
    } finally {
      await destination.abort();
    }
    expect(existsSync(`${file}.wal`)).toBe(false);
    expect(await duckdbRows(file, 'SELECT (SELECT count(*) FROM other), (SELECT count(*) FROM t)')).toEqual(['10000|1000']);
  }, 60_000);
});
