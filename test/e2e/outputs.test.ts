// -o repeated (issue 33 item 3): several outputs from one report, each written whole from the one
// download, read back by readers this project did not write (csv-parse, DuckDB, SheetJS); two -o
// that are one file refused before any request; one output that cannot be written leaves no file.

import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.js';
import { runCli, startCli, collect } from '../helpers/cli.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { craftedServer } from '../helpers/crafted.js';
import { MOTO, startMoto } from '../helpers/moto.js';
import { CreateBucketCommand, GetObjectCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

const RUN = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-07', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks,revenueEuro', '--poll-interval', '20ms'];
const csvOf = (file: string) => parse(readFileSync(file)) as string[][];
const submits = (requests: readonly { endpoint: string }[]) => requests.filter((r) => r.endpoint === 'buyer').length;

describe('-o repeated', () => {
  it('one report into CSV, Parquet and XLSX: one submit, one download; the CSV byte for byte as a run of one -o', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      const one = await runCli([...RUN, '-o', join(dir, 'one.csv'), '-q'], { env });
      expect(one.code, one.stderr).toBe(0);
      const before = sandbox.requests.length;
      // (--no-resume: a report of its own, not the first run's, which the journal remembers)
      const result = await runCli([...RUN, '-o', join(dir, 'day.csv'), '-o', join(dir, 'day.parquet'), '-o', join(dir, 'day.xlsx'), '--json', '--no-resume'], { env });
      expect(result.code, result.stderr).toBe(0);
      const mine = sandbox.requests.slice(before);
      expect(mine.filter((r) => r.endpoint === 'buyer')).toHaveLength(1);
      expect(mine.filter((r) => r.endpoint === 'download')).toHaveLength(1);
      expect(readFileSync(join(dir, 'day.csv'))).toEqual(readFileSync(join(dir, 'one.csv')));
      const csv = csvOf(join(dir, 'day.csv'));
      expect(csv[0]).toEqual(['date', 'country', 'displays', 'clicks', 'revenueEuro']);
      const rows = csv.slice(1).map((row) => row.join('|'));
      const parquet = await duckdbRows(':memory:', `SELECT date::VARCHAR, country, displays, clicks, revenueEuro FROM read_parquet('${join(dir, 'day.parquet')}')`);
      expect(parquet.length).toBe(rows.length);
      expect(parquet.map((row) => row.split('|').slice(0, 4).join('|'))).toEqual(rows.map((row) => row.split('|').slice(0, 4).join('|')));
      const sheet = XLSX.read(readFileSync(join(dir, 'day.xlsx'))).Sheets.report as XLSX.WorkSheet;
      const xlsx = XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, raw: false });
      expect(xlsx[0]).toEqual(csv[0]);
      expect(xlsx.length).toBe(csv.length);
      // the result line and the closing line name every file
      const line = JSON.parse(result.stdout) as { file: string; files: string[] };
      expect(line.files).toEqual([join(dir, 'day.csv'), join(dir, 'day.parquet'), join(dir, 'day.xlsx')]);
      expect(result.stderr).toContain(`${join(dir, 'day.csv')}, ${join(dir, 'day.parquet')}, ${join(dir, 'day.xlsx')} (csv, parquet, xlsx)`);
      expect(readdirSync(dir).filter((name) => name.includes('.reporting-tmp-'))).toEqual([]);
    });
  });

  it('-o - among them: the CSV on stdout is the file\'s bytes', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const result = await runCli([...RUN, '-o', '-', '-o', join(dir, 'day.ndjson'), '-q'], { env: sandboxEnv(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const again = await runCli([...RUN, '-o', join(dir, 'day.csv'), '-q'], { env: sandboxEnv(sandbox, dir) });
      expect(again.code).toBe(0);
      expect(result.stdout).toBe(readFileSync(join(dir, 'day.csv'), 'utf8'));
      const lines = readFileSync(join(dir, 'day.ndjson'), 'utf8').trim().split('\n');
      expect(lines.length).toBe(csvOf(join(dir, 'day.csv')).length - 1);
    });
  });

  it('{reportId} in each: both named by the one report', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const result = await runCli([...RUN, '-o', join(dir, 'r-{reportId}.csv'), '-o', join(dir, 'r-{reportId}.ndjson'), '--json', '-q'], { env: sandboxEnv(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const { reportId } = JSON.parse(result.stdout) as { reportId: string };
      expect(readdirSync(dir).filter((name) => name.startsWith('r-')).sort()).toEqual([`r-${reportId}.csv`, `r-${reportId}.ndjson`]);
    });
  });

  it('with --chunk and --state: one file of each format, the state records both, the next run skips', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      const state = join(dir, 'b.state.json');
      const args = [...RUN, '--chunk', 'day', '--state', state, '-o', join(dir, 'week.csv'), '-o', join(dir, 'week.parquet'), '-q'];
      const first = await runCli(args, { env });
      expect(first.code, first.stderr).toBe(0);
      const doc = JSON.parse(readFileSync(state, 'utf8')) as { request: { output: string; outputs: string[] }; windows: { status: string; file: string; outputs: { file: string; sha256: string; bytes: number }[] }[] };
      expect(doc.request.outputs).toEqual([join(dir, 'week.csv'), join(dir, 'week.parquet')]);
      expect(doc.windows).toHaveLength(7);
      for (const window of doc.windows) {
        expect(window.status).toBe('done');
        expect(window.outputs.map((output) => output.file)).toEqual([join(dir, 'week.csv'), join(dir, 'week.parquet')]);
        expect(window.outputs[1]?.bytes).toBe(readFileSync(join(dir, 'week.parquet')).length);
      }
      const [count] = await duckdbRows(':memory:', `SELECT count(*) FROM read_parquet('${join(dir, 'week.parquet')}')`);
      expect(Number(count)).toBe(csvOf(join(dir, 'week.csv')).length - 1);
      // state show names both
      const shown = await runCli(['state', 'show', state], { env });
      expect(shown.stdout).toContain(`outputs:    ${join(dir, 'week.csv')}, ${join(dir, 'week.parquet')}\n`);
      expect(shown.stdout.trim().split('\n').at(-1)?.split('\t')[5]).toBe(`${join(dir, 'week.csv')}, ${join(dir, 'week.parquet')}`);
      // --plan: nothing requested, every window skipped
      const requests = sandbox.requests.length;
      const plan = await runCli([...args, '--plan'], { env });
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout.trim().split('\n').every((line) => /skip/.test(line))).toBe(true);
      expect(sandbox.requests.length).toBe(requests);
      // nothing to fetch: both files are there
      const submitted = submits(sandbox.requests);
      const second = await runCli(args, { env });
      expect(second.code, second.stderr).toBe(0);
      expect(submits(sandbox.requests)).toBe(submitted);
      // one of them deleted: the windows are fetched again, and both files written
      rmSync(join(dir, 'week.parquet'));
      const third = await runCli(args, { env });
      expect(third.code, third.stderr).toBe(0);
      expect(submits(sandbox.requests)).toBe(submitted + 7);
      expect(existsSync(join(dir, 'week.parquet'))).toBe(true);
      // another set of outputs is another request
      const other = await runCli([...RUN, '--chunk', 'day', '--state', state, '-o', join(dir, 'week.csv'), '-q'], { env });
      expect(other.code).toBe(2);
      expect(other.stderr).toContain(`the outputs are ${join(dir, 'week.csv')} here, ${join(dir, 'week.csv')}, ${join(dir, 'week.parquet')} in the state file`);
    });
  });

  it('one file per window for each -o: {since} in both', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const result = await runCli([...RUN, '--until', '2026-11-03', '--chunk', 'day', '-o', join(dir, 'd-{since}.csv'), '-o', join(dir, 'd-{since}.parquet'), '-q'], { env: sandboxEnv(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(dir).filter((name) => name.startsWith('d-')).sort()).toEqual([
        'd-2026-11-01.csv', 'd-2026-11-01.parquet', 'd-2026-11-02.csv', 'd-2026-11-02.parquet', 'd-2026-11-03.csv', 'd-2026-11-03.parquet',
      ]);
      const [count] = await duckdbRows(':memory:', `SELECT count(*) FROM read_parquet('${join(dir, 'd-2026-11-02.parquet')}')`);
      expect(Number(count)).toBe(csvOf(join(dir, 'd-2026-11-02.csv')).length - 1);
    });
  });

  it('with --load: the table and both files', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const db = join(dir, 'w.duckdb');
      const result = await runCli([...RUN, '--load', `duckdb:${db}`, '-o', join(dir, 'w.csv'), '-o', join(dir, 'w.parquet'), '-q'], { env: sandboxEnv(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      const rows = csvOf(join(dir, 'w.csv')).length - 1;
      const [loaded] = await duckdbRows(db, 'SELECT count(*) FROM buyer_report');
      expect(Number(loaded)).toBe(rows);
      const [count] = await duckdbRows(':memory:', `SELECT count(*) FROM read_parquet('${join(dir, 'w.parquet')}')`);
      expect(Number(count)).toBe(rows);
    });
  });
});

