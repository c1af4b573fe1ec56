// -o s3://BUCKET/KEY against a real S3 server on loopback (moto): every format lands byte for
// byte as the same run's local file, objects appear only whole, a failed, interrupted or killed
// run leaves no object and (after the next run) no unfinished upload, unchanged objects are left
// untouched with --state, and a target that cannot be written is refused before any submit.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListPartsCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { BIN, NODE, baseEnv, collect, runCli, startCli } from '../helpers/cli.js';
import { MOTO, SECRET, startMoto, type Moto } from '../helpers/moto.js';
import { tempDir } from '../helpers/tmp.js';

// every field of a row (--columns all): the scaled reports are large enough for several parts
const RUN = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY', '--poll-interval', '20ms', '--columns', 'all'];
/** S3's smallest part: the big report below is more than three of them */
const PART = 5 * 1024 * 1024;

let moto: Moto;
let sandbox: Sandbox;
let big: Sandbox;
/** some 120 MB of CSV: the runs stopped mid-upload are stopped long before its end */
let huge: Sandbox;
beforeAll(async () => {
  if (!MOTO) return;
  [moto, sandbox, big, huge] = await Promise.all([
    startMoto(),
    startSandbox({ port: 0, readyDelayMs: 30 }),
    // some 21 MB of CSV: four parts and more
    startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 70_000 }),
    startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 400_000 }),
  ]);
  await moto.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
}, 60_000);
afterAll(async () => {
  await Promise.all([moto?.close(), sandbox?.close(), big?.close(), huge?.close()]);
});

const envFor = (dir: string, server: Sandbox = sandbox, extra: Record<string, string> = {}) => ({
  HOME: dir, REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: server.token,
  ...moto.env, REPORTING_S3_PART_SIZE: String(PART), ...extra,
});

