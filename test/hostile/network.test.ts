// What a hostile or broken server sends cannot hurt the user (issue 11, items 5 to 11 and the
// duplicate keys and prototype names of 12): each attack runs the built CLI against
// test/hostile/server.ts and checks the exit code, that no secret and no escape byte reached stderr,
// that nothing outside the target folder changed, and bounds on time and memory (generous: CI is slow).

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join, relative } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, peakRss, startCli, type Result } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { json, startHostile, type Handler, type Hostile, type Route } from './server.js';

const TOKEN = 'k9-SECRETTOKEN';
const MiB = 1024 * 1024;

let hostile: Hostile | undefined;
afterEach(async () => {
  await hostile?.close();
  hostile = undefined;
});

/** Every file under a folder (but `skip`), with a digest of its bytes and its mode. */
function snapshot(root: string, skip: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (path === skip) continue;
      const stat = statSync(path);
      if (stat.isDirectory()) walk(path);
      else files.set(relative(root, path), `${stat.mode} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`);
    }
  };
  walk(root);
  return files;
}

interface Attack extends Result {
  ms: number;
  peakBytes: number;
  /** the target folder, where outputs go */
  out: string;
  /** files outside the target folder that appeared, changed or went away */
  changed: string[];
}

/** Runs the CLI against a hostile server with a token in the environment, in a folder of its own. */
async function attack(handlers: Partial<Record<Route, Handler>>, args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Attack> {
  hostile = await startHostile(handlers);
  const root = tempDir();
  const out = join(root, 'out');
  mkdirSync(out);
  mkdirSync(join(root, '.config'));
  const before = snapshot(root, out);
  const started = performance.now();
  const child = startCli(args, {
    cwd: root,
    env: { HOME: root, REPORTING_CONFIG_DIR: join(root, '.config'), REPORTING_BASE_URL: hostile.baseUrl, REPORTING_TOKEN: TOKEN, ...options.env },
  });
  let peakBytes = 0;
  const sampler = setInterval(() => { peakBytes = Math.max(peakBytes, peakRss(child.pid as number) ?? 0); }, 20);
  const result = await collect(child, { input: options.input, timeoutMs: 90_000 });
  clearInterval(sampler);
  const ms = performance.now() - started;
  const after = snapshot(root, out);
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((path) => before.get(path) !== after.get(path));
  return { ...result, ms, peakBytes, out, changed };
}

/** What every attack must leave true, whatever it attacked. */
function expectHarmless(result: Attack, secrets: string[] = [TOKEN]): void {
  for (const secret of secrets) expect(result.stderr).not.toContain(secret);
  expect(result.stderr).not.toMatch(/\x1b|\x9b/);
  expect(result.stderr).not.toMatch(/internal error|this is a bug|\n\s+at /);
  expect(result.changed).toEqual([]);
}

/** Headers now, then one byte every `everyMs` until the client goes away. */
const trickle = (everyMs: number, first = '{'): Handler => (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.write(first);
  const timer = setInterval(() => res.write(' '), everyMs);
  res.on('close', () => clearInterval(timer));
};

/** An answer that never ends: as fast as the client reads, until it goes away. */
const flood = (status: number): Handler => (_req, res) => {
  res.writeHead(status, { 'Content-Type': 'text/html' });
  const chunk = Buffer.alloc(MiB, 'x');
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on('drain', pump);
  pump();
};

const rowsOf = (data: string) => (_req: unknown, res: ServerResponse) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(`{"data":${data},"summary":{"since":"2026-11-01T00:00:00+01:00","until":"2026-11-01T23:59:59+01:00","breakdowns":["COUNTRY"],"timezone":"europe/paris"}}`);
};