describe('-o repeated: refused before any request', () => {
  it.each([
    ['the same file by another spelling', (dir: string) => ['-o', join(dir, 'a.csv'), '-o', `${dir}/sub/../a.csv`], /-o and the second -o name the same file/],
    ['the same file through a symbolic link', (dir: string) => ['-o', join(dir, 'a.csv'), '-o', join(dir, 'link', 'a.csv')], /-o and the second -o name the same file/],
    ['stdout twice', () => ['-o', '-', '-o', '-'], /-o - is given twice/],
    ['one file named by the report ID, twice', (dir: string) => ['-o', join(dir, 'r-{reportId}.csv'), '-o', `${dir}/sub/../r-{reportId}.csv`], /-o \S+r-\{reportId\}\.csv and -o \S+sub\/\.\.\/r-\{reportId\}\.csv name the same file/],
    ['--format with several -o', (dir: string) => ['-o', join(dir, 'a.csv'), '-o', join(dir, 'a.parquet'), '--format', 'csv'], /--format csv names one format, and -o is given 2 times/],
    ['one file per window beside one file', (dir: string) => ['--chunk', 'day', '-o', join(dir, 'd-{since}.csv'), '-o', join(dir, 'all.csv')], /several -o are all one or all the other/],
    ['--delimiter with no CSV among them', (dir: string) => ['-o', join(dir, 'a.parquet'), '-o', join(dir, 'a.xlsx'), '--delimiter', ';'], /--delimiter applies to CSV output, not parquet/],
  ])('%s', async (_what, args, message) => {
    await withSandbox({}, async (sandbox, dir) => {
      mkdirSync(join(dir, 'sub'));
      symlinkSync(dir, join(dir, 'link'));
      const result = await runCli([...RUN, ...args(dir)], { env: sandboxEnv(sandbox, dir) });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(sandbox.requests.filter((r) => r.endpoint !== 'auth')).toEqual([]);
      expect(readdirSync(dir).filter((name) => /\.(csv|parquet|xlsx)$/.test(name))).toEqual([]);
    });
  });
});

