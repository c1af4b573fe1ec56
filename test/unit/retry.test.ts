// The one retry policy (src/retry.ts, issue 34 item 4): each loop's waits, exact, on a fake clock
// (the clock, the sleep and the randomness are handed in), and the failures classified by code.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Http } from '../../src/api/http.js';
import type { ReportingClient } from '../../src/api/client.js';
import { clientFor, objectError } from '../../src/destinations/objects.js';
import { REGION_MISSING, s3DelayMs, s3RetryStrategy } from '../../src/destinations/s3-client.js';
import { downloadInto } from '../../src/engine/download.js';
import { waitForStoreLock } from '../../src/engine/stores/store.js';
import { BodyBrokenError } from '../../src/export/export.js';
import { EXIT } from '../../src/errors.js';
import { LockedError, lockFile, waitForLock } from '../../src/fs/lock.js';
import { duckDbFailure, openDuckDb } from '../../src/load/duckdb.js';
import { waitUntilReady } from '../../src/report/poll.js';
import { backoffDelay, POLICY, RACE_TRIES, tryAgainAtOnce } from '../../src/retry.js';
import { FakeClock } from '../helpers/clock.js';
import { HOST } from '../helpers/host.js';

const dir = mkdtempSync(join(tmpdir(), 'retry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** a fake clock that also writes down every wait asked of it */
function recording(start = 0) {
  const clock = new FakeClock(start);
  const waits: number[] = [];
  const sleep = (ms: number, signal?: AbortSignal) => {
    waits.push(ms);
    return clock.sleep(ms, signal);
  };
  return { clock, waits, sleep, now: clock.now };
}

describe('the policies, side by side', () => {
  it('each backoff: its first wait, growth, cap and jitter', () => {
    const mid = () => 0.5;
    expect([0, 1, 2, 6, 7].map((n) => backoffDelay(POLICY.http, n, mid))).toEqual([250, 500, 1000, 15_000, 15_000]);
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(POLICY.poll, n, () => 1))).toEqual([1050, 2100, 4200, 7875, 7875]);
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(POLICY.duckdbLock, n, mid))).toEqual([100, 200, 400, 800, 1600, 2000]);
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(POLICY.fileLock, n, mid))).toEqual([7.5, 10, 15, 25, 45, 55]);
    expect([0, 5].map((n) => backoffDelay(POLICY.storeLock, n, mid))).toEqual([2000, 2000]);
    expect([0, 1, 9].map((n) => backoffDelay(POLICY.s3, n, mid))).toEqual([25, 50, 10_000]);
  });

  it('a step racing another process is tried again at once, RACE_TRIES times, and only on the error it races on', async () => {
    let tries = 0;
    const gone = Object.assign(new Error('gone'), { code: 'ENOENT' });
    await expect(tryAgainAtOnce(RACE_TRIES, (e) => (e as { code?: string }).code === 'ENOENT', async () => { tries++; throw gone; })).rejects.toBe(gone);
    expect(tries).toBe(5);
    tries = 0;
    await expect(tryAgainAtOnce(RACE_TRIES, () => false, async () => { tries++; throw new Error('other'); })).rejects.toThrow('other');
    expect(tries).toBe(1);
  });
});

describe('HTTP: the injected clock, sleep and randomness', () => {
  it('waits the policy\'s full-jitter backoff between retries, on the sleep it is given, and honours Retry-After', async () => {
    const answers = [503, 503, 429, 200];
    const server = createServer((request, response) => {
      const status = answers.shift() ?? 200;
      response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '3' } : {}) });
      response.end(status === 200 ? '{"ok":true}' : '{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const fake = recording(1_000_000);
      const http = new Http({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, timeoutMs: 5000, retries: 4, encoding: 'form', userAgent: 't',
        signal: new AbortController().signal, now: fake.now, random: () => 0.5, sleep: fake.sleep,
      });
      const answer = await http.send({ method: 'GET', path: '/x' });
      expect(answer.status).toBe(200);
      // 250 and 500 (half of 500 and 1000 ms), then Retry-After: 3 s (above the floor of 1 s)
      expect(fake.waits).toEqual([250, 500, 3000]);
      expect(fake.now()).toBe(1_000_000 + 3750);
      await http.close();
    } finally {
      server.close();
    }
  });
});

