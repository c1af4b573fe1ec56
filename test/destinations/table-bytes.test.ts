// The table reads a report body in bytes mode (its UTF-8 not decoded; src/destinations/table.ts):
// text values of every width of UTF-8 (and \u escapes, and bytes that are not UTF-8) must reach the
// table as the decoder would have made them, on both engines, whatever the cuts of the body; field
// names beyond ASCII are found; the sha256 recorded is that of the rows' JSON texts as received,
// a newline after each; a value that does not fit is quoted as text in the error. Read back by
// each database's own client.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TableDestination, type TableSpec } from '../../src/destinations/table.js';
import { openDuckDb } from '../../src/load/duckdb.js';
import type { LoadConnection } from '../../src/load/load.js';
import { openPostgres } from '../../src/load/postgres.js';
import { parseLoadTarget } from '../../src/load/engines.js';
import type { Column } from '../../src/report/schema.js';
import type { Window } from '../../src/report/windows.js';
import { loadTargets } from '../helpers/load-targets.js';
import { tempDir } from '../helpers/tmp.js';

const D1 = Date.parse('2026-11-01T00:00:00Z') / 1000;
const WINDOW: Window = { since: D1, until: D1 + 86_399 };
const signal = new AbortController().signal;
const { targets } = loadTargets('bytes');

const COLUMNS: Column[] = [
  { name: 'seq', type: 'int64', nullable: true, key: true },
  { name: 'campagne', type: 'string', nullable: true, key: false },
  { name: 'région', type: 'string', nullable: true, key: false },
  { name: 'revenue', type: 'double', nullable: true, key: false },
];

/** Texts of every UTF-8 width, escapes the JSON writes in place of characters, quotes,
 * backslashes and control characters (COPY's escapes), an empty text. */
const TEXTS = ['Paris', 'Café "Le Zinc"', 'Black Friday – Rewarded', 'Ünïcödé 😀 ok', '\u00e9t\u00e9', 'tab\there\\back', 'line\nbreak', '', '€', '中文広告'];
/** as they go in the body: every fourth row with its characters beyond ASCII as \u escapes (UTF-16
 * units: an emoji is two), so the JSON text differs and the value not */
const jsonOf = (text: string, k: number) =>
  (k % 4 === 3 ? JSON.stringify(text).replace(/[\u0080-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`) : JSON.stringify(text));

/** Rows, each the JSON text as the body carries it; row 7 holds a byte that is not UTF-8 (0xFF),
 * which the decoder makes U+FFFD. */
function bodyOf(count: number): { bytes: Buffer; rows: string[]; expected: string[] } {
  const parts: Buffer[] = [Buffer.from('{"data":[')];
  const rows: string[] = [];
  const expected: string[] = [];
  for (let k = 0; k < count; k++) {
    const name = TEXTS[k % TEXTS.length] as string;
    const region = TEXTS[(k * 7 + 3) % TEXTS.length] as string;
    const nameJson = jsonOf(name, k);
    const row = k === 7
      ? Buffer.concat([Buffer.from(`{"seq":${k},"campagne":"bad `), Buffer.from([0xff]), Buffer.from(` byte","région":${JSON.stringify(region)},"revenue":${k / 4}}`)])
      : Buffer.from(`{"seq":${k},"campagne":${nameJson},"région":${JSON.stringify(region)},"revenue":${k / 4}}`);
    if (k > 0) parts.push(Buffer.from(','));
    parts.push(row);
    rows.push(new TextDecoder().decode(row));
    expected.push([k, k === 7 ? 'bad \uFFFD byte' : name, region, String(k / 4)].join('|'));
  }
  parts.push(Buffer.from('],"summary":{"rows":' + count + '}}'));
  return { bytes: Buffer.concat(parts), rows, expected };
}

/** The body in pieces of 1 to 13 bytes: characters and escapes cut anywhere. */
async function* cut(bytes: Buffer) {
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const size = 1 + ((k * 7919) % 13);
    yield bytes.subarray(at, at + size);
    at += size;
  }
}

describe.each(targets)('--load %s: the body read as bytes', (name, target, skip) => {
  const connect = (db: { load: string }, dir: string): (() => Promise<LoadConnection>) => (name === 'duckdb'
    ? () => openDuckDb(db.load.slice('duckdb:'.length), db.load, 0, async () => undefined, signal)
    : () => openPostgres(parseLoadTarget(db.load, dir), {}));
  const spec = (connection: () => Promise<LoadConnection>): TableSpec => ({
    connect: connection, table: ['t'], columns: COLUMNS, selected: true, scope: 's', onSchemaChange: 'fail', fullRefresh: false,
    period: WINDOW, now: () => Date.parse('2026-11-25T06:00:00Z'), atExit: () => () => undefined,
  });

  it.skipIf(skip)('text of every UTF-8 width, escapes and a byte that is not UTF-8 arrive as decoded, the body cut anywhere; the sha256 is of the rows as received', async () => {
    const dir = tempDir();
    const db = target(dir);
    const destination = new TableDestination(spec(connect(db, dir)));
    const { bytes, rows, expected } = bodyOf(3000);
    const out = await destination.begin(WINDOW, WINDOW, 'r1');
    await out.take(cut(bytes));
    const [committed] = await out.commit();
    await destination.finish();
    expect(committed?.rows).toBe(3000);
    expect(committed?.sha256).toBe(createHash('sha256').update(rows.map((row) => `${row}\n`).join('')).digest('hex'));
    const loaded = await db.select(name === 'duckdb'
      ? 'SELECT seq, campagne, "région", revenue FROM t ORDER BY seq'
      : `SELECT seq, ${['campagne', '"région"'].map((column) => `replace(replace(${column}, E'\\n', '\\n'), E'\\t', '\\t')`).join(', ')}, revenue FROM t ORDER BY seq`);
    // psql prints a newline and a tab in a value as they are: compared escaped, as selected
    const want = name === 'duckdb' ? expected : expected.map((line) => line.replace(/\n/g, '\\n').replace(/\t/g, '\\t'));
    expect(loaded).toHaveLength(3000);
    const wrong = loaded.findIndex((line, k) => line !== want[k]);
    expect(wrong < 0 ? undefined : { got: loaded[wrong], want: want[wrong] }).toBeUndefined();
  });

  it.skipIf(skip)('a value beyond ASCII that does not fit its column is quoted as text in the error, and nothing is loaded', async () => {
    const dir = tempDir();
    const destination = new TableDestination(spec(connect(target(dir), dir)));
    const body = Buffer.from('{"data":[{"seq":1,"campagne":"a","région":"b","revenue":1.5},{"seq":2,"campagne":"a","région":"b","revenue":"12 €"}],"summary":null}');
    const out = await destination.begin(WINDOW, WINDOW, 'r1');
    await expect(out.take(cut(body))).rejects.toThrow(/data\[1\]\.revenue is "12 €", not a number/);
    await out.abort();
    await destination.abort();
  });
});