describe('-o repeated: one output fails', () => {
  it('its folder made a file once the report is submitted: no output at all, exit non-zero, no temporary file', async () => {
    // the report stays in progress until the test moves the sandbox's clock on
    const slow = await startSandbox({ port: 0, readyDelayMs: 60_000, now: () => Date.parse('2026-11-21T11:00:00Z') });
    try {
      const dir = tempDir();
      mkdirSync(join(dir, 'gone'));
      const child = startCli([...RUN, '-o', join(dir, 'day.csv'), '-o', join(dir, 'gone', 'day.parquet')], { env: sandboxEnv(slow, dir) });
      const done = collect(child);
      await until(() => slow.requests.some((r) => r.endpoint === 'status'), 'the report submitted');
      // (a file where the folder was: the folder cannot be made again)
      rmSync(join(dir, 'gone'), { recursive: true });
      writeFileSync(join(dir, 'gone'), 'a file, not a folder');
      slow.advance(60_000);
      const result = await done;
      // a file that cannot be written: exit 1, as with one -o; the pick-up command writes both
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/error: cannot write \S*gone\/day\.parquet: \S*gone is a file, not a folder/);
      expect(result.stderr).toMatch(/hint: pick it up later with: reporting download (\w+) --wait .*-o \S*day\.csv && reporting download \1 .*-o \S*gone\/day\.parquet\n/);
      expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual(['gone']);
    } finally {
      await slow.close();
    }
  });
});

describe('-o repeated: one output fails mid-report', () => {
  it('a Parquet file cannot hold an amount the CSV can: the CSV is not written either, exit 5', async () => {
    // many rows before the bad one: the CSV has taken most of the body when the Parquet writer fails
    const rows = Array.from({ length: 3000 }, (_, i) => `{"date":"2026-11-01","country":"C${i}","revenueEuro":1.5}`);
    const server = await craftedServer(`{"data":[${rows.join(',')},{"date":"2026-11-01","country":"X","revenueEuro":1e400}],"summary":{"since":"2026-11-01T00:00:00+01:00","until":"2026-11-01T23:59:59+01:00","breakdowns":["DAILY","COUNTRY"],"timezone":"europe/paris"}}`);
    try {
      const dir = tempDir();
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 't'.repeat(40) };
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'revenueEuro', '--poll-interval', '20ms'];
      // alone, the CSV is written (it keeps the text as sent)
      const alone = await runCli([...args, '-o', join(dir, 'alone.csv'), '-q'], { env });
      expect(alone.code, alone.stderr).toBe(0);
      expect(csvOf(join(dir, 'alone.csv'))).toHaveLength(3002);
      const both = await runCli([...args, '-o', join(dir, 'day.csv'), '-o', join(dir, 'day.parquet')], { env });
      expect(both.code).toBe(5);
      expect(both.stderr).toMatch(/error: .*revenueEuro is "1e400", out of the range of a double/);
      expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual(['alone.csv']);
    } finally {
      await server.close();
    }
  });
});

