// The state in a bucket (`--state s3://BUCKET/KEY`): for pods with no disk of their own. The same
// document as a local file, written whole at each change by a conditional PutObject: If-Match on
// the ETag this run read or wrote last, If-None-Match: * when there was none. A write that finds
// another ETag lost a race (someone changed the state since): it is refused, never overwritten.
//
// The lock is a lease, the object KEY.lock: created with If-None-Match: *, renewed by its holder
// every third of its time (If-Match on its own ETag), released by a delete (If-Match). A lease not
// renewed for its time (REPORTING_STATE_LEASE, 60 s by default) belongs to a run that is gone (a
// killed pod): the next run takes it over, with If-Match on the ETag it judged, so that of two
// takers one wins. Pods' clocks are taken to agree (NTP) within a fraction of the lease.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { parseDuration, formatDuration } from '../../duration.js';
import { CliError, EXIT, UsageError } from '../../errors.js';
import { clientFor, loadS3, objectError } from '../../destinations/objects.js';
import { parseObjectUrl, type ObjectUrl } from '../../destinations/object-url.js';
import { LockedError, type Holder } from '../../fs/lock.js';
import { Serialised, type WriterStart } from '../state-log.js';
import { waitForStoreLock, type LockView, type StateStore, type StateWrites, type StoreDeps, type StoredState, type StoreLock } from './store.js';
import { waitsOf } from '../../retry.js';

export const DEFAULT_LEASE_MS = 60_000;
const LEASE_BOUNDS = { min: 1000, max: 3_600_000 };
/** a state document larger than this is not read (a state of 10 years of hourly windows is ~50 MB) */
const MAX_STATE_BYTES = 256 << 20;

const leaseSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  nonce: z.string(),
  since: z.string(),
  renewedAt: z.string(),
  leaseMs: z.number().int().positive(),
});
type Lease = z.infer<typeof leaseSchema>;

interface SdkError { name?: string; $metadata?: { httpStatusCode?: number } }
const statusOf = (error: unknown) => (error as SdkError | undefined)?.$metadata?.httpStatusCode;
const nameOf = (error: unknown) => (error as SdkError | undefined)?.name;
/** another writer got there first: 412, or 409 when two conditional writes overlap on S3 */
const lostRace = (error: unknown) => statusOf(error) === 412 || statusOf(error) === 409 || nameOf(error) === 'PreconditionFailed';
/** no such object (a missing bucket is not: it is the user's mistake, said as such) */
const missing = (error: unknown) => nameOf(error) !== 'NoSuchBucket' && (statusOf(error) === 404 || nameOf(error) === 'NoSuchKey' || nameOf(error) === 'NotFound');

/** The state changed in the bucket since this run read it: another run, or a hand. Exit 2. */
export class StateChangedError extends CliError {
  constructor(url: string) {
    super(
      `the state ${url} was changed by someone else since this run read it: not overwritten`,
      EXIT.usage,
      'another run wrote it (two runs on one state, or a lease taken over after this run stalled); run again: the next run reads what is there',
    );
  }
}

/** REPORTING_STATE_LEASE: how long a lease lives unrenewed. */
export function leaseMsOf(env: Readonly<Record<string, string | undefined>>): number {
  const text = env.REPORTING_STATE_LEASE;
  return text === undefined || text.trim() === '' ? DEFAULT_LEASE_MS : parseDuration(text, 'REPORTING_STATE_LEASE', LEASE_BOUNDS);
}

export class BucketStore implements StateStore {
  readonly deferrable = true;
  readonly name: string;
  private readonly url: ObjectUrl;
  private readonly lockUrl: ObjectUrl;
  /** the ETag of the document as this run last read or wrote it; null: there was none; undefined: not asked */
  private etag: string | null | undefined;
  private readonly leaseMs: number;
  /** the lease this run holds: once lost, or not known to be held (its renewals unanswered for
   * too long), nothing it writes may land */
  held: { lost: boolean; sure(now: number): boolean } | undefined;

  constructor(target: string, private readonly deps: Pick<StoreDeps, 'env' | 'configDir' | 'host' | 'now' | 'sleep' | 'random' | 'retries' | 'trace' | 'signal'>) {
    this.url = parseObjectUrl(target, '--state');
    this.name = this.url.url;
    this.lockUrl = { ...this.url, url: `${this.url.url}.lock`, key: `${this.url.key}.lock` };
    this.leaseMs = leaseMsOf(deps.env);
  }

