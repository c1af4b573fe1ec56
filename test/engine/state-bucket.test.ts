// The bucket's state store (src/engine/stores/bucket.ts) on moto: its lease taken over by one of
// several takers only, a live lease refused, a lost lease stopping the writes, and a write
// retried after its answer was lost taken for what it is.

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
