// The bucket's state store (src/engine/stores/bucket.ts) on moto: its lease taken over by one of
// several takers only, a live lease refused, a lost lease stopping the writes, and a write
// retried after its answer was lost taken for what it is. The lease's failures (from a review)
// on moto behind a proxy that hangs or drops answers on purpose.

import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockedError } from '../../src/fs/lock.js';
import { BucketStore, StateChangedError } from '../../src/engine/stores/bucket.js';
import type { StoreDeps } from '../../src/engine/stores/store.js';
import { HOST } from '../helpers/host.js';
import { MOTO, startMoto, type Moto } from '../helpers/moto.js';
import { tempDir } from '../helpers/tmp.js';

let moto: Moto;
beforeAll(async () => {
  if (!MOTO) return;
  moto = await startMoto();
  // the SDK's credential chain reads this process's environment, as the CLI's does
  Object.assign(process.env, moto.env);
  await moto.s3.send(new CreateBucketCommand({ Bucket: 'unit' }));
}, 60_000);
afterAll(async () => {
  await moto?.close();
});

const deps = (extra: Record<string, string> = {}): Pick<StoreDeps, 'env' | 'configDir' | 'host' | 'now' | 'trace'> => ({
  env: { ...moto.env, ...extra }, configDir: tempDir(), host: HOST, now: Date.now,
});
const text = async (key: string) => (await (await moto.s3.send(new GetObjectCommand({ Bucket: 'unit', Key: key }))).Body as { transformToString(): Promise<string> }).transformToString();