  private client(): Promise<S3Client> {
    return clientFor({ env: this.deps.env, configDir: this.deps.configDir, host: this.deps.host, trace: this.deps.trace, retries: this.deps.retries, waits: waitsOf({ now: this.deps.now, random: this.deps.random ?? Math.random, sleep: this.deps.sleep }) });
  }

  private trace(line: string): void {
    this.deps.trace?.(`  s3 ${this.name}: ${line}`);
  }

  /** The object's text and ETag, or undefined when there is none. */
  private async get(url: ObjectUrl, doing: string): Promise<{ text: string; etag: string; modified?: Date } | undefined> {
    const s3 = await loadS3();
    const client = await this.client();
    try {
      const got = await client.send(new s3.GetObjectCommand({ Bucket: url.bucket, Key: url.key }));
      if ((got.ContentLength ?? 0) > MAX_STATE_BYTES) throw new UsageError(`the state ${url.url} is ${got.ContentLength} bytes, more than a state can be (${MAX_STATE_BYTES} bytes)`, 'use another --state');
      const text = (await got.Body?.transformToString('utf8')) ?? '';
      return { text, etag: got.ETag ?? '', modified: got.LastModified };
    } catch (error) {
      if (missing(error)) return undefined;
      throw objectError(error, url.url, doing);
    }
  }

  async read(): Promise<StoredState | undefined> {
    const got = await this.get(this.url, 'read the state');
    this.etag = got ? got.etag : null;
    this.trace(got ? `read (${Buffer.byteLength(got.text)} bytes, ETag ${got.etag})` : 'no state yet');
    return got && { text: got.text };
  }

  /** Replaces the document, if it is still the one this run knows (or still absent). */
  async put(text: string): Promise<void> {
    const s3 = await loadS3();
    const client = await this.client();
    if (this.etag === undefined) {
      // --full-refresh did not read it: what is there now is what this run replaces
      try {
        const head = await client.send(new s3.HeadObjectCommand({ Bucket: this.url.bucket, Key: this.url.key }));
        this.etag = head.ETag ?? null;
      } catch (error) {
        if (!missing(error)) throw objectError(error, this.name, 'read the state');
        this.etag = null;
      }
    }
    if (this.held && (this.held.lost || !this.held.sure(this.deps.now()))) {
      throw new CliError(`lost the lock of the state ${this.name}: its lease could not be renewed in time, or was taken over`, EXIT.usage,
        'the run or its network stalled for longer than the lease (REPORTING_STATE_LEASE); the next run resumes from what was recorded');
    }
    const condition = this.etag === null ? { IfNoneMatch: '*' } : { IfMatch: this.etag };
    try {
      const put = await client.send(new s3.PutObjectCommand({ Bucket: this.url.bucket, Key: this.url.key, Body: text, ContentType: 'application/json', ...condition }));
      this.etag = put.ETag ?? null;
      this.trace(`written (${Buffer.byteLength(text)} bytes, ${this.etag === null ? 'no ETag' : `ETag ${this.etag}`})`);
    } catch (error) {
      if (!lostRace(error)) throw objectError(error, this.name, 'write the state');
      // a write retried after its answer was lost finds itself there: it is this run's
      const now = await this.get(this.url, 'read the state');
      if (now && now.text === text) {
        this.etag = now.etag;
        return;
      }
      throw new StateChangedError(this.name);
    }
  }

  async lock(waitMs = 0): Promise<StoreLock> {
    const lease = new LeaseLock(this, this.leaseMs);
    // a lease runs out at a known time: the next try is then (a killed pod's lease frees itself)
    await waitForStoreLock(() => lease.take(), waitMs, this.deps, (error) => (error instanceof LeaseHeldError ? error.expiry : undefined));
    this.held = lease;
    return lease;
  }

  writes(document: () => { windows: readonly unknown[] }, start: WriterStart): StateWrites {
    return new BucketWrites(this, document, start.text !== undefined || start.replayed);
  }

  /** The lease at KEY.lock, as read, or undefined. */
  async readLease(): Promise<{ lease: Lease | undefined; etag: string; modified?: Date } | undefined> {
    const got = await this.get(this.lockUrl, 'read the lock of');
    if (!got) return undefined;
    let lease: Lease | undefined;
    try {
      const parsed = leaseSchema.safeParse(JSON.parse(got.text));
      lease = parsed.success ? parsed.data : undefined;
    } catch {
      lease = undefined;
    }
    return { lease, etag: got.etag, modified: got.modified };
  }

