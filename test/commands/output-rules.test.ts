// The rules every command shares, run in-process against the sandbox: --columns checked against
// the row fields, bounds of durations and day offsets, the one --json rule, -o extensions.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli as main } from '../../src/cli/program.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { argv, fakeContext, parseOptions } from '../helpers/ctx.js';
import { encodeBody } from '../../src/api/encode.js';
import { buildReportRequest, requestParams } from '../../src/report/request.js';
import { tempDir } from '../helpers/tmp.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 0 });
});
afterAll(() => sandbox.close());

async function cli(...args: string[]) {
  const dir = tempDir();
  const fake = fakeContext({ cwd: dir, now: Date.now(), env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token } });
  const before = sandbox.requests.length;
  const code = await main(argv(...args), fake.ctx);
  return { code, stdout: fake.stdout.text, stderr: fake.stderr.text, requests: sandbox.requests.length - before, dir };
}

const DAY = ['--since', '2026-11-01', '--until', '2026-11-01'];

describe('--columns', () => {
  it.each([
    ['run', 'buyer', '--columns', 'Country,clikcs', /no row has a field "clikcs"; did you mean clicks\?/],
    ['run', 'buyer', '--columns', 'revenueDollar', /the metric revenueDollar arrives as the field valueDollar/],
    ['run', 'seller', '--columns', 'campaignName', /no row has a field "campaignName"/],
    ['download', 'abc', '--columns', 'nope', /no row has a field "nope"/],
  ])('refuses a name no row can have, before any request: %s %s %s %s', async (command, sideOrId, flag, value, message) => {
    const result = await cli(command, sideOrId, ...(command === 'run' ? DAY : []), flag, value, '-o', 'x.csv');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/^hint: fields: date, /m);
    expect(result.requests).toBe(0);
  });

  it('is repeatable and comma-separated, matched case-insensitively and written in the contract spelling; --no-validate lets anything through', async () => {
    const result = await cli('run', 'buyer', ...DAY, '--breakdowns', 'DAILY,COUNTRY', '--columns', 'DATE,Country', '--columns', 'clicks', '--columns', 'valueDollar', '-o', 'c.csv', '-q');
    expect(result.code).toBe(0);
    const rows = parse(readFileSync(join(result.dir, 'c.csv'), 'utf8')) as string[][];
    expect(rows[0]).toEqual(['date', 'country', 'clicks', 'valueDollar']);
    expect(rows[1]![0]).toBe('2026-11-01');
    const free = await cli('run', 'buyer', ...DAY, '--columns', 'country,whatever', '--no-validate', '-o', 'f.csv', '-q');
    expect(free.code).toBe(0);
    expect(readFileSync(join(free.dir, 'f.csv'), 'utf8').split('\n')[0]).toBe('country,whatever');
  });
});

describe('bounds', () => {
  it.each([
    [['--poll-interval', '0'], /--poll-interval must be from 10ms to 1h, not "0"/],
    [['--poll-interval', '597h'], /--poll-interval must be from 10ms to 1h/],
    [['--max-wait', '0'], /--max-wait must be from 100ms to 24h/],
    [['--max-wait', '25h'], /--max-wait must be from 100ms to 24h/],
    [['--timeout', '0'], /--timeout must be from 100ms to 1h/],
    [['--timeout', '2h'], /--timeout must be from 100ms to 1h/],
  ])('run %j: a usage error, no request', async (flags, message) => {
    const result = await cli('run', 'buyer', ...DAY, ...flags, '-o', 'x.csv');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.requests).toBe(0);
  });

  it('-Nd goes back at most 36500 days', async () => {
    const far = await cli('buyer', '--since', '-999999999d', '--until', 'today');
    expect(far.code).toBe(2);
    expect(far.stderr).toMatch(/--since "-999999999d": goes back more than 36500 days/);
    expect(far.requests).toBe(0);
    const ok = await cli('buyer', '--since', '-36500d', '--until', 'today');
    expect(ok.stderr).not.toMatch(/goes back/);
    expect(ok.code).not.toBe(2);
  });

  it('sandbox durations', async () => {
    for (const [args, message] of [[['--delay', '2h'], /--delay must be from 0ms to 1h/], [['--latency', '11m'], /--latency must be from 0ms to 10m/]] as const) {
      const { code, stderr } = await parseOptions('sandbox', '--port', '0', ...args);
      expect(code).toBe(2);
      expect(stderr).toMatch(message);
    }
  });
});

