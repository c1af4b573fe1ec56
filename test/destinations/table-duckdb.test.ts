// DuckDB's appender fed a data chunk (2,048 rows) at a time (src/load/duckdb-chunks.ts): values
// written into the chunk's vectors must come back exactly, across chunk edges, for every column
// type; read back with DuckDB's own client.

import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { TableDestination, type TableSpec } from '../../src/destinations/table.js';
import { openDuckDb } from '../../src/load/duckdb.js';
import type { Column } from '../../src/report/schema.js';
import type { Window } from '../../src/report/windows.js';
import { tempDir } from '../helpers/tmp.js';
import { duckdbRows as select } from '../helpers/duckdb.js';

const D1 = Date.parse('2026-11-01T00:00:00Z') / 1000;
const WINDOW: Window = { since: D1, until: D1 + 86_399 };
const LOADED_AT = Date.parse('2026-11-25T06:00:00.123Z');

const COLUMNS: Column[] = [
  { name: 'seq', type: 'int64', nullable: true, key: true },
  { name: 'day', type: 'date', nullable: true, key: false },
  { name: 'at', type: 'timestamp', nullable: true, key: false },
  { name: 'big', type: 'int64', nullable: true, key: false },
  { name: 'country', type: 'string', nullable: true, key: false },
  { name: 'revenue', type: 'double', nullable: true, key: false },
];

// int64s a double cannot hold (2^53 + 1), the limits, 15 and 16 digits, negatives
const BIG = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '-9007199254740993', '123456789012345', '-999999999999999', '1000000000000000', '0', '-1', '4294967296', '-4294967297'];

/** Row k: NULLs and '' spread so that some fall on the chunks' edges (2,047, 2,048, 4,095...);
 * `big` is the digits as the platform writes them (a JSON number), or null. */
function rowOf(k: number): Record<string, string | number | null> {
  const edge = k % 2048 === 0 || k % 2048 === 2047;
  return {
    seq: k,
    day: k % 11 === 0 || edge ? null : `2026-${String(1 + (k % 12)).padStart(2, '0')}-${String(1 + (k % 28)).padStart(2, '0')}`,
    at: k % 13 === 0 ? null : `2026-11-01T${String(k % 24).padStart(2, '0')}:00:00+0${k % 3}:00`,
    big: k % 17 === 0 || edge ? null : BIG[k % BIG.length] as string,
    country: k % 3 === 0 ? null : k % 3 === 1 ? '' : `pays-é-${'x'.repeat(k % 20)}-${k}`,
    revenue: k % 7 === 0 || edge ? null : (k - 2500) / 7,
  };
}

/** The report body as the platform sends it: `big` as a bare JSON number, whatever its size. */
function bodyOf(rows: Record<string, string | number | null>[]) {
  const text = `{"data":[${rows.map((row) => `{${Object.entries(row).map(([key, value]) => `${JSON.stringify(key)}:${key === 'big' && value !== null ? value : JSON.stringify(value)}`).join(',')}}`).join(',')}],"summary":null}`;
  return (async function* () {
    yield Buffer.from(text);
  })();
}