  /** Writes the lease: created (no ETag) or replacing the one of `etag`. Its new ETag, or
   * undefined when another writer got there first. */
  async writeLease(lease: Lease, etag: string | undefined, signal?: AbortSignal): Promise<string | undefined> {
    const s3 = await loadS3();
    const client = await this.client();
    try {
      const put = await client.send(new s3.PutObjectCommand({
        Bucket: this.lockUrl.bucket, Key: this.lockUrl.key, Body: `${JSON.stringify(lease)}\n`, ContentType: 'application/json',
        ...(etag === undefined ? { IfNoneMatch: '*' } : { IfMatch: etag }),
      }), { abortSignal: signal ?? AbortSignal.timeout(this.leaseMs) });
      return put.ETag ?? '';
    } catch (error) {
      if (lostRace(error) || (etag !== undefined && missing(error))) {
        // a write retried after its answer was lost (the SDK retries) finds itself there: this run's
        const found = await this.readLease().catch(() => undefined);
        if (found?.lease && found.lease.nonce === lease.nonce && found.lease.renewedAt === lease.renewedAt) return found.etag;
        return undefined;
      }
      throw objectError(error, this.lockUrl.url, 'lock');
    }
  }

  /** Deletes the lease if it is still the one of `etag`. */
  async deleteLease(etag: string): Promise<boolean> {
    const s3 = await loadS3();
    const client = await this.client();
    try {
      await client.send(new s3.DeleteObjectCommand({ Bucket: this.lockUrl.bucket, Key: this.lockUrl.key, IfMatch: etag }));
      return true;
    } catch (error) {
      if (lostRace(error) || missing(error)) return false;
      throw objectError(error, this.lockUrl.url, 'unlock');
    }
  }

  /** When a lease read ends: its holder's renewal plus its time; a lease this tool did not write,
   * its last change plus the default time. */
  expiryOf(found: { lease: Lease | undefined; modified?: Date }): number {
    if (found.lease) return Date.parse(found.lease.renewedAt) + found.lease.leaseMs;
    return (found.modified?.getTime() ?? 0) + this.leaseMs;
  }

  async inspectLock(): Promise<LockView | undefined> {
    const found = await this.readLease();
    if (!found) return undefined;
    const now = this.deps.now();
    const renewed = found.lease ? Date.parse(found.lease.renewedAt) : found.modified?.getTime() ?? 0;
    return {
      path: this.lockUrl.url,
      holder: found.lease && holderOf(found.lease),
      local: false,
      stale: now > this.expiryOf(found),
      ageMs: now - renewed,
      renewEveryMs: Math.round((found.lease?.leaseMs ?? this.leaseMs) / 3),
      expiresAt: this.expiryOf(found),
      seen: found.etag,
    };
  }

  async removeLock(found: LockView): Promise<boolean> {
    return this.deleteLease(found.seen as string);
  }

  /** Makes the deps' clock and the process known to the lease. */
  get host() {
    return this.deps.host;
  }

  get now() {
    return this.deps.now;
  }
}

const holderOf = (lease: Lease): Holder => ({ pid: lease.pid, host: lease.host, nonce: lease.nonce, since: lease.since });

/** A lease held, and when it runs out unless renewed. */
class LeaseHeldError extends LockedError {
  constructor(url: string, lease: Lease | undefined, readonly expiry: number, ownLeaseMs: number) {
    super(url, lease && holderOf(lease),
      `its lease runs until ${new Date(expiry).toISOString()} unless its run renews it: a killed run's lease frees itself ${formatDuration(lease?.leaseMs ?? ownLeaseMs)} after its last renewal (the holder's REPORTING_STATE_LEASE)`);
  }
}

/** The lock of a run on a state in a bucket: a lease renewed while the run lives. */
class LeaseLock implements StoreLock {
  private etag: string | undefined;
  private lease: Lease | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private renewing: Promise<void> | undefined;
  /** stops a renewal in flight (release, or its own time out) */
  private stopRenewal = new AbortController();
  /** the lease was taken over, or could not be renewed within its time */
  lost = false;
  /** when the lease last written and confirmed was dated: it holds until then + its time */
  private confirmedAt = 0;
  private forget: () => void = () => {};

  constructor(private readonly store: BucketStore, private readonly leaseMs: number) {}

