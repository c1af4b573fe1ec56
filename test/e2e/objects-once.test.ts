// One object, one creation: S3's event notifications (Lambda, SQS, Snowpipe auto-ingest) fire once
// per object created, so an object bigger than one part is created by its CompleteMultipartUpload
// alone, never copied onto itself afterwards to attach metadata. The requests are counted by a
// reverse proxy on 127.0.0.1 in front of moto: every request the CLI sends to the bucket, as sent.
// With --state, the SHA-256 the state records and the object's ETag decide `unchanged`: an identical
// re-run creates nothing, a deleted or changed object is written again.

import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { MOTO, startMoto, type Moto } from '../helpers/moto.js';
import { tempDir } from '../helpers/tmp.js';

/** S3's smallest part: each day's object below is two of them and more */
const PART = 5 * 1024 * 1024;
const DAYS = ['2026-11-01', '2026-11-02'];
const RUN = ['run', 'buyer', '--since', DAYS[0] as string, '--until', DAYS[1] as string, '--breakdowns', 'DAILY', '--chunk', 'day', '--columns', 'all', '--poll-interval', '20ms', '--log-format', 'json'];

interface Seen {
  method: string;
  key: string;
  query: URLSearchParams;
  copy: boolean;
}

/** A reverse proxy to moto that remembers each request: its method, key, query, and whether it
 * copies (x-amz-copy-source). */
function countingProxy(target: string): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const upstream = new URL(target);
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    seen.push({ method: req.method ?? '', key: decodeURIComponent(url.pathname.split('/').slice(2).join('/')), query: url.searchParams, copy: req.headers['x-amz-copy-source'] !== undefined });
    const headers = { ...req.headers };
    delete headers.expect; // answered here (node:http sends 100 Continue itself); moto gets the body at once
    const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((done) => { server.closeAllConnections(); server.close(() => done()); }) });
    });
  });
}

/** The requests that create an object: a PutObject (a PUT that is not a part), a CopyObject (a PUT
 * with x-amz-copy-source), a CompleteMultipartUpload (a POST naming an upload). */
function creations(seen: readonly Seen[]): { key: string; request: string }[] {
  return seen.flatMap(({ method, key, query, copy }) => {
    if (method === 'PUT' && copy) return [{ key, request: 'CopyObject' }];
    if (method === 'PUT' && !query.has('partNumber') && key !== '') return [{ key, request: 'PutObject' }];
    if (method === 'POST' && query.has('uploadId')) return [{ key, request: 'CompleteMultipartUpload' }];
    return [];
  });
}

let moto: Moto;
let sandbox: Sandbox;
let proxy: Awaited<ReturnType<typeof countingProxy>>;
beforeAll(async () => {
  if (!MOTO) return;
  // some 7 MB of CSV a day (--columns all): two parts and more
  [moto, sandbox] = await Promise.all([startMoto(), startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 70_000 })]);
  await moto.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
  proxy = await countingProxy(moto.endpoint);
}, 60_000);
afterAll(async () => {
  await Promise.all([proxy?.close(), moto?.close(), sandbox?.close()]);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function read(key: string): Promise<Buffer> {
  const answer = await moto.s3.send(new GetObjectCommand({ Bucket: 'reports', Key: key }));
  return Buffer.from(await (answer.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

describe.skipIf(!MOTO)('one creation per object (moto behind a counting proxy)', () => {
  it('an object above the part size: one CompleteMultipartUpload, no copy; its sha256 in the state; an identical re-run creates nothing; a deleted or changed object is written again', async () => {
    const dir = tempDir();
    const state = join(dir, 'state.json');
    const env = {
      HOME: dir, REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
      ...moto.env, AWS_ENDPOINT_URL_S3: proxy.url, REPORTING_S3_PART_SIZE: String(PART),
    };
    const keys = DAYS.map((day) => `once/${day}.csv`);
    const args = [...RUN, '--state', state, '-o', 's3://reports/once/{since}.csv'];
    /** one run: its exit code, each key's creations, and each window's event (written, unchanged) */
    const runOnce = async (extra: string[] = []) => {
      const from = proxy.seen.length;
      const result = await runCli([...args, ...extra], { env, timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
      const made = creations(proxy.seen.slice(from));
      const events = result.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; file?: string });
      const outcome = (key: string) => events.filter((e) => (e.event === 'written' || e.event === 'unchanged') && e.file === `s3://reports/${key}`).map((e) => e.event);
      return Object.fromEntries(keys.map((key) => [key, { made: made.filter((c) => c.key === key).map((c) => c.request), outcome: outcome(key) }]));
    };

    // the first run: each object is made by its CompleteMultipartUpload, and nothing else
    expect(await runOnce()).toEqual(Object.fromEntries(keys.map((key) => [key, { made: ['CompleteMultipartUpload'], outcome: ['written'] }])));
    expect(proxy.seen.filter((s) => s.copy), 'no CopyObject at all').toEqual([]);
    const recorded = () => (JSON.parse(readFileSync(state, 'utf8')) as { windows: { file: string; bytes: number; sha256: string; etag: string }[] }).windows;
    for (const [i, key] of keys.entries()) {
      const object = await read(key);
      expect(object.length, 'more than one part').toBeGreaterThan(PART);
      const head = await moto.s3.send(new HeadObjectCommand({ Bucket: 'reports', Key: key }));
      expect(recorded()[i]).toMatchObject({ file: `s3://reports/${key}`, bytes: object.length, sha256: sha256(object), etag: head.ETag });
    }
    const etags = await Promise.all(keys.map(async (key) => (await moto.s3.send(new HeadObjectCommand({ Bucket: 'reports', Key: key }))).ETag));

    // the same numbers again (the lookback fetches both days): unchanged, nothing created
    expect(await runOnce(['--lookback', '2'])).toEqual(Object.fromEntries(keys.map((key) => [key, { made: [], outcome: ['unchanged'] }])));
    for (const [i, key] of keys.entries()) expect((await moto.s3.send(new HeadObjectCommand({ Bucket: 'reports', Key: key }))).ETag).toBe(etags[i]);

    // the second day's object deleted, the first one's replaced by other bytes: both written again, once each
    await moto.s3.send(new DeleteObjectCommand({ Bucket: 'reports', Key: keys[1] }));
    await moto.s3.send(new PutObjectCommand({ Bucket: 'reports', Key: keys[0], Body: 'date,displays\n' }));
    expect(await runOnce(['--lookback', '2'])).toEqual(Object.fromEntries(keys.map((key) => [key, { made: ['CompleteMultipartUpload'], outcome: ['written'] }])));
    for (const [i, key] of keys.entries()) expect(sha256(await read(key))).toBe(recorded()[i]?.sha256);
    expect(proxy.seen.filter((s) => s.copy), 'no CopyObject at all').toEqual([]);
  }, 120_000);

  it('an object of one part: one PutObject, which carries its sha256 metadata', async () => {
    const dir = tempDir();
    const env = {
      HOME: dir, REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
      ...moto.env, AWS_ENDPOINT_URL_S3: proxy.url, REPORTING_S3_PART_SIZE: String(PART),
    };
    const from = proxy.seen.length;
    const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--poll-interval', '20ms', '-q', '-o', 's3://reports/once/small.csv'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(creations(proxy.seen.slice(from))).toEqual([{ key: 'once/small.csv', request: 'PutObject' }]);
    const object = await read('once/small.csv');
    expect(object.length).toBeLessThan(PART);
    expect((await moto.s3.send(new HeadObjectCommand({ Bucket: 'reports', Key: 'once/small.csv' }))).Metadata?.sha256).toBe(sha256(object));
  });
});