describe('a hostile server', () => {
  it('5: sees no secret in the -v trace, in any encoding it echoes it', async () => {
    const password = 'pa"ss  wörd\t-SECRETPART-xyz';
    const echo: Handler = (req, res) => json(res, 400, {
      response: { error_id: 'BAD', error: `you sent ${req.body} and ${encodeURIComponent(password)} and ${password.replace(/\s+/g, ' ')}` },
    });
    const escaped = Array.from(password, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    const login = await attack(
      { auth: (req, res) => { res.statusCode = 400; res.end(`<pre>${req.body}\n${escaped}\n${password}\n${encodeURIComponent(password)}</pre>`); } },
      ['login', '-v', '--email', 'me@example.com', '--password-stdin'],
      { input: `${password}\n` },
    );
    expect(login.code).toBe(4);
    expect(login.stderr).toContain('POST /auth-reporting');
    expectHarmless(login, [TOKEN, 'SECRETPART', 'ss w', 'wörd', 'w\\u00f6rd']);

    const status = await attack({ status: echo }, ['status', 'r1', '-v', '--retries', '0'], { env: { REPORTING_TOKEN: 'k9' } });
    expect(status.code).toBe(4);
    expect(status.stderr).toMatch(/you sent \*\*\*|you sent id=r1/);
    expect(status.stderr).not.toMatch(/k9/);
    expectHarmless(status);
  });

  it('6: gets no token over plain HTTP from a base URL with user info, which is not echoed', async () => {
    const result = await attack({}, ['status', 'r1'], { env: { REPORTING_BASE_URL: 'http://me:hunter2-SECRET@127.0.0.1:9' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/must not carry a user name or password/);
    expectHarmless(result, [TOKEN, 'hunter2']);
    expect(hostile?.received).toEqual([]);
  });

  it('7: cannot hold the CLI with answers that trickle: status, download, and --max-wait', async () => {
    const status = await attack({ status: trickle(100) }, ['status', 'r1', '--timeout', '1s', '--retries', '1']);
    expect(status.code).toBe(5);
    expect(status.stderr).toMatch(/no complete answer within 1(\.0)?s \(--timeout\)/);
    expect(status.ms).toBeLessThan(15_000);
    expect(hostile?.received.filter((r) => r.route === 'status')).toHaveLength(2);
    expectHarmless(status);

    const download = await attack({ download: trickle(100) }, ['download', 'r1', '-o', 'out/report.csv', '--timeout', '2s', '--retries', '0']);
    expect(download.code).toBe(5);
    expect(download.stderr).toMatch(/stalled/);
    expect(download.ms).toBeLessThan(20_000);
    expect(readdirSync(download.out)).toEqual([]);
    expectHarmless(download);

    const wait = await attack({ status: trickle(100) }, ['status', 'r1', '--wait', '--max-wait', '2s', '--timeout', '10m']);
    expect(wait.code).toBe(6);
    expect(wait.stderr).toMatch(/not ready within 2(\.0)?s \(--max-wait\)/);
    expect(wait.ms).toBeLessThan(15_000);
    expectHarmless(wait);
  }, 90_000);

  it('8: sends a huge row: read in linear time, and one beyond 64 MiB refused with exit 5 and bounded memory', async () => {
    const long = 'x'.repeat(20 * MiB);
    const big = await attack({ download: rowsOf(`[{"country":"FR","note":"${long}"},{"country":"DE","note":"short"}]`) }, ['download', 'r1', '-o', 'out/big.csv']);
    expect(big.code).toBe(0);
    const rows = parse(readFileSync(join(big.out, 'big.csv')), { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.country, row.note?.length])).toEqual([['FR', long.length], ['DE', 5]]);
    expect(big.ms).toBeLessThan(30_000);
    expectHarmless(big);

    const huge = await attack({ download: rowsOf(`[{"country":"FR","note":"${'y'.repeat(70 * MiB)}"}]`) }, ['download', 'r1', '-o', 'out/huge.csv', '--retries', '0']);
    expect(huge.code).toBe(5);
    expect(huge.stderr).toMatch(/larger than 64 MiB/);
    expect(readdirSync(huge.out)).toEqual([]);
    expect(huge.ms).toBeLessThan(30_000);
    expect(huge.peakBytes).toBeLessThan(900 * MiB);
    expectHarmless(huge);
  }, 90_000);

  it('9: cannot grow the CLI with an endless error body, or an endless answer', async () => {
    const result = await attack({ status: flood(503) }, ['status', 'r1', '--retries', '1']);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/HTTP 503/);
    expect(result.ms).toBeLessThan(20_000);
    expect(result.peakBytes).toBeLessThan(300 * MiB);
    expectHarmless(result);

    const campaigns = await attack({ campaigns: flood(200) }, ['campaigns']);
    expect(campaigns.code).toBe(5);
    expect(campaigns.stderr).toMatch(/answered more than 128 MiB/);
    expect(campaigns.ms).toBeLessThan(30_000);
    expect(campaigns.peakBytes).toBeLessThan(700 * MiB);
    expectHarmless(campaigns);
  }, 60_000);

  it('10: sends malformed HTTP: a network error, retried, then exit 5', async () => {
    const result = await attack(
      { status: (_req, _res, socket) => { socket.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n'); } },
      ['status', 'r1', '--retries', '2'],
    );
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/malformed HTTP.*after 3 attempts/);
    expect(hostile?.received.filter((r) => r.route === 'status')).toHaveLength(3);
    expectHarmless(result);
  });

  it('11: cannot make the CLI spend its retries at once with a lenient Retry-After', async () => {
    const headers = ['0', '1.5', 'Thu, 01 Jan 1970 00:00:00 GMT', 'soon 5'];
    const times: number[] = [];
    const result = await attack({
      status: (_req, res) => {
        times.push(performance.now());
        res.setHeader('Retry-After', headers[(times.length - 1) % headers.length] as string);
        json(res, 503, { response: { error_id: 'BUSY', error: 'busy' } });
      },
    }, ['status', 'r1', '--retries', '3']);
    expect(result.code).toBe(5);
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((time, i) => time - (times[i] as number));
    // "0" and the past date wait the backoff floor (250 ms, then 1 s at the third retry); "1.5" and
    // "soon 5" are no Retry-After at all: the backoff decides
    expect(gaps[0]).toBeGreaterThanOrEqual(240);
    expect(gaps[2]).toBeGreaterThanOrEqual(990);
    expect(result.ms).toBeLessThan(20_000);
    expectHarmless(result);
  });

  it('12: sends a key twice in a row: one column with the last value, in every format', async () => {
    const data = '[{"country":"FR","clicks":1,"country":"DE"},{"country":"IT","clicks":2}]';
    for (const format of ['csv', 'ndjson', 'json']) {
      const result = await attack({ download: rowsOf(data) }, ['download', 'r1', '-o', `out/r.${format}`, '--format', format]);
      expect(result.code).toBe(0);
      expectHarmless(result);
      const text = readFileSync(join(result.out, `r.${format}`), 'utf8');
      const rows = format === 'csv'
        ? (parse(text, { bom: true }) as string[][])
        : format === 'ndjson' ? text.trim().split('\n').map((line) => JSON.parse(line) as unknown) : (JSON.parse(text) as { data: unknown[] }).data;
      expect(rows, format).toEqual(format === 'csv'
        ? [['country', 'clicks'], ['DE', '1'], ['IT', '2']]
        : [{ country: 'DE', clicks: 1 }, { country: 'IT', clicks: 2 }]);
    }
  });

  it('12: receives --param constructor and __proto__ as given', async () => {
    const result = await attack({}, ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--param', 'constructor=x', '--param', '__proto__=y', '-o', 'out/r.csv', '--poll-interval', '10ms']);
    expect(result.code).toBe(0);
    const submitted = hostile?.received.find((r) => r.route === 'buyer');
    expect(submitted?.body).toMatch(/&constructor=x&__proto__=y$/);
    expect(existsSync(join(result.out, 'r.csv'))).toBe(true);
    expectHarmless(result);
  });
});