  async take(): Promise<void> {
    const now = this.store.now();
    const lease: Lease = { pid: this.store.host.pid, host: hostname(), nonce: randomBytes(8).toString('hex'), since: new Date(now).toISOString(), renewedAt: new Date(now).toISOString(), leaseMs: this.leaseMs };
    // three rounds: a lease taken over by someone else meanwhile is judged again
    for (let round = 0; round < 3; round++) {
      let etag = await this.store.writeLease(lease, undefined);
      if (etag === undefined) {
        const found = await this.store.readLease();
        if (!found) continue; // released meanwhile
        const expiry = this.store.expiryOf(found);
        if (this.store.now() <= expiry) throw new LeaseHeldError(this.store.name, found.lease, expiry, this.leaseMs);
        // expired: taken over, if nobody else took it first
        etag = await this.store.writeLease(lease, found.etag);
        if (etag === undefined) continue;
      }
      this.etag = etag;
      this.lease = lease;
      this.confirmedAt = Date.parse(lease.renewedAt);
      this.timer = setInterval(() => { void this.renew(); }, Math.max(250, Math.round(this.leaseMs / 3)));
      this.timer.unref?.();
      this.forget = this.store.host.atExit(() => this.stop());
      return;
    }
    const found = await this.store.readLease();
    throw new LockedError(this.store.name, found?.lease && holderOf(found.lease));
  }

  /** Whether the lease is known to be held now: renewed and confirmed within two thirds of its
   * time (a renewal unanswered longer, and another run may take it over soon). */
  sure(now: number): boolean {
    return !this.lost && now <= this.confirmedAt + (this.leaseMs * 2) / 3;
  }

  private renew(): Promise<void> {
    if (this.renewing || !this.lease || this.etag === undefined) return this.renewing ?? Promise.resolve();
    const lease = { ...this.lease, renewedAt: new Date(this.store.now()).toISOString() };
    const expiry = this.confirmedAt + this.leaseMs;
    // a renewal answers within a third of the lease, or is given up (the next tick tries again)
    const signal = AbortSignal.any([this.stopRenewal.signal, AbortSignal.timeout(Math.max(250, Math.round(this.leaseMs / 3)))]);
    this.renewing = this.store.writeLease(lease, this.etag, signal).then((etag) => {
      if (etag === undefined) {
        this.lost = true;
        this.stop();
        return;
      }
      this.etag = etag;
      this.lease = lease;
      this.confirmedAt = Date.parse(lease.renewedAt);
    }, () => {
      // the network: tried again at the next tick, lost once the lease has run out
      if (this.store.now() > expiry) this.lost = true;
    }).finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async release(): Promise<void> {
    this.stop();
    this.forget();
    // a renewal in flight is stopped, not waited for: its answer no longer matters
    this.stopRenewal.abort();
    await this.renewing;
    const etag = this.etag;
    const nonce = this.lease?.nonce;
    this.etag = undefined;
    this.lease = undefined;
    if (etag === undefined || this.lost) return;
    if (await this.store.deleteLease(etag).catch(() => true)) return;
    // the renewal stopped on its way may have landed all the same (a new ETag this run never
    // heard of): the lease there is still this run's if it bears its nonce, deleted by its ETag now
    const found = await this.store.readLease().catch(() => undefined);
    if (found?.lease && found.lease.nonce === nonce) await this.store.deleteLease(found.etag).catch(() => undefined);
  }
}

/** Writes the whole document at each change, serialised; changes that wait share the next write. */
class BucketWrites implements StateWrites {
  private readonly writes = new Serialised(() => this.put());
  /** the document in the bucket holds every change made so far */
  private current: boolean;
  private changed: StateChangedError | undefined;

  constructor(private readonly store: BucketStore, private readonly document: () => { windows: readonly unknown[] }, existed: boolean) {
    this.current = existed;
  }

  write(line?: string): Promise<void> {
    if (line === undefined && this.current) return this.writes.pending();
    this.current = false;
    return this.writes.ask();
  }

  private async put(): Promise<void> {
    // once the state changed under this run, nothing it writes may land
    if (this.changed) throw this.changed;
    this.current = true;
    try {
      await this.store.put(`${JSON.stringify(this.document(), null, 2)}\n`);
    } catch (error) {
      this.current = false;
      if (error instanceof StateChangedError) this.changed = error;
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.writes.settled();
    // a change whose write failed (the network) is tried once more
    if (!this.current && !this.changed) await this.write('').catch(() => undefined);
  }
}