async function read(s3: S3Client, key: string): Promise<Buffer | undefined> {
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: 'reports', Key: key }));
    return Buffer.from(await (answer.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
  } catch (error) {
    if ((error as Error).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

const head = (key: string) => moto.s3.send(new HeadObjectCommand({ Bucket: 'reports', Key: key }));
const uploads = async (prefix: string) => (await moto.s3.send(new ListMultipartUploadsCommand({ Bucket: 'reports', Prefix: prefix }))).Uploads ?? [];
/** Parts uploaded so far to `key`'s unfinished uploads (but `except`); an upload aborted meanwhile
 * (the check before submit starts and aborts one) counts none. */
const partsOf = async (key: string, except?: string) => {
  let parts = 0;
  for (const upload of await uploads(key)) {
    if (upload.UploadId === except) continue;
    try {
      parts += (await moto.s3.send(new ListPartsCommand({ Bucket: 'reports', Key: key, UploadId: upload.UploadId }))).Parts?.length ?? 0;
    } catch (error) {
      if ((error as Error).name !== 'NoSuchUpload') throw error;
    }
  }
  return parts;
};
/** Polls an async condition (the S3 server's view) every 50 ms. */
async function eventually(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sha256 = async (bytes: Buffer) => (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex');

describe.skipIf(!MOTO)('-o s3://: a real S3 server on loopback (moto)', () => {
  it('every format: the object equals the same run\'s local file, byte for byte; sha256 in its metadata; nothing on stderr with -q', async () => {
    const dir = tempDir();
    for (const format of ['csv', 'json', 'ndjson', 'parquet', 'xlsx']) {
      const local = join(dir, `local.${format}`);
      const remote = await runCli([...RUN, '-o', `s3://reports/formats/r.${format}`, '-q'], { env: envFor(dir) });
      expect(remote.code, remote.stderr).toBe(0);
      expect(remote.stderr, 'no SDK notice, no warning').toBe('');
      expect((await runCli([...RUN, '-o', local, '-q'], { env: envFor(dir) })).code).toBe(0);
      const object = await read(moto.s3, `formats/r.${format}`);
      expect(object?.equals(readFileSync(local)), format).toBe(true);
      const meta = await head(`formats/r.${format}`);
      expect(meta.Metadata?.sha256).toBe(await sha256(object as Buffer));
    }
    expect(await uploads('formats/')).toEqual([]);
  });

  it('per-window templates and a chunked run into one object: as the local files', async () => {
    const dir = tempDir();
    const args = [...RUN, '--chunk', 'day', '-q'];
    expect((await runCli([...args, '-o', 's3://reports/merged/{side}.csv'], { env: envFor(dir) })).code).toBe(0);
    expect((await runCli([...args, '-o', join(dir, 'merged.csv')], { env: envFor(dir) })).code).toBe(0);
    expect((await read(moto.s3, 'merged/buyer.csv'))?.toString()).toBe(readFileSync(join(dir, 'merged.csv'), 'utf8'));
    expect((await runCli([...args, '-o', 's3://reports/days/{side}-{since}.csv'], { env: envFor(dir) })).code).toBe(0);
    expect((await runCli([...args, '-o', join(dir, '{side}-{since}.csv')], { env: envFor(dir) })).code).toBe(0);
    for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) {
      expect((await read(moto.s3, `days/buyer-${day}.csv`))?.toString()).toBe(readFileSync(join(dir, `buyer-${day}.csv`), 'utf8'));
    }
  });

  it('campaigns -o s3://: the object equals the local file', async () => {
    const dir = tempDir();
    expect((await runCli(['campaigns', '-o', 's3://reports/campaigns.json', '-q'], { env: envFor(dir) })).code).toBe(0);
    expect((await runCli(['campaigns', '-o', join(dir, 'campaigns.json'), '-q'], { env: envFor(dir) })).code).toBe(0);
    expect((await read(moto.s3, 'campaigns.json'))?.toString()).toBe(readFileSync(join(dir, 'campaigns.json'), 'utf8'));
  });

  it('a report of more than three parts streams up as it downloads, and arrives whole', async () => {
    const dir = tempDir();
    const child = startCli([...RUN, '-o', 's3://reports/big/r.csv', '-q'], { env: envFor(dir, big) });
    const done = collect(child, { timeoutMs: 120_000 });
    // parts are on the server while the download still runs: nothing is held whole in memory
    await eventually(async () => (await partsOf('big/r.csv')) >= 2, 'two parts uploaded', 60_000);
    expect(await read(moto.s3, 'big/r.csv'), 'not visible before it is whole').toBeUndefined();
    const result = await done;
    expect(result.code, result.stderr).toBe(0);
    const local = join(dir, 'r.csv');
    expect((await runCli([...RUN, '-o', local, '-q'], { env: envFor(dir, big) })).code).toBe(0);
    const object = await read(moto.s3, 'big/r.csv') as Buffer;
    expect(object.length).toBeGreaterThan(3 * PART);
    expect(object.equals(readFileSync(local))).toBe(true);
    expect(await uploads('big/')).toEqual([]);
  }, 180_000);

  it.each([['SIGINT', 130], ['SIGTERM', 143]] as const)('%s mid-upload: exit %i, no object, the upload aborted', async (signal, code) => {
    const dir = tempDir();
    const key = `${signal}/r.csv`;
    const child = startCli([...RUN, '-o', `s3://reports/${key}`, '-q'], { env: envFor(dir, huge) });
    const done = collect(child, { timeoutMs: 120_000 });
    await eventually(async () => (await partsOf(key)) >= 1, 'a part uploaded', 60_000);
    child.kill(signal);
    const result = await done;
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(new RegExp(`^error: interrupted \\(${signal}\\)`));
    expect(await read(moto.s3, key)).toBeUndefined();
    expect(await uploads(`${signal}/`)).toEqual([]);
    expect(readdirSync(join(dir, '.config', 'uploads')), 'no record left').toEqual([]);
  }, 180_000);

  it('a failed download (connection reset, no retries): exit 5, no object, no upload left', async () => {
    const faulty = await startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 40_000, faults: { resetDownload: { afterBytes: 9_000_000, times: 1 } } });
    try {
      const dir = tempDir();
      const result = await runCli([...RUN, '-o', 's3://reports/failed/r.csv', '--retries', '0'], { env: envFor(dir, faulty) });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/error: the download broke off/);
      expect(await read(moto.s3, 'failed/r.csv')).toBeUndefined();
      expect(await uploads('failed/')).toEqual([]);
    } finally {
      await faulty.close();
    }
  }, 120_000);

  it('a download that breaks off and is retried: a fresh upload, the first one aborted, the object whole', async () => {
    const faulty = await startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 40_000, faults: { resetDownload: { afterBytes: 9_000_000, times: 1 } } });
    try {
      const dir = tempDir();
      const result = await runCli([...RUN, '-o', 's3://reports/retried/r.csv'], { env: envFor(dir, faulty) });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/downloading again \(retry 1 of 4\)/);
      // the fault is spent: the same report again, to a file
      expect((await runCli([...RUN, '-o', join(dir, 'r.csv'), '-q'], { env: envFor(dir, faulty) })).code).toBe(0);
      expect((await read(moto.s3, 'retried/r.csv'))?.equals(readFileSync(join(dir, 'r.csv')))).toBe(true);
      expect(await uploads('retried/')).toEqual([]);
    } finally {
      await faulty.close();
    }
  }, 120_000);

  it('the object store gone mid-upload: exit 5 naming it, the pick-up command, no object', async () => {
    const own = await startMoto();
    try {
      await own.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
      const dir = tempDir();
      const child = startCli([...RUN, '-o', 's3://reports/gone/r.csv'], { env: envFor(dir, huge, { AWS_ENDPOINT_URL_S3: own.endpoint }) });
      const done = collect(child, { timeoutMs: 120_000 });
      await eventually(async () => {
        const [upload] = (await own.s3.send(new ListMultipartUploadsCommand({ Bucket: 'reports' }))).Uploads ?? [];
        if (!upload) return false;
        return ((await own.s3.send(new ListPartsCommand({ Bucket: 'reports', Key: 'gone/r.csv', UploadId: upload.UploadId })).catch(() => ({ Parts: [] }))).Parts?.length ?? 0) >= 1;
      }, 'a part uploaded', 60_000);
      await own.close();
      const result = await done;
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^error: cannot write s3:\/\/reports\/gone\/r.csv: cannot reach the object store \(ECONNREFUSED\)$/m);
      expect(result.stderr).toMatch(/^hint: .*pick it up with: reporting download [0-9a-f]+ --wait --columns all -o s3:\/\/reports\/gone\/r.csv$/m);
      expect(result.stderr).not.toContain(SECRET);
    } finally {
      await own.close();
    }
  }, 180_000);

  it('SIGKILL mid-upload: no object; the next run aborts the unfinished upload it left, and only it', async () => {
    const dir = tempDir();
    // another program's unfinished upload to the same key: never touched
    const { CreateMultipartUploadCommand } = await import('@aws-sdk/client-s3');
    const foreign = await moto.s3.send(new CreateMultipartUploadCommand({ Bucket: 'reports', Key: 'killed/r.csv' }));
    const child = startCli([...RUN, '-o', 's3://reports/killed/r.csv', '-q'], { env: envFor(dir, huge) });
    const done = collect(child);
    await eventually(async () => (await partsOf('killed/r.csv', foreign.UploadId)) >= 1, 'a part uploaded', 60_000);
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    expect(await read(moto.s3, 'killed/r.csv')).toBeUndefined();
    expect((await uploads('killed/')).length).toBe(2);
    const again = await runCli([...RUN, '-o', 's3://reports/killed/r.csv', '-q'], { env: envFor(dir, sandbox) });
    expect(again.code, again.stderr).toBe(0);
    expect((await uploads('killed/')).map((u) => u.UploadId)).toEqual([foreign.UploadId]);
    expect(await read(moto.s3, 'killed/r.csv')).toBeDefined();
  }, 180_000);

  it('a record of another machine (a pod gone): its upload aborted once the record is 10 minutes old, not before', async () => {
    const dir = tempDir();
    const { CreateMultipartUploadCommand } = await import('@aws-sdk/client-s3');
    const key = 'pods/r.csv';
    // where a run records its uploads to this key: uploads/<sha256 of endpoint, bucket, key>/
    const records = join(dir, '.config', 'uploads', createHash('sha256').update(`${moto.endpoint}\nreports\n${key}`).digest('hex').slice(0, 32));
    mkdirSync(records, { recursive: true });
    const ids: string[] = [];
    for (const [name, age] of [['stale', 11 * 60], ['fresh', 60]] as const) {
      const { UploadId } = await moto.s3.send(new CreateMultipartUploadCommand({ Bucket: 'reports', Key: key }));
      ids.push(UploadId as string);
      const file = join(records, `1-${name}.json`);
      writeFileSync(file, JSON.stringify({ uploadId: UploadId, bucket: 'reports', key, pid: 1, host: 'reporting-nightly-28911-xk2p9', startedAt: new Date().toISOString() }));
      const when = new Date(Date.now() - age * 1000);
      utimesSync(file, when, when);
    }
    const result = await runCli([...RUN, '-o', `s3://reports/${key}`, '-q'], { env: envFor(dir) });
    expect(result.code, result.stderr).toBe(0);
    expect((await uploads('pods/')).map((u) => u.UploadId)).toEqual([ids[1]]);
    expect(readdirSync(records)).toEqual(['1-fresh.json']);
  });

  it('--state: a re-run leaves unchanged objects untouched (same ETag and LastModified); the state records URL, size, sha256, ETag', async () => {
    const dir = tempDir();
    const state = join(dir, 'state.json');
    const args = [...RUN, '--chunk', 'day', '--state', state, '-o', 's3://reports/state/{since}.csv'];
    const first = await runCli(args, { env: envFor(dir) });
    expect(first.code, first.stderr).toBe(0);
    const before = await head('state/2026-11-02.csv');
    // LastModified has whole seconds: a rewrite a second later would show
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const second = await runCli([...args, '--full-refresh', '--log-format', 'json'], { env: envFor(dir) });
    expect(second.code, second.stderr).toBe(0);
    const events = second.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; file?: string });
    // windows are delivered as they finish: in any order
    expect(events.filter((e) => e.event === 'unchanged').map((e) => e.file).sort()).toEqual(['2026-11-01', '2026-11-02', '2026-11-03'].map((d) => `s3://reports/state/${d}.csv`));
    const after = await head('state/2026-11-02.csv');
    expect(after.ETag).toBe(before.ETag);
    expect(after.LastModified?.getTime()).toBe(before.LastModified?.getTime());
    const recorded = (JSON.parse(readFileSync(state, 'utf8')) as { windows: { file: string; bytes: number; sha256: string; etag: string }[] }).windows[1];
    const object = await read(moto.s3, 'state/2026-11-02.csv') as Buffer;
    expect(recorded).toMatchObject({ file: 's3://reports/state/2026-11-02.csv', bytes: object.length, sha256: await sha256(object), etag: after.ETag });
  }, 60_000);

  it('a missing bucket: exit 2 naming it, before any submit', async () => {
    const dir = tempDir();
    const before = sandbox.requests.length;
    const result = await runCli([...RUN, '-o', 's3://no-such-bucket/r.csv'], { env: envFor(dir) });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: cannot write -o s3://no-such-bucket/r.csv: the bucket no-such-bucket does not exist\nhint: create it, or check the name and AWS_ENDPOINT_URL_S3/AWS_REGION\n');
    expect(sandbox.requests.length).toBe(before);
  });

  it('wrong or missing credentials: exit 3 before any submit, no secret printed (-v included)', async () => {
    const strict = await startMoto({ auth: true });
    try {
      const dir = tempDir();
      const before = sandbox.requests.length;
      const refused = await runCli([...RUN, '-o', 's3://reports/r.csv', '-v'], { env: envFor(dir, sandbox, { AWS_ENDPOINT_URL_S3: strict.endpoint }) });
      expect(refused.code).toBe(3);
      expect(refused.stderr).toMatch(/^error: cannot write -o s3:\/\/reports\/r.csv: the credentials were refused \(InvalidAccessKeyId\)\nhint: set AWS_ACCESS_KEY_ID/m);
      expect(refused.stderr + refused.stdout).not.toContain(SECRET);
      const none = await runCli([...RUN, '-o', 's3://reports/r.csv'], { env: { ...envFor(dir), AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' } });
      expect(none.code).toBe(3);
      expect(none.stderr).toMatch(/^error: cannot write -o s3:\/\/reports\/r.csv: no AWS credentials were found\n/);
      expect(sandbox.requests.length).toBe(before);
    } finally {
      await strict.close();
    }
  });

  it('an endpoint that does not answer: exit 5 before any submit', async () => {
    const dir = tempDir();
    const before = sandbox.requests.length;
    const result = await runCli([...RUN, '-o', 's3://reports/r.csv'], { env: envFor(dir, sandbox, { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9' }) });
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/^error: cannot write -o s3:\/\/reports\/r.csv: cannot reach the object store \(ECONNREFUSED\)\n/);
    expect(sandbox.requests.length).toBe(before);
  }, 60_000);
});

describe('-o s3:// needs no server to be refused when malformed', () => {
  it('no bucket, no key, a bad bucket name: exit 2', async () => {
    const dir = tempDir();
    for (const [target, why] of [['s3://', 'no bucket named'], ['s3://reports', 'no object key'], ['s3://reports/dir/', 'no object key \\(it ends with /\\)'], ['s3://Reports/r.csv', '"Reports" is not a bucket name']]) {
      const result = await runCli([...RUN, '-o', target as string], { env: { HOME: dir, REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: 'http://127.0.0.1:9', REPORTING_TOKEN: 'x' } });
      expect(result.code, target).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^error: -o ${(target as string).replace(/[/]/g, '\\/')}: ${why}`));
    }
  });
});

describe('the S3 client is loaded only when an s3:// target is used', () => {
  /** The bare specifiers the CLI's modules import, through a module resolution hook. */
  async function importsOf(args: string[], env: Record<string, string>): Promise<string[]> {
    const dir = tempDir();
    const log = join(dir, 'imports.log');
    writeFileSync(log, '');
    writeFileSync(join(dir, 'hooks.mjs'), `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (!specifier.startsWith('.') && !specifier.startsWith('node:') && !specifier.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, specifier + '\\n');
  return next(specifier, context);
}
`);
    writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(`file://${join(dir, 'hooks.mjs')}`)});\n`);
    const child = spawn(NODE, ['--import', join(dir, 'register.mjs'), BIN, ...args], { env: baseEnv({ HOME: dir, REPORTING_CONFIG_DIR: join(dir, '.config'), ...env }), stdio: ['pipe', 'pipe', 'pipe'] });
    const result = await collect(child);
    expect(result.code, result.stderr).toBe(0);
    return readFileSync(log, 'utf8').split('\n').filter(Boolean);
  }

  it('a run to a local file imports no @aws-sdk module; a run to s3:// does', async () => {
    const dir = tempDir();
    const server = await startSandbox({ port: 0, readyDelayMs: 30 });
    try {
      const env = { REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: server.token };
      const local = await importsOf([...RUN, '-o', join(dir, 'r.csv'), '-q'], env);
      expect(local).toContain('zod');
      expect(local.filter((name) => name.startsWith('@aws-sdk/') || name.startsWith('@smithy/'))).toEqual([]);
      if (!MOTO) return;
      const remote = await importsOf([...RUN, '-o', 's3://reports/lazy/r.csv', '-q'], { ...env, ...moto.env });
      expect(remote).toContain('@aws-sdk/client-s3');
    } finally {
      await server.close();
    }
  }, 60_000);
});
