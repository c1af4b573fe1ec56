// `run` and `download` end to end: every format and option, compared with what the server sent.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { craftedServer } from '../helpers/crafted.js';
import { runCli } from '../helpers/cli.js';
import { formBody } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 50 });
});
afterAll(() => sandbox.close());

const env = (dir: string, extra: Record<string, string> = {}) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, ...extra,
});

/** The report as the server serves it, fetched with plain HTTP. */
async function served(id: string, server: { baseUrl: string; token: string } = sandbox): Promise<string> {
  const response = await fetch(`${server.baseUrl}/download-reporting`, {
    method: 'POST', headers: { Authorization: server.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body: formBody({ id }),
  });
  return response.text();
}

const REPORT = ['--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,CAMPAIGN,ADUNIT,CITY,ADVERTISER'];
const listing = (dir: string) => readdirSync(dir).filter((name) => name !== '.config').sort();

describe('run writes what the server sent', () => {
  it('CSV with --columns all: header and every field of every row, parsed back with csv-parse and compared with the JSON', async () => {
    const dir = tempDir();
    const result = await runCli(['run', 'buyer', ...REPORT, '-o', join(dir, 'out.csv'), '--columns', 'all', '--json', '--poll-interval', '50ms'], { env: env(dir) });
    expect(result.code).toBe(0);
    const { reportId, rows } = JSON.parse(result.stdout);
    const report = JSON.parse(await served(reportId));
    const csv = parse(readFileSync(join(dir, 'out.csv'), 'utf8')) as string[][];
    const header = csv[0]!;
    expect(header).toEqual(Object.keys(report.data[0]));
    expect(csv.length - 1).toBe(report.data.length);
    expect(rows).toBe(report.data.length);
    report.data.forEach((row: Record<string, unknown>, i: number) => {
      header.forEach((field, j) => {
        const value = row[field];
        expect(csv[i + 1]![j]).toBe(value === null ? '' : String(value));
      });
    });
    const text = JSON.stringify(report.data);
    for (const tricky of ['"', ',', '\\n', 'é', '✨']) expect(text).toContain(tricky); // the data exercised them
    expect(listing(dir)).toEqual(['out.csv']);
  });

  it('NDJSON: one line per row, equal to the served rows; JSON: the served body, byte for byte', async () => {
    const dir = tempDir();
    const ndjson = await runCli(['run', 'seller', ...REPORT.slice(0, 4), '--breakdowns', 'HOURLY,APP', '-o', join(dir, 'rows.ndjson'), '--json', '-q'], { env: env(dir) });
    expect(ndjson.code).toBe(0);
    const served1 = JSON.parse(await served(JSON.parse(ndjson.stdout).reportId));
    const lines = readFileSync(join(dir, 'rows.ndjson'), 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line))).toEqual(served1.data);

    const json = await runCli(['run', 'seller', ...REPORT.slice(0, 4), '--breakdowns', 'DAILY,ZONE', '--format', 'json', '-o', join(dir, 'whole.txt'), '--json', '-q'], { env: env(dir) });
    expect(json.code).toBe(0);
    expect(readFileSync(join(dir, 'whole.txt'), 'utf8')).toBe(await served(JSON.parse(json.stdout).reportId));
  });

  it('--json without -o writes the report JSON to stdout; progress stays on stderr', async () => {
    const dir = tempDir();
    const result = await runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'COUNTRY', '--json'], { env: env(dir) });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.summary.breakdowns).toEqual(['COUNTRY']);
    expect(report.data.length).toBeGreaterThan(3);
    expect(result.stderr).toMatch(/^submitted buyer report [0-9a-f]{24}\n/);
  });

  it('numbers exactly as the JSON text had them, hostile strings, nulls, and fields that appear late', async () => {
    const body = '{"summary":{"since":"2026-11-01T00:00:00+01:00","until":"2026-11-01T23:59:59+01:00","breakdowns":[]},"data":[' +
      '{"name":"Café \\"Zinc\\", Paris","n":1.10,"tiny":5e-324,"huge":1.7976931348623157e308,"int":12345678901234567890,"none":null},' +
      '{"name":"line\\nbreak 😀","n":-0.0,"tiny":1E-7,"huge":0,"int":1,"none":"x","late":"=cmd"}]}';
    const server = await craftedServer(body);
    try {
      const dir = tempDir();
      const e = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 't'.repeat(40) };
      // every field: the crafted rows' fields are none of the contract's
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '-o', join(dir, 'x.csv'), '--columns', 'all', '-q'], { env: e });
      expect(result.code).toBe(0);
      expect(parse(readFileSync(join(dir, 'x.csv'), 'utf8'))).toEqual([
        ['name', 'n', 'tiny', 'huge', 'int', 'none', 'late'],
        ['Café "Zinc", Paris', '1.10', '5e-324', '1.7976931348623157e308', '12345678901234567890', '', ''],
        ['line\nbreak 😀', '-0.0', '1E-7', '0', '1', 'x', '=cmd'],
      ]);
      const excel = await runCli(['download', 'crafted', '-o', join(dir, 'x.xls.csv'), '--excel', '-q'], { env: e });
      expect(excel.code).toBe(0);
      const text = readFileSync(join(dir, 'x.xls.csv'), 'utf8');
      expect(text.startsWith('\uFEFFname;n;tiny;huge;int;none;late\r\n')).toBe(true);
      expect(text).toContain(';1,10;5e-324;');
      expect(text).toContain(";'=cmd\r\n");
      // on stdout the header cannot be completed: an error rather than a dropped field
      const piped = await runCli(['download', 'crafted'], { env: e });
      expect(piped.code).toBe(5);
      expect(piped.stderr).toMatch(/row 2 has a field "late" that earlier rows did not have[\s\S]*hint: write to a file with -o/);
    } finally {
      await server.close();
    }
  });

  it('a truncated download is an error, and no file is written', async () => {
    const server = await craftedServer('{"data":[{"a":1},{"a":2');
    try {
      const dir = tempDir();
      const result = await runCli(['download', 'crafted', '-o', join(dir, 'x.csv')], { env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 't'.repeat(40) } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/the downloaded report is not what the contract describes: .*truncated/);
      expect(listing(dir)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('output options', () => {
  it('--columns, --delimiter, --bom', async () => {
    const dir = tempDir();
    const result = await runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'country', '--metrics', 'displays,clicks',
      '--columns', 'country,clicks,displays', '--delimiter', 'tab', '--bom', '-o', join(dir, 'c.tsv'), '-q'], { env: env(dir) });
    expect(result.code).toBe(0);
    const text = readFileSync(join(dir, 'c.tsv'), 'utf8');
    expect(text.startsWith('\uFEFFcountry\tclicks\tdisplays\n')).toBe(true);
    expect(text.split('\n')[1]).toMatch(/^[A-Z][a-z ]+\t\d+\t\d+$/);
  });

  it('-o placeholders {side} {since} {until} {reportId}, with missing folders created', async () => {
    const dir = tempDir();
    const result = await runCli(['run', 'seller', '--since', '2026-10-25', '--until', '2026-10-26', '-o', join(dir, 'a/b/{side}_{since}_{until}_{reportId}.ndjson'), '--json', '-q'], { env: env(dir) });
    expect(result.code).toBe(0);
    const { reportId, file, format } = JSON.parse(result.stdout);
    expect(format).toBe('ndjson');
    expect(file).toBe(join(dir, `a/b/seller_2026-10-25_2026-10-26_${reportId}.ndjson`));
    expect(existsSync(file)).toBe(true);
  });

  it.each([
    [['-o', 'x.csv', '--format', 'xls'], /unknown format "xls".*; did you mean xlsx\?/],
    [['-o', 'x.xlsx', '--delimiter', ';'], /--delimiter applies to CSV output, not xlsx/],
    [['-o', '{day}.csv'], /unknown placeholder \{day\}/],
    [['--format', 'json', '--bom', '-o', 'x.json'], /--bom applies to CSV output, not json/],
    // --columns chooses NDJSON's fields too (issue 21, item 1): its names are checked as anywhere
    [['--columns', 'date,nope', '-o', 'x.ndjson'], /^error: --columns: no row has a field "nope"/m],
    [['--delimiter', 'ab', '-o', 'x.csv'], /--delimiter wants one character/],
    [['--seller-x'], /unknown option/],
    [['--publisher-id', '3'], /--publisher-id is a seller filter, not for buyer reports/],
  ])('refuses %j before any request', async (args, message) => {
    const dir = tempDir();
    const before = sandbox.requests.length;
    const result = await runCli(['run', 'buyer', '--since', 'today', '--until', 'today', ...args], { env: env(dir), cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(sandbox.requests.length).toBe(before);
  });
});

describe('progress and summary on stderr', () => {
  it('without a terminal: one plain line per state change, and the summary at the end; -q silences all', async () => {
    const dir = tempDir();
    const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-20', '--breakdowns', 'DAILY,COUNTRY', '-o', join(dir, 'n.csv')], { env: env(dir) });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/\r|\u001b/);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^submitted buyer report [0-9a-f]{24}$/);
    expect(lines).toContainEqual(expect.stringMatching(/^report [0-9a-f]{24} ready after \d+ polls? \(/));
    expect(lines.at(-1)).toMatch(/^buyer report [0-9a-f]{24}: 2026-11-01T00:00:00\+01:00 → 2026-11-20T23:59:59\+01:00 \(Europe\/Paris\), breakdowns DAILY,COUNTRY: \d+ rows, .* → .*n\.csv \(csv\)$/);
    const quiet = await runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', join(dir, 'q.csv'), '-q'], { env: env(dir) });
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });
});

describe('download', () => {
  it('never calls the download endpoint before ready: without --wait, exit 6 and a hint', async () => {
    // the sandbox's clock stands still: the report stays in progress until the test moves it on
    const slow = await startSandbox({ port: 0, readyDelayMs: 4000, now: () => Date.parse('2026-11-21T11:00:00Z') });
    try {
      const dir = tempDir();
      const e = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: slow.baseUrl, REPORTING_TOKEN: slow.token };
      const id = (await runCli(['buyer', '--since', 'yesterday', '--until', 'yesterday'], { env: e })).stdout.trim();
      const early = await runCli(['download', id, '-o', join(dir, 'x.csv')], { env: e });
      expect(early.code).toBe(6);
      expect(early.stderr).toContain(`report ${id} is not ready yet (status: progress)`);
      expect(early.stderr).toContain(`hint: add --wait to wait for it: reporting download ${id} --wait`);
      expect(slow.requests.some((r) => r.endpoint === 'download')).toBe(false);
      // given up at --max-wait: the hint is the same command, with its -o, not a placeholder
      const late = await runCli(['download', id, '--wait', '--max-wait', '300ms', '--poll-interval', '100ms', '-o', join(dir, 'x.csv')], { env: e });
      expect(late.code).toBe(6);
      expect(late.stderr).toContain(`hint: pick it up later with: reporting download ${id} --wait -o ${join(dir, 'x.csv')}\n`);
      const statuses = () => slow.requests.filter((r) => r.endpoint === 'status').length;
      const waiting = runCli(['download', id, '--wait', '--poll-interval', '100ms', '-o', join(dir, 'x.csv'), '-q'], { env: e });
      await until(() => statuses() >= 3, 'two polls of the waiting download');
      expect(slow.requests.some((r) => r.endpoint === 'download')).toBe(false);
      slow.advance(4000);
      const waited = await waiting;
      expect(waited.code).toBe(0);
      // `reporting buyer` above submitted it from this configuration folder: its requested columns
      expect(readFileSync(join(dir, 'x.csv'), 'utf8')).toMatch(/^displays,clicks,/);
    } finally {
      await slow.close();
    }
  });

  it('status requests that give up (a failing server) while the report goes on: exit 5, with the command that picks it up', async () => {
    const failing = await startSandbox({ port: 0, readyDelayMs: 50, faults: { errors: [{ status: 503, endpoint: 'status', first: 100 }] } });
    try {
      const dir = tempDir();
      const e = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: failing.baseUrl, REPORTING_TOKEN: failing.token };
      const target = join(dir, 'w.csv');
      const result = await runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', target, '--retries', '1'], { env: e });
      expect(result.code).toBe(5);
      const id = /submitted buyer report ([0-9a-f]+)/.exec(result.stderr)![1]!;
      expect(result.stderr).toMatch(new RegExp(`^error: POST /status-reporting: HTTP 503: .*, after 2 attempts, while waiting for report ${id}$`, 'm'));
      expect(result.stderr).toContain(`hint: the server is failing; try again later, or raise --retries; the report goes on: pick it up later with: reporting download ${id} --wait --columns displays,clicks,downloads,leads,landings,revenueEuro,valueDollar,eyesTrackings -o ${target}\n`);
    } finally {
      await failing.close();
    }
  });

  it('a failed report: exit 6, its ID and the command that picks it up later', async () => {
    const failing = await startSandbox({ port: 0, readyDelayMs: 50, faults: { reportStatus: 'failed' } });
    try {
      const dir = tempDir();
      const e = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: failing.baseUrl, REPORTING_TOKEN: failing.token };
      const result = await runCli(['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', join(dir, 'y.csv'), '--poll-interval', '30ms'], { env: e });
      expect(result.code).toBe(6);
      const id = /submitted buyer report ([0-9a-f]+)/.exec(result.stderr)![1]!;
      expect(result.stderr).toContain(`error: report ${id} ended in status "failed"`);
      // the server's message says the same again: not repeated; and no hint to download it
      expect(result.stderr).toMatch(new RegExp(`^error: report ${id} ended in status "failed"$`, 'm'));
      expect(result.stderr).toMatch(/^hint: it will not become ready: submit the report again/m);
      expect(result.stderr).not.toContain('reporting download');
      expect(listing(dir)).toEqual([]);
    } finally {
      await failing.close();
    }
  });
});