describe('downloads: the injected clock', () => {
  it('a download broken off is started again after the HTTP backoff, on the sleep it is given, --retries times', async () => {
    const fake = recording();
    let downloads = 0;
    const client = {
      http: { config: { timeoutMs: 60_000 } },
      download: async () => { downloads++; return { body: (async function* () { yield new Uint8Array(0); })() }; },
    } as unknown as ReportingClient;
    const receiver = { restartable: true, abort: async () => undefined, take: async () => { throw new BodyBrokenError('the answer was cut short'); } };
    await expect(downloadInto(client, 'r1', { retries: 3, signal: new AbortController().signal, random: () => 0.5, sleep: fake.sleep, open: async () => receiver })).rejects.toBeInstanceOf(BodyBrokenError);
    expect(downloads).toBe(4);
    expect(fake.waits).toEqual([250, 500, 1000]);
  });

  it('the receiver opens while the request goes out: an answer without a receiver is thrown away, a request that failed meanwhile is the error', async () => {
    let dumped = 0;
    const answered = { http: { config: { timeoutMs: 60_000 } }, download: async () => ({ body: { dump: async () => { dumped++; } } }) } as unknown as ReportingClient;
    const full = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    const options = { retries: 0, signal: new AbortController().signal, random: () => 0.5 };
    await expect(downloadInto(answered, 'r1', { ...options, open: async () => { throw full; } })).rejects.toBe(full);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(dumped).toBe(1);

    // the request fails before the receiver is open: that failure, once, the receiver aborted
    const refused = new Error('connection refused');
    const failing = { http: { config: { timeoutMs: 60_000 } }, download: async () => { throw refused; } } as unknown as ReportingClient;
    let aborted = 0;
    const receiver = { restartable: true, abort: async () => { aborted++; }, take: async () => { throw new Error('never read'); } };
    const slowOpen = () => new Promise<typeof receiver>((resolve) => setTimeout(() => resolve(receiver), 20));
    await expect(downloadInto(failing, 'r1', { ...options, open: slowOpen })).rejects.toBe(refused);
    expect(aborted).toBe(1);
  });
});

describe('polling: the injected clock', () => {
  it('asks at 1 s, 2 s, 4 s, then 7.5 s (±5%: here +5%) apart until ready', async () => {
    const fake = recording();
    let asked = 0;
    const client = { status: async () => ({ status: ++asked < 6 ? 'progress' : 'ready' }) } as unknown as ReportingClient;
    const status = await waitUntilReady(client, 'r1', { maxWaitMs: 600_000, signal: new AbortController().signal, now: fake.now, sleep: fake.sleep, random: () => 1 });
    expect(status.status).toBe('ready');
    expect(fake.waits).toEqual([1050, 2100, 4200, 7875, 7875]);
  });
});

describe('file locks: the injected clock', () => {
  it('a lock held by a live process is tried again after 5 ms and a jittered 5 ms doubling, until the wait is over', async () => {
    const file = join(dir, 'held.json');
    const held = lockFile(file, HOST, { pid: 999_999, alive: () => true });
    try {
      const fake = recording();
      await expect(waitForLock(file, HOST, { timeoutMs: 50, now: fake.now, sleep: fake.sleep, random: () => 0.5, alive: () => true })).rejects.toBeInstanceOf(LockedError);
      expect(fake.waits).toEqual([7.5, 10, 15, 25]);
    } finally {
      held.release();
    }
  });

  it('a state\'s lock (--lock-wait) is tried every 2 s, or just after the lease it found runs out, up to the wait', async () => {
    const fake = recording();
    const refused = () => { throw new LockedError('s.json', undefined); };
    const error = await waitForStoreLock(async () => refused(), 5000, { now: fake.now, sleep: fake.sleep }).catch((e: unknown) => e);
    expect(fake.waits).toEqual([2000, 2000, 1000]);
    expect((error as Error).message).toMatch(/\(waited 5 s for it: --lock-wait\)$/);
    const lease = recording();
    await expect(waitForStoreLock(async () => refused(), 1000, { now: lease.now, sleep: lease.sleep }, () => lease.now() + 300)).rejects.toBeInstanceOf(LockedError);
    expect(lease.waits).toEqual([350, 350, 300]);
  });
});