describe('DuckDB: rows a data chunk at a time', () => {
  it('5,000 rows in two pieces of one window: every value exact across chunk edges; NULL stays NULL, \'\' stays \'\'; a column the export no longer writes is NULL', async () => {
    const file = join(tempDir(), 'c.duckdb');
    const signal = new AbortController().signal;
    const spec = (columns: Column[]): TableSpec => ({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns, selected: true, scope: 'scope-a', onSchemaChange: 'fail', fullRefresh: false,
      period: { since: D1 - 86_400, until: WINDOW.until }, now: () => LOADED_AT, atExit: () => () => undefined,
    });
    // an earlier day loaded with one more column, which this load does not write
    const first = new TableDestination(spec([...COLUMNS, { name: 'extra', type: 'string', nullable: true, key: false }]));
    const earlier = { since: D1 - 86_400, until: D1 - 1 };
    const out = await first.begin(earlier, earlier, 'r0');
    await out.take((async function* () { yield Buffer.from(JSON.stringify({ data: [{ seq: -1, extra: 'kept' }], summary: null })); })());
    await out.commit();
    await first.finish();

    const rows = Array.from({ length: 5000 }, (_, k) => rowOf(k));
    // a load of fewer columns than the table's is refused unless it says so (issue 30, item 8)
    const destination = new TableDestination({ ...spec(COLUMNS), onSchemaChange: 'allow-missing' });
    const half = { since: WINDOW.since, until: WINDOW.since + 43_199 };
    const a = await destination.begin(half, WINDOW, 'report-A');
    await a.take(bodyOf(rows.slice(0, 3000)));
    expect(await a.commit()).toEqual([]);
    const b = await destination.begin({ since: half.until + 1, until: WINDOW.until }, WINDOW, 'report-B');
    await b.take(bodyOf(rows.slice(3000)));
    const [committed] = await b.commit();
    await destination.finish();
    expect(committed?.rows).toBe(5000);

    const loaded = await select(file, `SELECT seq, coalesce(CAST(day AS VARCHAR), 'NULL'), coalesce(CAST(epoch_ms("at") AS VARCHAR), 'NULL'), coalesce(CAST(big AS VARCHAR), 'NULL'),
      coalesce(country, 'NULL'), revenue, coalesce(extra, 'NULL'), _report_id, epoch(_window_since), epoch(_window_until), epoch_ms(_loaded_at), _scope
      FROM t WHERE seq >= 0 ORDER BY seq`);
    const expected = rows.map((row, k) => [
      k,
      row.day ?? 'NULL',
      row.at === null ? 'NULL' : String(Date.parse(row.at as string)),
      row.big ?? 'NULL',
      row.country ?? 'NULL',
      row.revenue === null ? 'NULL' : String(row.revenue),
      'NULL',
      k < 3000 ? 'report-A' : 'report-B',
      WINDOW.since, WINDOW.until, LOADED_AT, 'scope-a',
    ].join('|'));
    expect(loaded).toHaveLength(5000);
    // first differing row, for a readable failure
    const wrong = loaded.findIndex((line, k) => line !== expected[k]);
    expect(wrong < 0 ? undefined : { got: loaded[wrong], want: expected[wrong] }).toBeUndefined();
    expect(await select(file, `SELECT count(*) FILTER (WHERE country IS NULL), count(*) FILTER (WHERE country = ''), count(*) FILTER (WHERE big IS NULL) FROM t WHERE seq >= 0`))
      .toEqual([`${rows.filter((r) => r.country === null).length}|${rows.filter((r) => r.country === '').length}|${rows.filter((r) => r.big === null).length}`]);
    expect(await select(file, 'SELECT extra FROM t WHERE seq = -1')).toEqual(['kept']);
  });

  it('a value that does not fit its column fails the window, and nothing of it is in the table', async () => {
    const file = join(tempDir(), 'f.duckdb');
    const signal = new AbortController().signal;
    const destination = new TableDestination({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns: COLUMNS, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false, period: WINDOW, now: () => LOADED_AT, atExit: () => () => undefined,
    });
    const rows = Array.from({ length: 3000 }, (_, k) => rowOf(k));
    (rows[2500] as Record<string, string | number | null>).big = '1.5';
    const out = await destination.begin(WINDOW, WINDOW, 'r');
    await expect(out.take(bodyOf(rows))).rejects.toThrow(/data\[2500\]\.big is "1\.5"/);
    await out.abort();
    await destination.abort();
    expect(await select(file, 'SELECT count(*) FROM t')).toEqual(['0']);
  });

  it('70,000 rows of one window are stored in row groups of 30,720 rows (DuckDB\'s default of 122,880 took more memory as each was written), read back whole by DuckDB\'s own client', async () => {
    const file = join(tempDir(), 'g.duckdb');
    const signal = new AbortController().signal;
    const destination = new TableDestination({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns: COLUMNS, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
      period: WINDOW, now: () => LOADED_AT, atExit: () => () => undefined,
    });
    const out = await destination.begin(WINDOW, WINDOW, 'r1');
    await out.take(bodyOf(Array.from({ length: 70_000 }, (_, k) => rowOf(k))));
    await out.commit();
    await destination.finish();
    expect(await select(file, "SELECT row_group_id, max(count) FROM pragma_storage_info('t') WHERE column_name = 'seq' GROUP BY 1 ORDER BY 1"))
      .toEqual(['0|30720', '1|30720', '2|8560']);
    expect(await select(file, 'SELECT count(*), count(DISTINCT seq), max(seq) FROM t')).toEqual(['70000|70000|69999']);
  });

  it('two files loaded by one process spill each beside itself (FILE.tmp), never into a folder they share', async () => {
    const dir = tempDir();
    const signal = new AbortController().signal;
    const files = [join(dir, 'a.duckdb'), join(dir, 'b.duckdb')];
    const connections = await Promise.all(files.map((file) => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal)));
    try {
      const spills = await Promise.all(connections.map((connection) => connection.query("SELECT current_setting('temp_directory')")));
      expect(spills.map((rows) => rows[0]?.[0])).toEqual(files.map((file) => `${file}.tmp`));
    } finally {
      for (const connection of connections) await connection.close();
    }
  });

  it('a window whose rows DuckDB refuses as it commits (the appender\'s last flush) leaves none of them behind: the next window on the connection commits its own rows only', async () => {
    const file = join(tempDir(), 'u.duckdb');
    const signal = new AbortController().signal;
    const W2: Window = { since: WINDOW.until + 1, until: WINDOW.until + 86_400 };
    const columns: Column[] = [{ name: 'seq', type: 'int64', nullable: true, key: true }, { name: 'country', type: 'string', nullable: true, key: false }];
    // a table the user made, with a unique key, holding a row of another scope (another connection
    // to the process's one database of the file, as a second job's)
    const connection = await openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal);
    await connection.execute('CREATE TABLE t (seq BIGINT UNIQUE, country VARCHAR, _report_id VARCHAR, _window_since TIMESTAMPTZ, _window_until TIMESTAMPTZ, _scope VARCHAR, _loaded_at TIMESTAMPTZ)');
    await connection.execute("INSERT INTO t VALUES (1, 'other', 'x', now(), now(), 'other', now())");
    const destination = new TableDestination({
      connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, signal),
      table: ['t'], columns, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
      period: { since: WINDOW.since, until: W2.until }, now: () => LOADED_AT, atExit: () => () => undefined,
    });
    const body = (text: string) => (async function* () { yield Buffer.from(text); })();
    try {
      let out = await destination.begin(WINDOW, WINDOW, 'r1');
      await out.take(body('{"data":[{"seq":1,"country":"dup"},{"seq":2,"country":"two"}],"summary":null}'));
      // (the error kept as text: an error object keeps its stack's frames, the appender among them)
      expect(await out.commit().then(() => '', (error: unknown) => String(error))).toMatch(/Duplicate key "seq: 1"/);
      // the other row goes (another job of the process), the next window loads on the same connection
      await connection.execute("DELETE FROM t WHERE _scope = 'other'");
      out = await destination.begin(W2, W2, 'r2');
      // the failed window's appender is garbage: DuckDB flushes what it still holds when it is freed
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await out.take(body('{"data":[{"seq":3,"country":"three"}],"summary":null}'));
      await out.commit();
      await destination.finish();
    } finally {
      await destination.abort();
      await connection.close();
    }
    expect(await select(file, 'SELECT seq, country, _report_id FROM t ORDER BY seq')).toEqual(['3|three|r2']);
  });
});
