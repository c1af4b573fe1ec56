// The columns asked for, by default (issue 21, item 1): CSV, Parquet and XLSX carry the time bucket,
// the breakdowns' fields and the metrics asked for, in that order; JSON and NDJSON the rows as
// received; `--columns all` every field (the output before). Read back by readers this project did
// not write: csv-parse and Python's csv, DuckDB, SheetJS. `download` writes the requested columns
// when the journal (an interrupted run) or --state tells it the request, else every field.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { craftedServer } from '../helpers/crafted.js';
import { runCli } from '../helpers/cli.js';
import { formBody } from '../helpers/http.js';
import { PYTHON } from '../helpers/python.js';
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

async function servedText(id: string, server: { baseUrl: string; token: string } = sandbox): Promise<string> {
  const response = await fetch(`${server.baseUrl}/download-reporting`, {
    method: 'POST', headers: { Authorization: server.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body: formBody({ id }),
  });
  return response.text();
}
const served = async (id: string) => JSON.parse(await servedText(id)) as { data: Row[] };

const ASKED = ['buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks'];
const REQUESTED = ['date', 'country', 'displays', 'clicks'];

/** `run` into a file; the report ID it wrote. */
async function run(dir: string, file: string, args: string[], extra: string[] = []): Promise<string> {
  const result = await runCli(['run', ...args, '-o', join(dir, file), '--json', '-q', '--poll-interval', '20ms', ...extra], { env: env(dir) });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout).reportId as string;
}

function pythonCsv(path: string): string[][] {
  const read = spawnSync(PYTHON as string, ['-c', 'import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))))', path], { encoding: 'utf8' });
  expect(read.status, read.stderr).toBe(0);
  return JSON.parse(read.stdout) as string[][];
}

