// --column-case snake (issue 33 item 4) end to end: the built CLI against the sandbox, its outputs
// read back by readers this project did not write (csv-parse, DuckDB for Parquet and the tables,
// SheetJS, psql), compared with the report as the server sends it, its fields renamed by the
// hand-written table of test/helpers/column-case.ts.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { craftedServer } from '../helpers/crafted.js';
import { runCli } from '../helpers/cli.js';
import { SNAKE_NAMES, snakeRow } from '../helpers/column-case.js';
import { formBody } from '../helpers/http.js';
import { loadTargets } from '../helpers/load-targets.js';
import { tempDir } from '../helpers/tmp.js';

let sandbox: Sandbox;
let duck: DuckDBConnection;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 20 });
  duck = await (await DuckDBInstance.create(':memory:')).connect();
});
afterAll(() => sandbox.close());

type Row = Record<string, string | number | null>;
const env = (dir: string, server: { baseUrl: string; token: string } = sandbox) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: server.token,
});

async function served(id: string): Promise<{ data: Row[]; summary: unknown }> {
  const response = await fetch(`${sandbox.baseUrl}/download-reporting`, {
    method: 'POST', headers: { Authorization: sandbox.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body: formBody({ id }),
  });
  return JSON.parse(await response.text()) as { data: Row[]; summary: unknown };
}

// REGION fills adminLevel1 (a digit, and text beyond ASCII); revenueEuro an amount, eyesTrackings a count
const ASKED = ['buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY,REGION', '--metrics', 'revenueEuro,eyesTrackings,clicks'];
const FIELDS = ['date', 'adminLevel1', 'revenueEuro', 'eyesTrackings', 'clicks'];
const SNAKE = ['date', 'admin_level_1', 'revenue_euro', 'eyes_trackings', 'clicks'];
const SNAKE_NAME = /^[a-z][a-z0-9_]*$/;

/** `run` into a file, its report ID. */
async function run(dir: string, file: string, args: string[], extra: string[] = []): Promise<string> {
  const result = await runCli(['run', ...args, '-o', join(dir, file), '--json', '-q', '--poll-interval', '20ms', ...extra], { env: env(dir) });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout).reportId as string;
}

const csvOf = (path: string, delimiter = ',') => parse(readFileSync(path, 'utf8'), { delimiter }) as string[][];
const sql = (path: string) => `'${path.replace(/'/g, "''")}'`;
const text = (value: unknown) => (value === null ? '' : String(value));