describe('S3: the SDK\'s attempts follow --retries, its waits the policy', () => {
  it('retries throttled and transient failures --retries times, waiting on the injected sleep; never a client error', async () => {
    const fake = recording();
    const strategy = s3RetryStrategy(2, { now: fake.now, sleep: fake.sleep, random: () => 0.5 });
    let token = await strategy.acquireInitialRetryToken();
    token = await strategy.refreshRetryTokenForRetry(token, { errorType: 'TRANSIENT' });
    token = await strategy.refreshRetryTokenForRetry(token, { errorType: 'THROTTLING' });
    expect(token.getRetryCount()).toBe(2);
    expect(token.getRetryDelay()).toBe(0);
    await expect(strategy.refreshRetryTokenForRetry(token, { errorType: 'TRANSIENT' })).rejects.toThrow();
    await expect(strategy.refreshRetryTokenForRetry(await strategy.acquireInitialRetryToken(), { errorType: 'CLIENT_ERROR' })).rejects.toThrow();
    // 25 ms (half of 50), then a throttled answer's 1 s (half of 2 s)
    expect(fake.waits).toEqual([25, 1000]);
    // a Retry-After hint is followed, at most 5 s past the backoff
    expect(s3DelayMs(0, { errorType: 'THROTTLING', retryAfterHint: new Date(3000) }, { now: () => 0, random: () => 0.5 })).toBe(3000);
    expect(s3DelayMs(0, { errorType: 'THROTTLING', retryAfterHint: new Date(60_000) }, { now: () => 0, random: () => 0.5 })).toBe(5500);
  });

  it('a missing region is told by its code, whatever the SDK\'s words', () => {
    const error = Object.assign(new Error('some other words'), { name: REGION_MISSING });
    const failure = objectError(error, 's3://bucket-b/k', 'write');
    expect(failure.message).toBe('cannot write s3://bucket-b/k: no region is set');
    expect(failure.exitCode).toBe(EXIT.usage);
    // the SDK's words alone no longer decide it (a plain error that reached no server)
    expect(objectError(new Error('Region is missing'), 's3://bucket-b/k', 'write').message).not.toMatch(/no region/);
  });
});

describe('S3: a missing region, found by asking the client', () => {
  it('a client with no region (no AWS_REGION, no profile, no endpoint): its failure is REGION_MISSING, said as such', async () => {
    const names = ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE', 'AWS_EC2_METADATA_DISABLED', 'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3'] as const;
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
    Object.assign(process.env, { AWS_CONFIG_FILE: join(dir, 'no-config'), AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-credentials'), AWS_EC2_METADATA_DISABLED: 'true' });
    try {
      const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
      const client = await clientFor({ env: {}, configDir: dir, host: HOST, retries: 0 });
      const error = await client.send(new HeadObjectCommand({ Bucket: 'bucket-b', Key: 'k' })).catch((e: unknown) => e);
      expect((error as Error).name).toBe(REGION_MISSING);
      expect(objectError(error, 's3://bucket-b/k', 'write').message).toBe('cannot write s3://bucket-b/k: no region is set');
    } finally {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});

describe('DuckDB: a held file, by code and on the injected clock', () => {
  it('classifies by DuckDB\'s error type: a lock names its holder, memory is memory, "lock" in other words is not a lock', () => {
    expect(duckDbFailure(new Error('IO Error: Could not set lock on file "/x.duckdb": Conflicting lock is held in /usr/bin/node (PID 4242). See also https://duckdb.org/docs'))).toEqual({ kind: 'locked', pid: '4242' });
    expect(duckDbFailure(new Error('Out of Memory Error: failed to pin block of size 256.0 KiB'))).toEqual({ kind: 'memory' });
    expect(duckDbFailure(new Error('Failed to append: could not allocate block of size 32.0 KiB (1.9 MiB/1.9 MiB used)'))).toEqual({ kind: 'memory' });
    expect(duckDbFailure(new Error('IO Error: The file "/x" exists, but it is not a valid DuckDB database file!'))).toEqual({ kind: 'invalid' });
    expect(duckDbFailure(new Error('Catalog Error: Table with name conflicting_lock_is_held does not exist!'))).toEqual({ kind: 'other' });
  });

  it('waits for a file another process holds 100 ms, 200 ms... up to --max-wait, then names the holder', async () => {
    const file = join(dir, 'held.duckdb');
    const script = `import('@duckdb/node-api').then(async ({ DuckDBInstance }) => { const i = await DuckDBInstance.create(${JSON.stringify(file)}); const c = await i.connect(); await c.run('CREATE TABLE t (a INT)'); globalThis.kept = [i, c]; console.log('held'); setTimeout(() => {}, 60000); });`;
    const holder = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (chunk: Buffer) => { if (chunk.toString().includes('held')) resolve(); });
        holder.once('exit', () => reject(new Error('the holder ended')));
      });
      const fake = recording();
      const error = await openDuckDb(file, `duckdb:${file}`, 5000, fake.sleep, new AbortController().signal, fake.now).catch((e: unknown) => e);
      expect((error as Error).message).toBe(`the DuckDB database duckdb:${file} is held by another process (process ${holder.pid}): DuckDB allows one writer per file`);
      expect((error as { exitCode?: number }).exitCode).toBe(EXIT.usage);
      // the next wait (2 s at 3.1 s) would end past the 5 s: given up then
      expect(fake.waits).toEqual([100, 200, 400, 800, 1600]);
    } finally {
      holder.kill();
    }
  }, 30_000);
});