const sql = (path: string) => `'${path.replace(/'/g, "''")}'`;
async function parquetColumns(path: string): Promise<[string, string][]> {
  const rows = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM ${sql(path)}`)).getRowObjectsJson();
  return rows.map((row) => [row.column_name as string, row.column_type as string]);
}

/** The report ID a state file records for its one window. */
const recorded = (state: string) => (JSON.parse(readFileSync(state, 'utf8')) as { windows: { reportId: string }[] }).windows[0]!.reportId;

function csvOf(path: string): string[][] {
  return parse(readFileSync(path, 'utf8')) as string[][];
}

describe('the columns asked for, by default', () => {
  it('CSV of DAILY,COUNTRY: date,country and the metrics in the order asked, every value the served one (csv-parse, Python csv)', async () => {
    const dir = tempDir();
    const id = await run(dir, 'r.csv', ASKED);
    const report = await served(id);
    const rows = csvOf(join(dir, 'r.csv'));
    expect(rows[0]).toEqual(REQUESTED);
    expect(rows.slice(1)).toEqual(report.data.map((row) => REQUESTED.map((field) => String(row[field]))));
    // the served rows had 26 fields, 22 of them empty for this request
    expect(Object.keys(report.data[0] as Row).length).toBe(26);
    if (PYTHON) expect(pythonCsv(join(dir, 'r.csv'))).toEqual(rows);
    // the order asked, not the row's
    await run(dir, 'o.csv', [...ASKED.slice(0, -1), 'clicks,displays', '--breakdowns', 'CITY']);
    expect(csvOf(join(dir, 'o.csv'))[0]).toEqual(['date', 'country', 'city', 'clicks', 'displays']);
  });

  it('Parquet (DuckDB) and XLSX (SheetJS) carry the same columns, typed', async () => {
    const dir = tempDir();
    const id = await run(dir, 'r.parquet', ASKED);
    const report = await served(id);
    expect(await parquetColumns(join(dir, 'r.parquet'))).toEqual([['date', 'DATE'], ['country', 'VARCHAR'], ['displays', 'BIGINT'], ['clicks', 'BIGINT']]);
    const rows = (await duck.runAndReadAll(`SELECT strftime(date, '%Y-%m-%d') AS date, country, displays::INTEGER AS displays, clicks::INTEGER AS clicks FROM ${sql(join(dir, 'r.parquet'))}`)).getRowObjectsJson();
    expect(rows).toEqual(report.data.map((row) => Object.fromEntries(REQUESTED.map((field) => [field, row[field]]))));

    await run(dir, 'r.xlsx', ASKED);
    const sheet = XLSX.read(readFileSync(join(dir, 'r.xlsx'))).Sheets.report as XLSX.WorkSheet;
    const cells = XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, raw: false, dateNF: 'yyyy-mm-dd' });
    expect(cells[0]).toEqual(REQUESTED);
    expect(cells.length - 1).toBe(report.data.length);
    expect(XLSX.utils.decode_range(sheet['!ref'] as string).e.c).toBe(REQUESTED.length - 1);
  });

  it('JSON and NDJSON keep the rows as received; --columns all changes nothing there; --columns chooses their fields too', async () => {
    const dir = tempDir();
    const id = await run(dir, 'r.json', ASKED);
    expect(readFileSync(join(dir, 'r.json'), 'utf8')).toBe(await servedText(id));
    const nd = await run(dir, 'r.ndjson', ASKED, ['--columns', 'all']);
    expect(readFileSync(join(dir, 'r.ndjson'), 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line))).toEqual((await served(nd)).data);
    const piped = await runCli(['run', ...ASKED, '--json', '--columns', 'ALL', '-q'], { env: env(dir) });
    expect(piped.code, piped.stderr).toBe(0);
    expect(Object.keys(JSON.parse(piped.stdout).data[0]).length).toBe(26);
    // --columns given: the chosen fields, in their order (a field a row lacks is null)
    const named = await run(dir, 'n.ndjson', ASKED, ['--columns', 'clicks,date,campaignName,nothing', '--no-validate']);
    const rows = (await served(named)).data;
    expect(readFileSync(join(dir, 'n.ndjson'), 'utf8')).toBe(rows.map((row) => `{"clicks":${row.clicks},"date":"${row.date}","campaignName":"","nothing":null}\n`).join(''));
    const requested = await run(dir, 'q.json', ASKED, ['--columns', 'requested']);
    const object = JSON.parse(readFileSync(join(dir, 'q.json'), 'utf8')) as { data: Row[]; summary: unknown };
    const body = JSON.parse(await servedText(requested)) as { data: Row[]; summary: unknown };
    expect(object).toEqual({ data: body.data.map((row) => Object.fromEntries(REQUESTED.map((field) => [field, row[field]]))), summary: body.summary });
    const stdout = await runCli(['run', ...ASKED, '--json', '--columns', 'date,clicks', '-q'], { env: env(dir) });
    expect(Object.keys(JSON.parse(stdout.stdout).data[0])).toEqual(['date', 'clicks']);
    // a chunked run's merged JSON: the same fields, the windows' rows in order
    const chunked = await runCli(['run', ...ASKED, '--chunk', 'day', '--columns', 'date,clicks', '-o', join(dir, 'c.json'), '-q'], { env: env(dir) });
    expect(chunked.code, chunked.stderr).toBe(0);
    const merged = JSON.parse(readFileSync(join(dir, 'c.json'), 'utf8')) as { data: Row[] };
    expect(merged.data.map((row) => Object.keys(row).join(','))).toEqual(object.data.map(() => 'date,clicks'));
    expect(merged.data.map((row) => row.clicks)).toEqual(object.data.map((row) => row.clicks));
  });

  it('--columns all gives every field of every row, as before (CSV, Parquet)', async () => {
    const dir = tempDir();
    const id = await run(dir, 'all.csv', ASKED, ['--columns', 'all']);
    const report = await served(id);
    const fields = Object.keys(report.data[0] as Row);
    const rows = csvOf(join(dir, 'all.csv'));
    expect(rows[0]).toEqual(fields);
    expect(rows.slice(1)).toEqual(report.data.map((row) => fields.map((field) => (row[field] === null ? '' : String(row[field])))));
    await run(dir, 'all.parquet', ASKED, ['--columns', 'all']);
    expect((await parquetColumns(join(dir, 'all.parquet'))).map(([name]) => name)).toEqual(fields);
  });

  it('schema follows the same default; --columns all is every field; its DDL loads the default export', async () => {
    const dir = tempDir();
    const schema = await runCli(['schema', 'buyer', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '--json']);
    expect(schema.code, schema.stderr).toBe(0);
    expect((JSON.parse(schema.stdout).columns as { name: string }[]).map((column) => column.name)).toEqual(REQUESTED);
    const all = await runCli(['schema', 'buyer', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '--columns', 'all', '--json']);
    const id = await run(dir, 'all.csv', ASKED, ['--columns', 'all']);
    expect((JSON.parse(all.stdout).columns as { name: string }[]).map((column) => column.name)).toEqual(Object.keys((await served(id)).data[0] as Row));
    // the printed DDL takes the default Parquet export as it is
    await run(dir, 'r.parquet', ASKED);
    const ddl = await runCli(['schema', 'buyer', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '--as', 'duckdb', '--table', 'daily_country']);
    await duck.run(ddl.stdout);
    await duck.run(`INSERT INTO daily_country SELECT * FROM ${sql(join(dir, 'r.parquet'))}`);
    const [count] = (await duck.runAndReadAll('SELECT count(*)::INTEGER AS n FROM daily_country')).getRowObjectsJson();
    expect(count).toEqual({ n: (await served(id)).data.length });
  });
});

describe('download', () => {
  it('writes the requested columns when the journal of an interrupted run knows the request, else every field', async () => {
    // the report stays in progress until the test moves the sandbox's clock on
    const slow = await startSandbox({ port: 0, readyDelayMs: 60_000, now: () => Date.parse('2026-11-21T11:00:00Z') });
    try {
      const dir = tempDir();
      const gaveUp = await runCli(['run', ...ASKED, '-o', join(dir, 'r.csv'), '--poll-interval', '20ms', '--max-wait', '300ms'], { env: env(dir, slow) });
      expect(gaveUp.code, gaveUp.stderr).toBe(6);
      const id = /submitted buyer report ([0-9a-f]+)/.exec(gaveUp.stderr)![1]!;
      // the pick-up command names the columns, in case the journal has forgotten the request
      expect(gaveUp.stderr).toContain(`reporting download ${id} --wait --columns ${REQUESTED.join(',')} -o ${join(dir, 'r.csv')}`);
      slow.advance(60_000);
      const later = await runCli(['download', id, '-o', join(dir, 'later.csv'), '-q'], { env: env(dir, slow) });
      expect(later.code, later.stderr).toBe(0);
      expect(csvOf(join(dir, 'later.csv'))[0]).toEqual(REQUESTED);
      // explicit words and names are as given
      const all = await runCli(['download', id, '--columns', 'all', '-o', join(dir, 'all.csv'), '-q'], { env: env(dir, slow) });
      expect(all.code, all.stderr).toBe(0);
      expect(csvOf(join(dir, 'all.csv'))[0]).toEqual(Object.keys(JSON.parse(await servedText(id, slow)).data[0]));
      const requested = await runCli(['download', id, '--columns', 'requested', '-o', join(dir, 'req.xlsx'), '-q'], { env: env(dir, slow) });
      expect(requested.code, requested.stderr).toBe(0);
      expect(XLSX.utils.sheet_to_json<unknown[]>(XLSX.read(readFileSync(join(dir, 'req.xlsx'))).Sheets.report as XLSX.WorkSheet, { header: 1 })[0]).toEqual(REQUESTED);
      // another user (another config folder): no journal, every field; `requested` is refused
      const other = tempDir();
      const unknown = await runCli(['download', id, '-o', join(other, 'u.csv'), '-q'], { env: env(other, slow) });
      expect(unknown.code, unknown.stderr).toBe(0);
      expect(csvOf(join(other, 'u.csv'))[0]).toEqual(Object.keys(JSON.parse(await servedText(id, slow)).data[0]));
      const refused = await runCli(['download', id, '--columns', 'requested', '-o', join(other, 'x.csv')], { env: env(other, slow) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: --columns requested needs the request, and this report's is not known here/m);
      expect(refused.stderr).toMatch(/^hint: give --state FILE of the run that submitted it, .*--columns all$/m);
    } finally {
      await slow.close();
    }
  });

  it('a report made by `reporting buyer` (issue 33 item 3): download knows its request for 7 days, from this configuration folder', async () => {
    const dir = tempDir();
    const submitted = await runCli(ASKED, { env: env(dir) });
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    const byDefault = await runCli(['download', id, '--wait', '--poll-interval', '20ms', '-o', join(dir, 'd.csv')], { env: env(dir) });
    expect(byDefault.code, byDefault.stderr).toBe(0);
    expect(byDefault.stderr).not.toContain('not known here');
    expect(csvOf(join(dir, 'd.csv'))[0]).toEqual(REQUESTED);
    const requested = await runCli(['download', id, '--columns', 'requested', '-o', join(dir, 'r.parquet'), '-q'], { env: env(dir) });
    expect(requested.code, requested.stderr).toBe(0);
    expect((await parquetColumns(join(dir, 'r.parquet'))).map(([name]) => name)).toEqual(REQUESTED);
    // NDJSON keeps every field unless asked
    const rows = await runCli(['download', id, '--columns', 'requested', '-o', join(dir, 'r.ndjson'), '-q'], { env: env(dir) });
    expect(rows.code, rows.stderr).toBe(0);
    expect(Object.keys(JSON.parse(readFileSync(join(dir, 'r.ndjson'), 'utf8').split('\n')[0] as string))).toEqual(REQUESTED);
    // 7 days later (the record's time moved back), or from another configuration folder: not
    // known, said in one line; every field by default, `requested` refused
    for (const name of readdirSync(join(dir, '.config', 'requests'))) {
      const path = join(dir, '.config', 'requests', name);
      writeFileSync(path, readFileSync(path, 'utf8').replace(/"submittedAt":\d+/, `"submittedAt":${Date.now() - 7 * 24 * 3600_000 - 1000}`));
    }
    for (const config of [dir, tempDir()]) {
      const unknown = await runCli(['download', id, '-o', join(config, 'u.csv')], { env: env(config) });
      expect(unknown.code, unknown.stderr).toBe(0);
      expect(unknown.stderr.split('\n').filter((line) => line.includes('not known here'))).toEqual([
        `note: report ${id}'s request is not known here (reporting buyer or seller did not submit it from this configuration folder in the last 7 days): every field is written; --state FILE or --columns names the columns`,
      ]);
      expect(csvOf(join(config, 'u.csv'))[0]!.length).toBe(26);
      const refused = await runCli(['download', id, '--columns', 'requested', '-o', join(config, 'x.csv')], { env: env(config) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^error: --columns requested needs the request, and this report's is not known here \(neither the journal of an interrupted run nor reporting buyer or seller on this machine in the last 7 days recorded it\)$/m);
    }
  });

  it('the records of submitted requests are bounded: the oldest beyond 1,000 go', async () => {
    const dir = tempDir();
    const { Journal, REQUESTS_MAX } = await import('../../src/engine/journal.js');
    const journal = new Journal(join(dir, '.config'), () => Date.now());
    const folder = join(dir, '.config', 'requests');
    mkdirSync(folder, { recursive: true });
    const about = { side: 'buyer' as const, metrics: ['clicks'], breakdowns: ['DAILY'] };
    // older records, made as a long-lived machine would have them (each an hour older)
    for (let i = 0; i < REQUESTS_MAX + 5; i++) {
      const path = join(folder, `${String(i).padStart(32, '0')}.json`);
      writeFileSync(path, JSON.stringify({ v: 1, reportId: `old${i}`, submittedAt: Date.now(), about }));
      const at = new Date(Date.now() - (i + 1) * 60_000);
      utimesSync(path, at, at);
    }
    await journal.rememberRequest('newest', about);
    const left = readdirSync(folder);
    expect(left).toHaveLength(REQUESTS_MAX);
    expect(journal.requestOf('newest')).toEqual(about);
    // the five oldest and the one the newest pushed out are gone
    expect(left.filter((name) => name.startsWith('0000')).length).toBe(REQUESTS_MAX - 1);
    expect(left).not.toContain(`${String(REQUESTS_MAX + 4).padStart(32, '0')}.json`);
  });

  it('with --state: the columns the state records (the requested ones, or every field); a report not in it is refused', async () => {
    const dir = tempDir();
    const state = join(dir, 's.json');
    await run(dir, 'r.csv', [...ASKED, '--state', state]);
    const id = recorded(state);
    const byState = await runCli(['download', id, '--state', state, '-o', join(dir, 'd.csv'), '-q'], { env: env(dir) });
    expect(byState.code, byState.stderr).toBe(0);
    expect(readFileSync(join(dir, 'd.csv'), 'utf8')).toBe(readFileSync(join(dir, 'r.csv'), 'utf8'));
    // without it (a state run keeps no journal): every field
    const bare = await runCli(['download', id, '-o', join(dir, 'b.csv'), '-q'], { env: env(dir) });
    expect(bare.code, bare.stderr).toBe(0);
    expect(csvOf(join(dir, 'b.csv'))[0]!.length).toBe(26);
    // a state that records every field
    const allState = join(dir, 'all.json');
    await run(dir, 'all.csv', [...ASKED, '--state', allState, '--columns', 'all']);
    const allId = recorded(allState);
    const byAll = await runCli(['download', allId, '--state', allState, '-o', join(dir, 'da.csv'), '-q'], { env: env(dir) });
    expect(byAll.code, byAll.stderr).toBe(0);
    expect(readFileSync(join(dir, 'da.csv'), 'utf8')).toBe(readFileSync(join(dir, 'all.csv'), 'utf8'));
    const wrong = await runCli(['download', allId, '--state', state, '-o', join(dir, 'w.csv')], { env: env(dir) });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(new RegExp(`^error: report ${allId} is not in the state file `, 'm'));
  });
});