describe('--column-case snake in files', () => {
  it('CSV: the header in snake case, every value the served one; TSV with --columns all: every field renamed, in the served order', async () => {
    const dir = tempDir();
    const id = await run(dir, 'r.csv', ASKED, ['--column-case', 'snake']);
    const report = await served(id);
    const rows = csvOf(join(dir, 'r.csv'));
    expect(rows[0]).toEqual(SNAKE);
    expect(rows.slice(1)).toEqual(report.data.map((row) => FIELDS.map((field) => text(row[field]))));
    // text beyond ASCII comes through the renaming (the CSV is written in bytes mode)
    expect(rows.slice(1).some((row) => /[^\x00-\x7f]/.test(row[1] as string))).toBe(true);
    // without the flag: the names as the API sends them, as before
    await run(dir, 'camel.csv', ASKED);
    expect(csvOf(join(dir, 'camel.csv'))[0]).toEqual(FIELDS);

    const all = await run(dir, 'r.tsv', ASKED, ['--column-case', 'SNAKE', '--columns', 'all']);
    const tsv = csvOf(join(dir, 'r.tsv'), '\t');
    const served26 = (await served(all)).data;
    const keys = Object.keys(served26[0] as Row);
    // date, the 23 dimension fields of a buyer row, the 3 metrics
    expect(keys.length).toBe(27);
    expect(tsv[0]).toEqual(keys.map((key) => SNAKE_NAMES[key]));
    for (const name of tsv[0] as string[]) expect(name).toMatch(SNAKE_NAME);
    expect(tsv.slice(1)).toEqual(served26.map((row) => keys.map((key) => text(row[key]))));
  });

  it('--columns takes the snake names too, and writes them in snake case', async () => {
    const dir = tempDir();
    const id = await run(dir, 'n.csv', ASKED, ['--column-case', 'snake', '--columns', 'revenue_euro,admin_level_1']);
    const rows = csvOf(join(dir, 'n.csv'));
    expect(rows[0]).toEqual(['revenue_euro', 'admin_level_1']);
    expect(rows.slice(1)).toEqual((await served(id)).data.map((row) => [text(row.revenueEuro), text(row.adminLevel1)]));
  });

  it('Parquet (DuckDB) and XLSX (SheetJS): the same columns in snake case, typed as the fields are; download of a report no request describes types them too', async () => {
    const dir = tempDir();
    const id = await run(dir, 'r.parquet', ASKED, ['--column-case', 'snake']);
    const report = await served(id);
    const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sql(join(dir, 'r.parquet'))})`)).getRowObjectsJson();
    expect(described.map((row) => [row.column_name, row.column_type])).toEqual([['date', 'DATE'], ['admin_level_1', 'VARCHAR'], ['revenue_euro', 'DOUBLE'], ['eyes_trackings', 'BIGINT'], ['clicks', 'BIGINT']]);
    const rows = (await duck.runAndReadAll(`SELECT strftime(date, '%Y-%m-%d') AS d, admin_level_1, revenue_euro, eyes_trackings::INTEGER AS e, clicks::INTEGER AS c FROM read_parquet(${sql(join(dir, 'r.parquet'))})`)).getRows();
    expect(rows).toEqual(report.data.map((row) => [row.date, row.adminLevel1, row.revenueEuro, row.eyesTrackings, row.clicks]));

    await run(dir, 'r.xlsx', ASKED, ['--column-case', 'snake']);
    const sheet = XLSX.read(readFileSync(join(dir, 'r.xlsx'))).Sheets.report as XLSX.WorkSheet;
    const cells = XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, raw: true });
    expect(cells[0]).toEqual(SNAKE);
    expect(cells.slice(1).map((row) => row.slice(1))).toEqual(report.data.map((row) => [row.adminLevel1, row.revenueEuro, row.eyesTrackings, row.clicks]));

    // `download` of a report it knows nothing of: every field, typed by the field each column names
    const got = await runCli(['download', id, '-o', join(dir, 'all.parquet'), '--column-case', 'snake', '-q'], { env: env(dir) });
    expect(got.code, got.stderr).toBe(0);
    const types = Object.fromEntries((await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sql(join(dir, 'all.parquet'))})`)).getRowObjectsJson().map((row) => [row.column_name, row.column_type]));
    expect(Object.keys(types)).toEqual(Object.keys(report.data[0] as Row).map((key) => SNAKE_NAMES[key]));
    expect(types).toMatchObject({ date: 'DATE', revenue_euro: 'DOUBLE', eyes_trackings: 'BIGINT', admin_level_1: 'VARCHAR', ad_unit_limit_type: 'VARCHAR' });
  });

  it('NDJSON and JSON: each row with its keys in snake case and its values as sent; a chunked JSON too; the summary as sent', async () => {
    const dir = tempDir();
    const nd = await run(dir, 'r.ndjson', ASKED, ['--column-case', 'snake']);
    const lines = readFileSync(join(dir, 'r.ndjson'), 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Row);
    const report = await served(nd);
    expect(lines).toEqual(report.data.map(snakeRow));
    // the keys in the served order, each renamed
    expect(Object.keys(lines[0] as Row)).toEqual(Object.keys(report.data[0] as Row).map((key) => SNAKE_NAMES[key]));

    const piped = await runCli(['run', ...ASKED, '--json', '--column-case', 'snake', '-q', '--poll-interval', '20ms'], { env: env(dir) });
    expect(piped.code, piped.stderr).toBe(0);
    const object = JSON.parse(piped.stdout) as { data: Row[]; summary: unknown };
    expect(object.data).toEqual(report.data.map(snakeRow));
    expect(object.summary).toEqual(report.summary);

    // two windows merged into one JSON file: written from the rows
    await run(dir, 'merged.json', ASKED, ['--column-case', 'snake', '--chunk', 'day']);
    const merged = JSON.parse(readFileSync(join(dir, 'merged.json'), 'utf8')) as { data: Row[]; summary: { since: string; until: string } };
    expect(merged.data).toEqual(report.data.map(snakeRow));
    expect(merged.summary).toMatchObject({ since: (report.summary as { since: string }).since, until: (report.summary as { until: string }).until });
  });

  it('rows summed across windows (no time breakdown) are summed by field before renaming: the same totals as one report', async () => {
    const dir = tempDir();
    const args = ['buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'REGION', '--metrics', 'revenueEuro,eyesTrackings'];
    const id = await run(dir, 'one.csv', args);
    await run(dir, 'sum.csv', args, ['--column-case', 'snake', '--chunk', 'day']);
    const summed = csvOf(join(dir, 'sum.csv'));
    expect(summed[0]).toEqual(['admin_level_1', 'revenue_euro', 'eyes_trackings']);
    const byRegion = new Map(summed.slice(1).map(([region, revenue, eyes]) => [region, [Number(revenue), Number(eyes)]]));
    const report = (await served(id)).data;
    expect(byRegion.size).toBe(report.length);
    for (const row of report) {
      const [revenue, eyes] = byRegion.get(row.adminLevel1 as string) ?? [];
      expect(revenue).toBeCloseTo(row.revenueEuro as number, 6);
      expect(eyes).toBe(row.eyesTrackings);
    }
  });

  it('a field first seen in a later row: the CSV header grows with its snake-case name', async () => {
    const body = JSON.stringify({
      data: [{ date: '2026-11-01', clicks: 1, revenueEuro: 1.5 }, { date: '2026-11-01', clicks: 2, revenueEuro: 2.5, lateField: 'x' }],
      summary: { since: '2026-11-01T00:00:00+01:00', until: '2026-11-01T23:59:59+01:00', breakdowns: ['DAILY'], timezone: 'europe/paris' },
    });
    const server = await craftedServer(body);
    try {
      const dir = tempDir();
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--metrics', 'clicks,revenueEuro',
        '--column-case', 'snake', '--columns', 'all', '-o', join(dir, 'r.csv'), '-q'], { env: env(dir, { baseUrl: server.baseUrl, token: 't'.repeat(40) }) });
      expect(result.code, result.stderr).toBe(0);
      expect(csvOf(join(dir, 'r.csv'))).toEqual([['date', 'clicks', 'revenue_euro', 'late_field'], ['2026-11-01', '1', '1.5', ''], ['2026-11-01', '2', '2.5', 'x']]);
    } finally {
      await server.close();
    }
  });

  it('two fields that would be one column are refused, naming both', async () => {
    const body = JSON.stringify({
      data: [{ date: '2026-11-01', clicks: 1, fooBar: 'a', foo_bar: 'b' }],
      summary: { since: '2026-11-01T00:00:00+01:00', until: '2026-11-01T23:59:59+01:00', breakdowns: ['DAILY'], timezone: 'europe/paris' },
    });
    const server = await craftedServer(body);
    try {
      const dir = tempDir();
      const e = env(dir, { baseUrl: server.baseUrl, token: 't'.repeat(40) });
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '--metrics', 'clicks', '--column-case', 'snake', '--columns', 'all'];
      const result = await runCli([...args, '-o', join(dir, 'r.csv')], { env: e });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('the fields fooBar and foo_bar of the report would both be the column foo_bar in snake case');
      expect(result.stderr).toContain('--column-case camel');
      // the names as received still work
      const camel = await runCli([...args.slice(0, -4), '--columns', 'all', '-o', join(dir, 'c.csv')], { env: e });
      expect(camel.code, camel.stderr).toBe(0);
      expect(csvOf(join(dir, 'c.csv'))[0]).toEqual(['date', 'clicks', 'fooBar', 'foo_bar']);
    } finally {
      await server.close();
    }
  });
});