describe('one --json rule', () => {
  it('with -o, the file keeps its format and stdout describes it (campaigns, run, download)', async () => {
    const campaigns = await cli('campaigns', '--json', '-o', 'c.csv', '-q');
    expect(campaigns.code).toBe(0);
    expect(readFileSync(join(campaigns.dir, 'c.csv'), 'utf8')).toMatch(/^advertiserId,/);
    expect(JSON.parse(campaigns.stdout)).toMatchObject({ file: join(campaigns.dir, 'c.csv'), format: 'csv' });
    const run = await cli('run', 'buyer', ...DAY, '--json', '-o', 'r.csv', '-q');
    expect(JSON.parse(run.stdout)).toMatchObject({ file: join(run.dir, 'r.csv'), format: 'csv' });
    const download = await cli('download', JSON.parse(run.stdout).reportId, '--json', '-o', 'd.ndjson', '-q');
    expect(JSON.parse(download.stdout)).toMatchObject({ file: join(download.dir, 'd.ndjson'), format: 'ndjson' });
  });

  it.each([
    ['campaigns', '--json', '--format', 'csv'],
    ['run', 'buyer', ...DAY, '--json', '--format', 'csv'],
    ['download', 'abc', '--json', '--format', 'ndjson'],
  ])('without -o, --json and another --format contradict each other: %s', async (...args) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--json prints the result as JSON on stdout, which contradicts --format/);
    expect(result.requests).toBe(0);
  });

  it.each([
    ['run', 'buyer', ...DAY, '-o', 'report.txt'],
    ['download', 'abc', '-o', 'report.txt'],
    ['campaigns', '-o', 'c.xlsx'],
  ])('an -o extension no format owns is a usage error: %s', async (...args) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no format writes "\.(xlsx|txt)" files/);
    expect(result.requests).toBe(0);
    const forced = await cli(...args, '--format', 'json', '-q');
    expect(forced.code).not.toBe(2);
  });

  it('an extension meant for a format this tool writes under another name gets a did-you-mean', async () => {
    for (const [file, near] of [['report.xls', '.xlsx'], ['report.XLS', '.xlsx'], ['report.pq', '.parquet']]) {
      const result = await cli('run', 'buyer', ...DAY, '-o', file as string);
      expect(result.code).toBe(2);
      expect(result.stderr.split('\n')[0]).toBe(`error: no format writes "${file?.slice(6).toLowerCase()}" files (-o ${file}); did you mean ${near}?`);
      expect(result.requests).toBe(0);
    }
    // campaigns writes no xlsx: no suggestion of one
    const campaigns = await cli('campaigns', '-o', 'c.xls');
    expect(campaigns.stderr).not.toMatch(/did you mean/);
  });

  it('download\'s -o given twice is a usage error naming both files, not a silent last-one-wins; run writes both', async () => {
    const result = await cli('download', 'abc', '--output', 'a.csv', '-o', 'b.csv');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/given twice \(a\.csv, then b\.csv\)/);
    expect(result.requests).toBe(0);
    const both = await cli('run', 'buyer', ...DAY, '-o', 'a.csv', '-o', 'b.csv', '-q');
    expect(both.code, both.stderr).toBe(0);
    expect(readFileSync(join(both.dir, 'b.csv'), 'utf8')).toBe(readFileSync(join(both.dir, 'a.csv'), 'utf8'));
  });

  it('.tsv is CSV with tabs; a file without an extension is CSV', async () => {
    const tsv = await cli('run', 'buyer', ...DAY, '-o', 't.tsv', '-q');
    expect(readFileSync(join(tsv.dir, 't.tsv'), 'utf8').split('\n')[0]).toMatch(/^displays\tclicks\t/);
    const bare = await cli('run', 'buyer', ...DAY, '-o', 'plain', '-q');
    expect(readFileSync(join(bare.dir, 'plain'), 'utf8').split('\n')[0]).toMatch(/^displays,clicks,/);
  });
});

describe('smaller things a user meets', () => {
  it.each([
    ['buyer', '--app-id', /--app-id is a seller filter, not for buyer reports/],
    ['seller', '--campaign-id', /--campaign-id is a buyer filter, not for seller reports/],
  ])('%s with a filter of the other side says which side it belongs to', async (side, flag, message) => {
    const result = await cli(side, ...DAY, flag, '9');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.requests).toBe(0);
    const help = await cli(side, '--help');
    expect(help.stdout).not.toContain(flag);
  });

  it('download --help lists only the placeholder it fills', async () => {
    const help = await cli('download', '--help');
    expect(help.stdout).toMatch(/placeholders\s+\{reportId\}/);
    expect(help.stdout).not.toMatch(/placeholders\s+\{side\}/);
    const run = await cli('run', '--help');
    expect(run.stdout).toMatch(/placeholders\s+\{side\}\s+\{since\}\s+\{until\}\s+\{reportId\}/);
  });

  it('--body json sends since and until as integers', () => {
    const request = buildReportRequest('buyer', { since: '2026-11-01', until: '2026-11-01', metrics: [], breakdowns: [], filters: {}, params: [], validate: true }, Date.now());
    const body = JSON.parse(encodeBody(requestParams(request), 'json').body);
    expect(body).toMatchObject({ since: 1793487600, until: 1793573999 });
    expect(encodeBody(requestParams(request), 'form').body).toMatch(/^since=1793487600&until=1793573999&/);
  });

  it('without a terminal, the moment a report is ready is told once', async () => {
    const result = await cli('run', 'buyer', ...DAY, '-o', 'r.csv', '--poll-interval', '10ms');
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/status ready/);
    expect(result.stderr.match(/ready/g)).toHaveLength(1);
  });
});

describe('--format and the -o extension agree', () => {
  it('a format written into a file named for another one is a usage error, before any request', async () => {
    for (const args of [['run', 'buyer', ...DAY, '--format', 'parquet', '-o', 'mism.csv'], ['run', 'buyer', ...DAY, '--format', 'json', '-o', 'x.jsonl'], ['campaigns', '--format', 'json', '-o', 'c.csv']]) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(/^error: --format \w+ would write \w+ into a "\.\w+" file/m);
      expect(result.requests).toBe(0);
    }
    // an extension no format owns takes the --format given; the same format's own extensions agree
    for (const args of [['run', 'buyer', ...DAY, '--format', 'csv', '-o', 'out.txt', '-q'], ['run', 'buyer', ...DAY, '--format', 'csv', '-o', 'out.tsv', '-q']]) {
      expect((await cli(...args)).code, args.join(' ')).toBe(0);
    }
  });
});