describe('no data is dropped silently', () => {
  // a server that fills fields this request did not ask for (a real API may)
  const body = JSON.stringify({
    data: [
      { date: '2026-11-01', country: 'France', campaignName: 'Late \u001b[31m', displays: 5, clicks: 1, extra: 'x' },
      { date: '2026-11-01', country: null, campaignName: '', displays: 2, clicks: 0, city: null },
    ],
    summary: { since: '2026-11-01T00:00:00+01:00', until: '2026-11-01T23:59:59+01:00', breakdowns: ['DAILY', 'COUNTRY'], timezone: 'europe/paris' },
  });
  const ONE_DAY = ['buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks'];

  it('fields outside the columns that held a value are named at the end (stderr, --json, the JSON log), with --columns all as the way to keep them', async () => {
    const server = await craftedServer(body);
    try {
      const dir = tempDir();
      const e = env(dir, { baseUrl: server.baseUrl, token: 't'.repeat(40) });
      const text = await runCli(['run', ...ONE_DAY, '-o', join(dir, 'r.csv')], { env: e });
      expect(text.code, text.stderr).toBe(0);
      expect(csvOf(join(dir, 'r.csv'))).toEqual([REQUESTED, ['2026-11-01', 'France', '5', '1'], ['2026-11-01', '', '2', '0']]);
      // null and "" are no values: city is not named
      expect(text.stderr).toContain('warning: fields outside the columns written held values in some rows and were left out: campaignName, extra; --columns all writes every field\n');
      for (const file of ['r.parquet', 'r.xlsx']) {
        const typed = await runCli(['run', ...ONE_DAY, '-o', join(dir, file), '--json', '-q'], { env: e });
        expect(typed.code, typed.stderr).toBe(0);
        expect(JSON.parse(typed.stdout).droppedFields).toEqual(['campaignName', 'extra']);
      }
      const logged = await runCli(['run', ...ONE_DAY, '-o', join(dir, 'l.csv'), '--log-format', 'json'], { env: e });
      const events = logged.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; message?: string });
      expect(events.filter((event) => event.event === 'warning').map((event) => event.message)).toEqual([
        'fields outside the columns written held values in some rows and were left out: campaignName, extra; --columns all writes every field',
      ]);
      // every field: nothing left out, nothing said
      const all = await runCli(['run', ...ONE_DAY, '--columns', 'all', '-o', join(dir, 'a.csv'), '--json'], { env: e });
      expect(all.stderr).not.toMatch(/warning/);
      expect(JSON.parse(all.stdout).droppedFields).toBeUndefined();
      expect(csvOf(join(dir, 'a.csv'))[0]).toEqual(['date', 'country', 'campaignName', 'displays', 'clicks', 'extra', 'city']);
      // download with names: the same warning, and no escape byte from the server reaches stderr
      const named = await runCli(['download', 'crafted', '--columns', 'date,displays', '-o', join(dir, 'd.csv')], { env: e });
      expect(named.code, named.stderr).toBe(0);
      expect(named.stderr).toContain('left out: country, campaignName, clicks, extra; --columns all writes every field\n');
      expect(named.stderr).not.toContain('\u001b');
    } finally {
      await server.close();
    }
  });
});
