// Parquet and XLSX end to end, read back by implementations this project did not write: DuckDB for
// Parquet, SheetJS for XLSX. Values and types are compared with the JSON the server sent, on the
// sandbox's data (quotes, line breaks, emoji, postal codes with leading zeros), on both DST days,
// and on a crafted body with formula starts, numbers kept as text and fields the contract lacks.

import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { Ajv } from 'ajv';
import { unzipSync, strFromU8 } from 'fflate';
import XLSX from 'xlsx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { craftedServer } from '../helpers/crafted.js';
import { runCli } from '../helpers/cli.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { formBody } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

// ajv-formats is CommonJS whose default export TypeScript cannot see through
const addFormats = createRequire(import.meta.url)('ajv-formats') as (ajv: Ajv) => Ajv;

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

async function served(id: string): Promise<{ data: Row[] }> {
  const response = await fetch(`${sandbox.baseUrl}/download-reporting`, {
    method: 'POST', headers: { Authorization: sandbox.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body: formBody({ id }),
  });
  return (await response.json()) as { data: Row[] };
}

/** Runs `run` to a file and returns the report the server served for it. */
async function export_(dir: string, file: string, args: string[]): Promise<{ data: Row[] }> {
  const result = await runCli(['run', ...args, '-o', join(dir, file), '--json', '-q', '--poll-interval', '20ms'], { env: env(dir) });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return served(JSON.parse(result.stdout).reportId);
}

const sql = (path: string) => `'${path.replace(/'/g, "''")}'`;
async function query(text: string): Promise<Record<string, unknown>[]> {
  return (await duck.runAndReadAll(text)).getRowObjectsJson() as Record<string, unknown>[];
}
async function parquetTypes(path: string): Promise<Record<string, string>> {
  const rows = await query(`DESCRIBE SELECT * FROM ${sql(path)}`);
  return Object.fromEntries(rows.map((r) => [r.column_name as string, r.column_type as string]));
}

const COUNTS = ['eyesTrackings', 'displays', 'downloads', 'landings', 'leads', 'clicks'];
const AMOUNTS = ['valueDollar', 'revenueEuro'];

describe('Parquet, read back with DuckDB', () => {
  it('with --columns all, keeps every value and gives each field its contract type (DAILY: a DATE)', async () => {
    const dir = tempDir();
    const report = await export_(dir, 'r.parquet', ['buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,CAMPAIGN,ADUNIT,CITY,ADVERTISER,POSTALCODE', '--columns', 'all']);
    const path = join(dir, 'r.parquet');
    const types = await parquetTypes(path);
    const fields = Object.keys(report.data[0] as Row);
    expect(Object.keys(types)).toEqual(fields);
    for (const field of fields) {
      const want = field === 'date' ? 'DATE' : COUNTS.includes(field) ? 'BIGINT' : AMOUNTS.includes(field) ? 'DOUBLE' : 'VARCHAR';
      expect(`${field}: ${types[field]}`).toBe(`${field}: ${want}`);
    }
    const rows = await query(`SELECT * FROM ${sql(path)}`);
    expect(rows.length).toBe(report.data.length);
    report.data.forEach((row, i) => {
      for (const field of fields) {
        const want = row[field];
        const got = (rows[i] as Record<string, unknown>)[field];
        // DuckDB's JSON view gives BIGINT as text
        expect(COUNTS.includes(field) ? Number(got) : got).toEqual(want);
      }
    });
    const text = JSON.stringify(report.data);
    for (const tricky of ['"', '\\n', '✨', '06000']) expect(text).toContain(tricky);
    expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual(['r.parquet']);
  });

  it('HOURLY on both DST days: a timestamp with the instant, the repeated autumn hour two distinct values', async () => {
    const dir = tempDir();
    for (const day of ['2026-03-29', '2026-10-25']) {
      const report = await export_(dir, `${day}.parquet`, ['buyer', '--since', day, '--until', day, '--breakdowns', 'HOURLY']);
      const path = join(dir, `${day}.parquet`);
      expect((await parquetTypes(path)).date).toBe('TIMESTAMP WITH TIME ZONE');
      const rows = await query(`SELECT epoch_ms(date) AS ms FROM ${sql(path)}`);
      expect(rows.map((r) => Number(r.ms))).toEqual(report.data.map((row) => Date.parse(row.date as string)));
      expect(new Set(rows.map((r) => r.ms)).size).toBe(day === '2026-03-29' ? 23 : 25);
    }
  });

  it('MONTHLY stays text (2026-11); --columns requested keeps the bucket, the breakdown fields and the metrics', async () => {
    const dir = tempDir();
    const report = await export_(dir, 'm.parquet', ['seller', '--since', '2026-10-01', '--until', '2026-11-30', '--breakdowns', 'MONTHLY,APP', '--metrics', 'displays,revenueDollar', '--columns', 'requested']);
    const types = await parquetTypes(join(dir, 'm.parquet'));
    expect(types).toEqual({
      date: 'VARCHAR', platform: 'VARCHAR', appId: 'VARCHAR', appName: 'VARCHAR', bundleId: 'VARCHAR', appOwner: 'VARCHAR', displays: 'BIGINT', valueDollar: 'DOUBLE',
    });
    const rows = await query(`SELECT date, appName, displays FROM ${sql(join(dir, 'm.parquet'))}`);
    expect(rows).toEqual(report.data.map((row) => ({ date: row.date, appName: row.appName, displays: String(row.displays) })));
  });
});

describe('an empty report (a filter that matches nothing)', () => {
  const NOTHING = ['--campaign-id', '999999999'];
  const header = (path: string) => XLSX.utils.sheet_to_json<unknown[]>(readXlsx(path).Sheets['report'] as XLSX.WorkSheet, { header: 1 });

  it('Parquet, XLSX and CSV have the columns and types of a non-empty report, with and without --columns requested', async () => {
    const dir = tempDir();
    const cases = [
      ['buyer', '--breakdowns', 'DAILY,CAMPAIGN'],
      ['seller', '--breakdowns', 'HOURLY,APP', '--metrics', 'displays,revenueDollar', '--columns', 'requested'],
      ['buyer', '--breakdowns', 'DAILY,COUNTRY', '--columns', 'requested'],
      ['seller', '--breakdowns', 'MONTHLY'],
      ['buyer', '--metrics', 'clicks'],
    ];
    for (const [i, args] of cases.entries()) {
      const base = [args[0] as string, '--since', '2026-11-01', '--until', '2026-11-02', ...args.slice(1)];
      const filter = args[0] === 'buyer' ? NOTHING : ['--app-id', '999999999'];
      const full = await export_(dir, `full${i}.parquet`, base);
      expect(full.data.length).toBeGreaterThan(0);
      const empty = await export_(dir, `empty${i}.parquet`, [...base, ...filter]);
      expect(empty.data).toEqual([]);
      const types = await parquetTypes(join(dir, `full${i}.parquet`));
      expect(await parquetTypes(join(dir, `empty${i}.parquet`)), base.join(' ')).toEqual(types);
      expect(await query(`SELECT count(*)::INTEGER AS n FROM ${sql(join(dir, `empty${i}.parquet`))}`)).toEqual([{ n: 0 }]);
      await export_(dir, `full${i}.xlsx`, base);
      await export_(dir, `empty${i}.xlsx`, [...base, ...filter]);
      expect(header(join(dir, `empty${i}.xlsx`)), base.join(' ')).toEqual([Object.keys(types)]);
      expect((header(join(dir, `full${i}.xlsx`)) as unknown[][])[0]).toEqual(Object.keys(types));
      await export_(dir, `empty${i}.csv`, [...base, ...filter]);
      expect(readFileSync(join(dir, `empty${i}.csv`), 'utf8'), base.join(' ')).toBe(`${Object.keys(types).join(',')}\n`);
    }
  });

  it('download, which does not know the request: with --columns a valid file; without, an error and no file', async () => {
    const dir = tempDir();
    const submitted = await runCli(['buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', ...NOTHING], { env: env(dir) });
    const id = submitted.stdout.trim();
    // from the configuration folder that submitted it, the request is known: its typed columns
    const known = await runCli(['download', id, '--wait', '-o', join(dir, 'known.parquet'), '-q', '--poll-interval', '20ms'], { env: env(dir) });
    expect(known.code, known.stderr).toBe(0);
    expect(Object.keys(await parquetTypes(join(dir, 'known.parquet')))[0]).toBe('date');
    rmSync(join(dir, 'known.parquet'));
    // from another one, it is not
    const other = tempDir();
    for (const format of ['parquet', 'xlsx']) {
      const refused = await runCli(['download', id, '--wait', '-o', join(dir, `e.${format}`), '-q', '--poll-interval', '20ms'], { env: env(other) });
      expect(refused.code).toBe(5);
      expect(refused.stderr).toMatch(new RegExp(`^error: the report has no rows, and without its request \\(which \`download\` does not know\\) the columns of a ${format === 'xlsx' ? 'XLSX' : 'Parquet'} file are unknown: nothing was written\nhint: name the columns with --columns`));
      const named = await runCli(['download', id, '-o', join(dir, `c.${format}`), '-q', '--columns', 'country,clicks'], { env: env(other) });
      expect(named.code, named.stderr).toBe(0);
    }
    expect(await parquetTypes(join(dir, 'c.parquet'))).toEqual({ country: 'VARCHAR', clicks: 'BIGINT' });
    expect(header(join(dir, 'c.xlsx'))).toEqual([['country', 'clicks']]);
    expect(readdirSync(dir).filter((name) => name !== '.config').sort()).toEqual(['c.parquet', 'c.xlsx']);
  });
});

describe('chunked runs in the typed formats', () => {
  it('--chunk day merged into one Parquet file equals one report; per-window XLSX files hold each day', async () => {
    const dir = tempDir();
    const base = ['buyer', '--since', '2026-10-24', '--until', '2026-10-26', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,revenueEuro'];
    const single = await export_(dir, 'single.parquet', base);
    const merged = await runCli(['run', ...base, '--chunk', 'day', '-o', join(dir, 'merged.parquet'), '-q', '--poll-interval', '20ms'], { env: env(dir) });
    expect(merged.stderr).toBe('');
    expect(merged.code).toBe(0);
    const read = (file: string) => query(`SELECT date::VARCHAR AS date, country, displays, revenueEuro FROM ${sql(join(dir, file))} ORDER BY ALL`);
    expect(await read('merged.parquet')).toEqual(await read('single.parquet'));
    expect((await read('merged.parquet')).length).toBe(single.data.length);
    const perDay = await runCli(['run', ...base, '--chunk', 'day', '-o', join(dir, 'day-{since}.xlsx'), '-q', '--poll-interval', '20ms'], { env: env(dir) });
    expect(perDay.code).toBe(0);
    for (const day of ['2026-10-24', '2026-10-25', '2026-10-26']) {
      const rows = XLSX.utils.sheet_to_json<Row>(readXlsx(join(dir, `day-${day}.xlsx`)).Sheets['report'] as XLSX.WorkSheet);
      expect(rows.length).toBe(single.data.filter((row) => row.date === day).length);
    }
  });
});

function readXlsx(path: string): XLSX.WorkBook {
  return XLSX.read(readFileSync(path), { type: 'buffer', cellNF: true, cellStyles: true });
}

/** Paris wall time of an ISO instant with its Paris offset: its local part. */
function wallParts(iso: string): number[] {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(iso) as RegExpExecArray;
  return m.slice(1).map(Number);
}

describe('XLSX, read back with SheetJS', () => {
  it('with --columns all: strings are text, numbers are numbers, DAILY dates are dates; bold frozen header and widths', async () => {
    const dir = tempDir();
    const report = await export_(dir, 'r.xlsx', ['buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY,ADUNIT,POSTALCODE', '--columns', 'all']);
    const book = readXlsx(join(dir, 'r.xlsx'));
    expect(book.SheetNames).toEqual(['report']);
    const sheet = book.Sheets.report as XLSX.WorkSheet;
    const fields = Object.keys(report.data[0] as Row);
    const range = XLSX.utils.decode_range(sheet['!ref'] as string);
    expect(range.e.r).toBe(report.data.length);
    fields.forEach((field, c) => expect(sheet[XLSX.utils.encode_cell({ r: 0, c })]?.v).toBe(field));
    report.data.forEach((row, i) => {
      fields.forEach((field, c) => {
        const cell = sheet[XLSX.utils.encode_cell({ r: i + 1, c })] as XLSX.CellObject | undefined;
        const want = row[field];
        if (want === null) expect(cell?.v).toBeUndefined();
        else if (field === 'date') {
          expect(cell?.t).toBe('n');
          expect(cell?.z).toBe('yyyy-mm-dd');
          const d = XLSX.SSF.parse_date_code(cell?.v as number);
          expect([d.y, d.m, d.d].join('-')).toBe((want as string).split('-').map(Number).join('-'));
        } else if (typeof want === 'number') expect([cell?.t, cell?.v]).toEqual(['n', want]);
        else expect([cell?.t, cell?.v]).toEqual(['s', want]);
      });
    });
    const postal = fields.indexOf('postalcode');
    const cells = report.data.map((_, i) => sheet[XLSX.utils.encode_cell({ r: i + 1, c: postal })]?.v);
    expect(cells).toContain('06000');
    const xml = strFromU8((unzipSync(readFileSync(join(dir, 'r.xlsx'))) as Record<string, Uint8Array>)['xl/worksheets/sheet1.xml'] as Uint8Array);
    expect(xml).toContain('<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>');
    expect(xml).toMatch(/<row r="1"><c t="inlineStr" s="1">/); // style 1 is the bold font
    expect(sheet['!cols']?.length).toBe(fields.length);
  });

  it('HOURLY on both DST days: date-times in Paris wall time, one row per served row', async () => {
    const dir = tempDir();
    for (const day of ['2026-03-29', '2026-10-25']) {
      const report = await export_(dir, `${day}.xlsx`, ['buyer', '--since', day, '--until', day, '--breakdowns', 'HOURLY', '--metrics', 'clicks']);
      const sheet = readXlsx(join(dir, `${day}.xlsx`)).Sheets.report as XLSX.WorkSheet;
      const shown = report.data.map((_, i) => {
        const cell = sheet[`A${i + 2}`] as XLSX.CellObject;
        expect(cell.z).toBe('yyyy-mm-dd hh:mm');
        const d = XLSX.SSF.parse_date_code(cell.v as number);
        return [d.y, d.m, d.d, d.H, d.M];
      });
      expect(shown).toEqual(report.data.map((row) => wallParts(row.date as string)));
      expect(shown.length).toBe(day === '2026-03-29' ? 23 : 25);
    }
  });
});

describe('hostile values in both formats', () => {
  const body = '{"summary":{"since":"2026-11-01T00:00:00+01:00","until":"2026-11-01T23:59:59+01:00","breakdowns":["DAILY"]},"data":[' +
    '{"date":"2026-11-01","city":"=HYPERLINK(\\"http://x\\")","postalcode":"06000","campaignName":"line\\r\\nbreak \\"q\\" 😀 <b>&amp;</b>","adName":"+33 6 12","deviceModel":"ctl\\u0001x _x0041_","displays":12345678901234567,"revenueEuro":1.10,"extra":{"a":[1,2]},"note":12.50,"flag":true},' +
    '{"date":"2026-11-02","city":null,"postalcode":"00501","campaignName":"-1","adName":"@me","deviceModel":null,"displays":0,"revenueEuro":-0.0,"extra":null,"note":null,"flag":false}]}';

  it('keep text as text, numbers exact, and fields the contract lacks as text', async () => {
    const server = await craftedServer(body);
    try {
      const dir = tempDir();
      const e = env(dir, { baseUrl: server.baseUrl, token: 't'.repeat(40) });
      for (const file of ['x.parquet', 'x.xlsx']) {
        const result = await runCli(['download', 'crafted', '-o', join(dir, file), '-q'], { env: e });
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
      }
      const path = join(dir, 'x.parquet');
      expect(await parquetTypes(path)).toEqual({
        date: 'DATE', city: 'VARCHAR', postalcode: 'VARCHAR', campaignName: 'VARCHAR', adName: 'VARCHAR', deviceModel: 'VARCHAR',
        displays: 'BIGINT', revenueEuro: 'DOUBLE', extra: 'VARCHAR', note: 'VARCHAR', flag: 'VARCHAR',
      });
      expect(await query(`SELECT * FROM ${sql(path)}`)).toEqual([
        {
          date: '2026-11-01', city: '=HYPERLINK("http://x")', postalcode: '06000', campaignName: 'line\r\nbreak "q" 😀 <b>&amp;</b>', adName: '+33 6 12',
          deviceModel: 'ctl\u0001x _x0041_', displays: '12345678901234567', revenueEuro: 1.1, extra: '{"a":[1,2]}', note: '12.50', flag: 'true',
        },
        {
          date: '2026-11-02', city: null, postalcode: '00501', campaignName: '-1', adName: '@me', deviceModel: null, displays: '0', revenueEuro: -0, extra: null, note: null, flag: 'false',
        },
      ]);
      const sheet = readXlsx(join(dir, 'x.xlsx')).Sheets.report as XLSX.WorkSheet;
      const row = (r: number) => 'ABCDEFGHIJK'.split('').map((c) => {
        const cell = sheet[`${c}${r}`] as XLSX.CellObject | undefined;
        return cell && cell.t !== 'z' ? [cell.t, cell.v] : null; // 'z': an empty cell
      });
      expect(row(2).slice(1)).toEqual([
        ['s', '=HYPERLINK("http://x")'], ['s', '06000'], ['s', 'line\r\nbreak "q" 😀 <b>&amp;</b>'], ['s', '+33 6 12'], ['s', 'ctl\u0001x _x0041_'],
        ['n', 12345678901234567], ['n', 1.1], ['s', '{"a":[1,2]}'], ['s', '12.50'], ['s', 'true'],
      ]);
      // a spreadsheet has no negative zero
      expect(row(3).slice(1)).toEqual([null, ['s', '00501'], ['s', '-1'], ['s', '@me'], null, ['n', 0], ['n', 0], null, null, ['s', 'false']]);
      // no cell is a formula
      expect(Object.values(sheet).some((cell) => typeof cell === 'object' && cell !== null && 'f' in cell)).toBe(false);
      // a conforming XML parser (Python's expat) folds a raw CR LF to LF: the CR must survive it
      const script = 'import sys, json, zipfile, xml.etree.ElementTree as E\n' +
        'ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"\n' +
        'root = E.fromstring(zipfile.ZipFile(sys.argv[1]).read("xl/worksheets/sheet1.xml"))\n' +
        'print(json.dumps([t.text for t in root.iter(ns + "t")]))';
      const texts = JSON.parse(execFileSync('python3', ['-c', script, join(dir, 'x.xlsx')], { encoding: 'utf8' })) as string[];
      expect(texts).toContain('line\r\nbreak "q" 😀 <b>&amp;</b>');
    } finally {
      await server.close();
    }
  });

  it('a count that is not a whole number, or a field that comes late, stops the export: no file', async () => {
    for (const [text, message] of [
      ['{"data":[{"displays":1.5}]}', /data\[0\]\.displays is "1\.5", not a whole number/],
      ['{"data":[{"clicks":1},{"clicks":9223372036854775808}]}', /data\[1\]\.clicks is "9223372036854775808", out of the range of a 64-bit integer/],
      ['{"data":[{"a":"x"},{"a":"y","late":"z"}]}', /row 2 has a field "late" that earlier rows did not have, and (parquet|xlsx) fixes its columns[\s\S]*hint: choose the columns with --columns/],
    ] as const) {
      const server = await craftedServer(text);
      try {
        const dir = tempDir();
        for (const file of ['x.parquet', 'x.xlsx']) {
          const result = await runCli(['download', 'crafted', '-o', join(dir, file)], { env: env(dir, { baseUrl: server.baseUrl, token: 't'.repeat(40) }) });
          expect(result.code).toBe(5);
          expect(result.stderr).toMatch(message);
        }
        expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual([]);
      } finally {
        await server.close();
      }
    }
  });
});

describe('stdout, and the schema command', () => {
  it('binary formats are refused on a terminal (exit 2) and written to a pipe', async () => {
    const { runCli: inProcess } = await import('../../src/cli/program.js');
    const { ctx, stderr } = fakeContext({ tty: true });
    expect(await inProcess(argv('download', 'someid', '--format', 'xlsx'), ctx)).toBe(2);
    expect(stderr.text).toMatch(/xlsx is binary and stdout is a terminal/);
    const dir = tempDir();
    const piped = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'COUNTRY', '--format', 'parquet', '-q'], { env: env(dir) });
    expect(piped.code).toBe(0);
    const bytes = Buffer.from(piped.stdout, 'latin1');
    expect(piped.stdout.startsWith('PAR1')).toBe(true);
    expect(bytes.length).toBeGreaterThan(100);
  });

  it('--columns requested is refused where the request is unknown', async () => {
    const dir = tempDir();
    const result = await runCli(['download', 'someid', '--columns', 'requested', '-o', join(dir, 'x.parquet')], { env: env(dir) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--columns requested needs the request/);
  });

  it('schema takes the export\'s --columns (names, any case, in their order): the DDL loads the Parquet exported with them', async () => {
    const dir = tempDir();
    const columns = ['--columns', 'CLICKS,date', '--columns', 'city'];
    await export_(dir, 'c.parquet', ['buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY,CITY', ...columns]);
    const ddl = await runCli(['schema', 'buyer', '--breakdowns', 'DAILY,CITY', ...columns, '--as', 'duckdb', '--table', 'named']);
    expect(ddl.stdout).toBe('-- row key: date, city\nCREATE TABLE IF NOT EXISTS "named" (\n  "clicks" BIGINT,\n  "date"   DATE,\n  "city"   VARCHAR\n);\n');
    await duck.run(ddl.stdout);
    // run twice (a recipe run again): the table is there, nothing fails
    await duck.run(ddl.stdout);
    await duck.run(`INSERT INTO named SELECT * FROM ${sql(join(dir, 'c.parquet'))}`);
    expect(await parquetTypes(join(dir, 'c.parquet'))).toEqual({ clicks: 'BIGINT', date: 'DATE', city: 'VARCHAR' });
    // the default is the requested columns, as the export's; `all` every field of a row
    const all = await runCli(['schema', 'buyer', '--columns', 'ALL', '--json']);
    const fallback = await runCli(['schema', 'buyer', '--json']);
    const names = (result: { stdout: string }) => (JSON.parse(result.stdout).columns as { name: string }[]).map((column) => column.name);
    expect(names(fallback)).toEqual(['displays', 'clicks', 'downloads', 'leads', 'landings', 'revenueEuro', 'valueDollar', 'eyesTrackings']);
    expect(names(all).length).toBe(31);
    expect(names(all).slice(0, 3)).toEqual(['country', 'city', 'postalcode']);
    const typo = await runCli(['schema', 'buyer', '--columns', 'date,contry']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^error: --columns: no row has a field "contry"; did you mean country\?$/m);
    const mixed = await runCli(['schema', 'buyer', '--columns', 'requested,date']);
    expect(mixed.code).toBe(2);
  });

  it('rows validate against `schema --as json-schema`; the printed DDL loads the Parquet and the CSV into DuckDB', async () => {
    const dir = tempDir();
    const args = ['buyer', '--since', '2026-10-25', '--until', '2026-10-25', '--breakdowns', 'HOURLY,CITY'];
    const report = await export_(dir, 'r.parquet', args);
    await export_(dir, 'r.csv', args);
    const schema = await runCli(['schema', 'buyer', '--breakdowns', 'HOURLY,CITY', '--as', 'json-schema']);
    expect(schema.code).toBe(0);
    const ajv = new Ajv({ allErrors: true });
    addFormats(ajv);
    const validate = ajv.compile(JSON.parse(schema.stdout));
    for (const row of report.data) expect(validate(row) ? 'valid' : ajv.errorsText(validate.errors)).toBe('valid');
    // the schema is not a rubber stamp
    expect(validate({ ...report.data[0], displays: '12' })).toBe(false);
    expect(validate({ ...report.data[0], date: null })).toBe(false);

    const ddl = await runCli(['schema', 'buyer', '--breakdowns', 'HOURLY,CITY', '--as', 'duckdb', '--table', 'from_parquet']);
    const ddlCsv = await runCli(['schema', 'buyer', '--breakdowns', 'HOURLY,CITY', '--as', 'duckdb', '--table', 'from_csv']);
    expect(ddl.stdout).toMatch(/^-- row key: date, city\n/);
    await duck.run(ddl.stdout);
    await duck.run(ddlCsv.stdout);
    await duck.run(`INSERT INTO from_parquet SELECT * FROM ${sql(join(dir, 'r.parquet'))}`);
    await duck.run(`COPY from_csv FROM ${sql(join(dir, 'r.csv'))} (HEADER)`);
    // CSV writes null and "" alike, so the text columns are compared where they cannot be empty
    const compared = ['date', 'city', ...COUNTS, ...AMOUNTS].map((name) => `"${name}"`).join(', ');
    const [same] = await query(`SELECT count(*) AS n, (SELECT count(*) FROM (SELECT ${compared} FROM from_parquet EXCEPT SELECT ${compared} FROM from_csv)) AS differ, count(DISTINCT date) AS hours FROM from_parquet`);
    expect(same).toEqual({ n: String(report.data.length), differ: '0', hours: '25' });
  });
});
