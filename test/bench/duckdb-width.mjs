#!/usr/bin/env node
// How DuckDB's memory_limit bears a wide table: R rows of C text columns of distinct values (and a
// date), loaded in one window through the table destination (the built dist/), in this process;
// prints whether the load passed and the peak RSS. loadMemoryLimit (src/load/duckdb.ts) is sized by
// what this finds.
//
//   node test/bench/duckdb-width.mjs --columns 30 [--rows 300000] [--kind text|int] [--loads 2]
//
// --loads 2 loads the window again: its rows replace the first load's (a DELETE in the same
// transaction, whose versions DuckDB holds until the commit).
//
// --file F --day N: into F (kept), the window N days after 2026-11-01: `--day 0` then, in another
// process, `--day 1` is a night's commit into a table that holds rows.

import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TableDestination } from '../../dist/destinations/table.js';
import { loadMemoryLimit, openDuckDb } from '../../dist/load/duckdb.js';

const args = process.argv.slice(2);
const option = (name, fallback) => { const at = args.indexOf(`--${name}`); return at >= 0 ? args[at + 1] : fallback; };
const COLUMNS = Number(option('columns', '30'));
const ROWS = Number(option('rows', '300000'));
const KIND = option('kind', 'text');
const LOADS = Number(option('loads', '1'));
const given = option('file', undefined);
const dir = given ? undefined : mkdtempSync(join(tmpdir(), 'duckdb-width-'));
const file = given ?? join(dir, 'w.duckdb');
const D1 = Date.parse('2026-11-01T00:00:00+01:00') / 1000 + 86_400 * Number(option('day', '0'));
const window = { since: D1, until: D1 + 86_399 };
const columns = [{ name: 'date', type: 'date', nullable: true, key: true },
  ...Array.from({ length: COLUMNS }, (_, i) => ({ name: `c${i}`, type: KIND === 'text' ? 'string' : 'int64', nullable: true, key: false }))];
async function* body() {
  yield Buffer.from('{"data":[');
  let part = [];
  for (let r = 0; r < ROWS; r++) {
    const row = { date: '2026-11-01' };
    // distinct values: nothing for the dictionary or run-length compression to share
    for (let c = 0; c < COLUMNS; c++) row[`c${c}`] = KIND === 'text' ? `v${r}-${c}-${(r * 2654435761 + c) % 1000003}x` : r * 1000 + c;
    part.push(JSON.stringify(row));
    if (part.length === 2000) { yield Buffer.from((r >= 2000 ? ',' : '') + part.join(',')); part = []; }
  }
  if (part.length) yield Buffer.from((ROWS > part.length ? ',' : '') + part.join(','));
  yield Buffer.from('],"summary":null}');
}
const destination = new TableDestination({
  connect: () => openDuckDb(file, `duckdb:${file}`, 0, async () => undefined, new AbortController().signal),
  table: ['wide'], columns, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
  period: window, now: () => Date.now(), atExit: () => () => undefined,
});
const limit = `${loadMemoryLimit(columns.length + 5)} MB${LOADS > 1 ? ` (${loadMemoryLimit(columns.length + 5, ROWS)} MB replacing, ${loadMemoryLimit(columns.length + 5, ROWS, true)} MB at its commit)` : ''}`;
let outcome = 'passed';
try {
  for (let load = 0; load < LOADS; load++) {
    const output = await destination.begin(window, window, `r${load}`);
    await output.take(body());
    await output.commit();
  }
  await destination.finish();
} catch (error) {
  outcome = `FAILED: ${String(error.message).split('\n')[0].slice(0, 400)}`;
  await destination.abort().catch(() => undefined);
}
const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
console.log(`${COLUMNS} ${KIND} columns, ${ROWS} rows, ${LOADS} load(s), memory_limit ${limit}: ${outcome}, peak RSS ${Math.round(hwm / 1024)} MiB`);
if (dir) rmSync(dir, { recursive: true, force: true });