describe('--column-case in the state file, download and the job file', () => {
  it('is recorded with the other shape flags: another case on the same state is refused (hint --full-refresh), the file untouched; a state without it reads as camel', async () => {
    const dir = tempDir();
    const state = join(dir, 's.json');
    await run(dir, 's.csv', ASKED, ['--column-case', 'snake', '--state', state]);
    expect(JSON.parse(readFileSync(state, 'utf8')).request.columnCase).toBe('snake');
    const before = readFileSync(join(dir, 's.csv'));
    expect(csvOf(join(dir, 's.csv'))[0]).toEqual(SNAKE);

    const camel = await runCli(['run', ...ASKED, '-o', join(dir, 's.csv'), '--state', state, '-q'], { env: env(dir) });
    expect(camel.code).toBe(2);
    expect(camel.stderr).toContain('was written for another request: --column-case is camel here, snake in the state file');
    expect(camel.stderr).toContain('--full-refresh');
    expect(readFileSync(join(dir, 's.csv'))).toEqual(before);
    // the same case again: nothing to do, nothing refused
    const again = await runCli(['run', ...ASKED, '-o', join(dir, 's.csv'), '--state', state, '--column-case', 'snake', '-q'], { env: env(dir) });
    expect(again.code, again.stderr).toBe(0);

    // `download --state`: the state's case by default, the flag over it
    const id = (JSON.parse(readFileSync(state, 'utf8')) as { windows: { reportId: string }[] }).windows[0]!.reportId;
    const got = await runCli(['download', id, '--state', state, '-o', join(dir, 'd.csv'), '-q'], { env: env(dir) });
    expect(got.code, got.stderr).toBe(0);
    expect(readFileSync(join(dir, 'd.csv'))).toEqual(before);
    const named = await runCli(['download', id, '--state', state, '--column-case', 'camel', '-o', join(dir, 'c.csv'), '-q'], { env: env(dir) });
    expect(named.code, named.stderr).toBe(0);
    expect(csvOf(join(dir, 'c.csv'))[0]).toEqual(FIELDS);

    // a state written before --column-case existed: camel
    const old = JSON.parse(readFileSync(state, 'utf8'));
    delete old.request.columnCase;
    writeFileSync(join(dir, 'old.json'), JSON.stringify(old));
    const oldCamel = await runCli(['run', ...ASKED, '-o', join(dir, 's.csv'), '--state', join(dir, 'old.json'), '-q'], { env: env(dir) });
    expect(oldCamel.code, oldCamel.stderr).toBe(0);
    const oldSnake = await runCli(['run', ...ASKED, '-o', join(dir, 's.csv'), '--state', join(dir, 'old.json'), '--column-case', 'snake', '-q'], { env: env(dir) });
    expect(oldSnake.code).toBe(2);
    expect(oldSnake.stderr).toContain('--column-case is snake here, camel in the state file');
  });

  it('the job file\'s column-case: key writes snake-case files; a value that is no case is refused by jobs validate', async () => {
    const dir = tempDir();
    const job = (value: string) => `version: 1
jobs:
  - name: regions
    side: buyer
    since: 2026-11-01
    until: 2026-11-02
    breakdowns: DAILY,REGION
    metrics: [revenueEuro, eyesTrackings, clicks]
    poll-interval: 20ms
    column-case: ${value}
    output: out/{side}.csv
`;
    writeFileSync(join(dir, 'reporting.yaml'), job('snake'));
    const ran = await runCli(['jobs', 'run', '-q'], { env: env(dir), cwd: dir });
    expect(ran.code, ran.stderr).toBe(0);
    const rows = csvOf(join(dir, 'out', 'buyer.csv'));
    expect(rows[0]).toEqual(SNAKE);
    expect(rows.length).toBeGreaterThan(2);

    writeFileSync(join(dir, 'reporting.yaml'), job('snak'));
    const refused = await runCli(['jobs', 'validate'], { env: env(dir), cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('column-case');
    expect(refused.stderr).toContain('snake');
  });
});

const { targets } = loadTargets('cc');

describe.each(targets)('--load %s with --column-case snake', (name, target, skip) => {
  it.skipIf(skip)('the table made by `schema --for-load --column-case snake` is the one run --load makes: loaded without drift, values as served; a camel load into it is refused, the table untouched', async () => {
    const dir = tempDir();
    const db = target(dir);
    const dialect = name === 'duckdb' ? 'duckdb' : 'postgres';
    const ddl = await runCli(['schema', 'buyer', '--breakdowns', 'DAILY,REGION', '--metrics', 'revenueEuro,eyesTrackings,clicks', '--as', dialect, '--for-load', '--column-case', 'snake', '--table', 'regions'], { env: env(dir) });
    expect(ddl.code, ddl.stderr).toBe(0);
    expect(ddl.stdout).toContain('"revenue_euro"');
    expect(ddl.stdout).not.toContain('revenueEuro');
    // the statement run by the database's own client
    await db.select(ddl.stdout);

    const load = await runCli(['run', ...ASKED, '--load', db.load, '--table', 'regions', '--column-case', 'snake', '-q', '--poll-interval', '20ms'], { env: env(dir) });
    expect(load.code, load.stderr).toBe(0);
    const columns = await db.select("SELECT column_name FROM information_schema.columns WHERE table_name = 'regions' ORDER BY ordinal_position");
    expect(columns).toEqual([...SNAKE, '_report_id', '_window_since', '_window_until', '_scope', '_loaded_at']);
    const rows = await db.select('SELECT CAST(date AS VARCHAR), admin_level_1, revenue_euro, eyes_trackings, clicks, _report_id FROM regions ORDER BY 1, 2');
    const ids = [...new Set(rows.map((row) => row.split('|')[5]))];
    const expected = (await Promise.all(ids.map(async (id) => (await served(id as string)).data))).flat()
      .map((row) => [row.date, row.adminLevel1, String(Number(row.revenueEuro)), row.eyesTrackings, row.clicks].join('|'))
      .sort();
    expect(rows.map((row) => row.split('|').slice(0, 5).join('|')).map((row) => row.replace(/\|([0-9.e+-]+)\|/, (_, n: string) => `|${String(Number(n))}|`)).sort()).toEqual(expected);

    const camel = await runCli(['run', ...ASKED, '--load', db.load, '--table', 'regions', '--on-schema-change', 'add-columns', '-q'], { env: env(dir) });
    expect(camel.code).toBe(2);
    expect(camel.stderr).toContain('its columns are named in the other --column-case (admin_level_1 in the table, adminLevel1 in the export');
    expect(await db.select("SELECT count(*) FROM information_schema.columns WHERE table_name = 'regions'")).toEqual(['10']);
    expect(await db.select('SELECT count(*) FROM regions')).toEqual([String(rows.length)]);
  });
});