type Mode = (req: IncomingMessage, n: number) => 'pass' | 'hang' | 'drop-answer' | 'hold-answer';
/** A proxy to moto: 'hang' never answers, 'drop-answer' forwards then resets the client's socket. */
async function proxy(mode: Mode): Promise<{ endpoint: string; server: Server }> {
  let n = 0;
  const server = createServer((req, res) => {
    const how = mode(req, n++);
    if (how === 'hang') return;
    const target = new URL(moto.endpoint);
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      if (how === 'drop-answer') { answer.resume(); answer.on('end', () => req.socket.destroy()); return; }
      // done upstream, never answered: the client gives up on a write that landed
      if (how === 'hold-answer') { answer.resume(); return; }
      res.writeHead(answer.statusCode ?? 500, answer.headers);
      answer.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { endpoint: `http://127.0.0.1:${port}`, server };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isLease = (req: IncomingMessage) => req.method === 'PUT' && (req.url ?? '').split('?')[0]?.endsWith('.lock') === true;

describe.skipIf(!MOTO)('the lease when the network misbehaves', () => {
  it('a holder whose renewals never answer stops writing before its lease can be taken over', async () => {
    // renewals (If-Match on the lease) hang; every other request passes
    const p = await proxy((req) => (isLease(req) && req.headers['if-match'] ? 'hang' : 'pass'));
    const a = new BucketStore('s3://unit/hung/s.json', deps({ AWS_ENDPOINT_URL_S3: p.endpoint, REPORTING_STATE_LEASE: '1s' }));
    await a.lock();
    const writes = a.writes(() => ({ windows: ['a'] }), { opening: () => '', replayed: false });
    await writes.write('{}');
    await sleep(1600);
    // the lease ran out: another run takes it over, as designed
    const b = new BucketStore('s3://unit/hung/s.json', deps({ REPORTING_STATE_LEASE: '1s' }));
    const bLock = await b.lock();
    await b.read();
    // the old holder must not write any more: it cannot know it still holds the lease
    await expect(writes.write('{}'), 'a write landed after the lease expired and was taken over').rejects.toThrow(/lost the lock/);
    await bLock.release();
    p.server.closeAllConnections(); p.server.close();
  }, 20_000);

  it('a lease creation retried by the SDK (first answer lost) finds its own lease: taken, not "in use by" itself', async () => {
    const p = await proxy((req, n) => (isLease(req) && req.headers['if-none-match'] === '*' && n === 0 ? 'drop-answer' : 'pass'));
    const a = new BucketStore('s3://unit/retried-lease/s.json', deps({ AWS_ENDPOINT_URL_S3: p.endpoint }));
    const lock = await a.lock();
    await lock.release();
    p.server.closeAllConnections(); p.server.close();
  }, 20_000);

  it('a renewal retried by the SDK (first answer lost) keeps the lease', async () => {
    let renewals = 0;
    const p = await proxy((req) => (isLease(req) && req.headers['if-match'] && renewals++ === 0 ? 'drop-answer' : 'pass'));
    // (a 2 s lease: the renewal and its retry must land within one lease, and moto answers slowly
    // on a busy machine; with 1 s this failed under load 7-22 though the retry was right)
    const a = new BucketStore('s3://unit/retried-renewal/s.json', deps({ AWS_ENDPOINT_URL_S3: p.endpoint, REPORTING_STATE_LEASE: '2s' }));
    const lock = await a.lock();
    const writes = a.writes(() => ({ windows: [] }), { opening: () => '', replayed: false });
    await sleep(1400);
    await expect(writes.write('{}')).resolves.toBeUndefined();
    await lock.release();
    await expect(text('retried-renewal/s.json.lock'), 'the run\'s own lease is left behind').rejects.toThrow();
    p.server.closeAllConnections(); p.server.close();
  }, 20_000);

  it('release() returns when a renewal never answers (the pod exits)', async () => {
    const p = await proxy((req) => (isLease(req) && req.headers['if-match'] ? 'hang' : 'pass'));
    const a = new BucketStore('s3://unit/hung-release/s.json', deps({ AWS_ENDPOINT_URL_S3: p.endpoint, REPORTING_STATE_LEASE: '1s' }));
    const lock = await a.lock();
    await sleep(500); // a renewal is now in flight, and never answers
    const outcome = await Promise.race([lock.release().then(() => 'released'), sleep(5000).then(() => 'still waiting after 5 s')]);
    expect(outcome).toBe('released');
    p.server.closeAllConnections(); p.server.close();
  }, 20_000);

  it('release() while a renewal that landed is unanswered: the lease is deleted all the same (found by its nonce)', async () => {
    const p = await proxy((req) => (isLease(req) && req.headers['if-match'] ? 'hold-answer' : 'pass'));
    const a = new BucketStore('s3://unit/landed-renewal/s.json', deps({ AWS_ENDPOINT_URL_S3: p.endpoint, REPORTING_STATE_LEASE: '1s' }));
    const lock = await a.lock();
    await sleep(500); // a renewal has reached moto (a new ETag) and its answer is held
    await lock.release();
    await expect(text('landed-renewal/s.json.lock'), 'a run that ended left its lease behind').rejects.toThrow();
    p.server.closeAllConnections(); p.server.close();
  }, 20_000);

  it('a missing bucket is said, not taken for a state not written yet', async () => {
    await expect(new BucketStore('s3://no-such-bucket/s.json', deps()).read()).rejects.toThrow(/the bucket no-such-bucket does not exist/);
  });
});

describe.skipIf(!MOTO)('the state in a bucket', () => {
  for (const round of [1, 2, 3, 4, 5]) {
    it(`a lease that ran out is taken over by one of four takers, the others refused naming the new holder (round ${round})`, async () => {
      const key = `takeover-${round}/s.json`;
      const past = new Date(Date.now() - 120_000).toISOString();
      await moto.s3.send(new PutObjectCommand({ Bucket: 'unit', Key: `${key}.lock`, Body: JSON.stringify({ pid: 1, host: 'gone-pod', nonce: 'n', since: past, renewedAt: past, leaseMs: 60_000 }) }));
      const outcomes = await Promise.allSettled([1, 2, 3, 4].map(() => new BucketStore(`s3://unit/${key}`, deps()).lock()));
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const lost of outcomes.filter((o) => o.status === 'rejected')) {
        expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(LockedError);
        expect(String((lost as PromiseRejectedResult).reason.message)).toMatch(/is in use by process \d+/);
      }
      const holder = JSON.parse(await text(`${key}.lock`)) as { host: string };
      expect(holder.host).not.toBe('gone-pod');
      await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
    });
  }

  it('a lease renewed in time is never taken over; one whose holder cannot renew it is lost, and its writes are refused', async () => {
    const store = new BucketStore('s3://unit/renewed/s.json', deps({ REPORTING_STATE_LEASE: '1s' }));
    const lock = await store.lock();
    const writes = store.writes(() => ({ windows: [] }), { opening: () => '', replayed: false });
    await writes.write('{}');
    // three lease times: renewed every third, so another taker is refused throughout
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await expect(new BucketStore('s3://unit/renewed/s.json', deps({ REPORTING_STATE_LEASE: '1s' })).lock()).rejects.toBeInstanceOf(LockedError);
    }
    // someone deletes the lease and takes it: the holder's next renewal finds it gone, and stops writing
    const other = JSON.stringify({ pid: 2, host: 'other-pod', nonce: 'x', since: new Date().toISOString(), renewedAt: new Date(Date.now() + 60_000).toISOString(), leaseMs: 60_000 });
    await moto.s3.send(new PutObjectCommand({ Bucket: 'unit', Key: 'renewed/s.json.lock', Body: other }));
    await new Promise((resolve) => setTimeout(resolve, 800));
    await expect(writes.write('{}')).rejects.toThrow(/lost the lock of the state s3:\/\/unit\/renewed\/s\.json/);
    await lock.release();
    expect(await text('renewed/s.json.lock'), 'a lost lease is not deleted: it is another run\'s').toBe(other);
  });

  it('a write whose answer was lost is found in place (its own bytes): not a race; another document is', async () => {
    const store = new BucketStore('s3://unit/retried/s.json', deps());
    expect(await store.read()).toBeUndefined();
    await store.put('{"a":1}\n');
    // the same bytes put by someone (as a retried request would have): the ETag moved, the content did not
    await moto.s3.send(new PutObjectCommand({ Bucket: 'unit', Key: 'retried/s.json', Body: '{"a":2}\n' }));
    await moto.s3.send(new PutObjectCommand({ Bucket: 'unit', Key: 'retried/s.json', Body: '{"a":3}\n' }));
    await expect(store.put('{"a":3}\n')).resolves.toBeUndefined();
    await moto.s3.send(new PutObjectCommand({ Bucket: 'unit', Key: 'retried/s.json', Body: '{"b":1}\n' }));
    await expect(store.put('{"a":4}\n')).rejects.toBeInstanceOf(StateChangedError);
    expect(await text('retried/s.json')).toBe('{"b":1}\n');
  });
});