describe.skipIf(!MOTO)('-o repeated with s3:// objects (moto on loopback)', () => {
  it('a local file and two objects from one download, byte for byte; a failed object leaves no other output and no upload', async () => {
    const moto = await startMoto();
    try {
      await moto.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
      const object = async (key: string) => Buffer.from(await ((await moto.s3.send(new GetObjectCommand({ Bucket: 'reports', Key: key }))).Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
      await withSandbox({}, async (sandbox, dir) => {
        const env = { ...sandboxEnv(sandbox, dir), HOME: dir, ...moto.env };
        const result = await runCli([...RUN, '-o', join(dir, 'day.csv'), '-o', join(dir, 'day.parquet'), '-o', 's3://reports/day.csv', '-o', 's3://reports/day.parquet', '-q'], { env });
        expect(result.code, result.stderr).toBe(0);
        expect(sandbox.requests.filter((r) => r.endpoint === 'download')).toHaveLength(1);
        expect(await object('day.csv')).toEqual(readFileSync(join(dir, 'day.csv')));
        expect(await object('day.parquet')).toEqual(readFileSync(join(dir, 'day.parquet')));
      });
      // the bucket refuses writes once the report is submitted: no object, no file, no upload left
      const slow = await startSandbox({ port: 0, readyDelayMs: 60_000, now: () => Date.parse('2026-11-21T11:00:00Z') });
      try {
        const dir = tempDir();
        const env = { ...sandboxEnv(slow, dir), HOME: dir, ...moto.env };
        const child = startCli([...RUN, '-o', join(dir, 'late.csv'), '-o', 's3://reports/late.parquet'], { env });
        const done = collect(child);
        await until(() => slow.requests.some((r) => r.endpoint === 'status'), 'the report submitted');
        await fetch(`${moto.endpoint}/moto-api/reset`, { method: 'POST' });
        slow.advance(60_000);
        const result = await done;
        expect(result.code).toBe(2);
        expect(result.stderr).toContain('error: cannot write s3://reports/late.parquet: the bucket reports does not exist');
        expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual([]);
        await moto.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
        expect((await moto.s3.send(new ListMultipartUploadsCommand({ Bucket: 'reports' }))).Uploads ?? []).toEqual([]);
      } finally {
        await slow.close();
      }
    } finally {
      await moto.close();
    }
  }, 60_000);
});

describe('a job file\'s output: a list', () => {
  it('jobs run writes each job\'s files of every format from one report a window, as run with -o repeated does', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = sandboxEnv(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-03
  chunk: day
  poll-interval: 20ms
  state: state/{job}.json
  output:
    - out/{job}/{since}.csv
    - out/{job}/{since}.parquet
jobs:
  - name: daily
    side: buyer
    breakdowns: DAILY,COUNTRY
    metrics: displays,clicks
`);
      const result = await runCli(['jobs', 'run', '-f', join(dir, 'reporting.yaml'), '-q'], { env });
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(join(dir, 'out', 'daily')).sort()).toEqual([
        '2026-11-01.csv', '2026-11-01.parquet', '2026-11-02.csv', '2026-11-02.parquet', '2026-11-03.csv', '2026-11-03.parquet',
      ]);
      expect(sandbox.requests.filter((r) => r.endpoint === 'download')).toHaveLength(3);
      const alone = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks', '-o', join(dir, 'alone.csv'), '-q'], { env });
      expect(alone.code, alone.stderr).toBe(0);
      expect(readFileSync(join(dir, 'out', 'daily', '2026-11-02.csv'))).toEqual(readFileSync(join(dir, 'alone.csv')));
      const [count] = await duckdbRows(':memory:', `SELECT count(*) FROM read_parquet('${join(dir, 'out', 'daily', '2026-11-02.parquet')}')`);
      expect(Number(count)).toBe(csvOf(join(dir, 'alone.csv')).length - 1);
    });
  });
});
