// An output in a bucket (`-o s3://BUCKET/KEY`): a multipart upload fed as the rows stream (parts
// of PART_SIZE, at most PARTS_IN_FLIGHT on the wire, so memory is bounded whatever the report's
// size), completed only when everything was written: readers see the previous object or none,
// never a part. A failed or interrupted run aborts its upload. The upload's ID is recorded under
// the configuration folder before its first part, so that the next run to the same key aborts the
// uploads a killed run (SIGKILL) left, and only those, once their process is gone.
//
// The SDK (@aws-sdk/client-s3) is loaded (loadS3, through src/lazy.ts) only when an s3:// target
// is used; credentials, region and endpoint come from its standard chain (AWS_* variables,
// profiles). `S3` is this kind's line in the table of sinks (sinks.ts).

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync, utimesSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { AuthError, CliError, EXIT, NetworkError, UsageError } from '../errors.js';
import type { Sink } from '../export/sink.js';
import { writeFileAtomic } from '../fs/atomic.js';
import type { Host } from '../host.js';
import { loadPackage } from '../lazy.js';
import { parseObjectUrl, type ObjectUrl } from './object-url.js';
import type { RecordedObject, UploadLedger } from './sink-kind.js';
import { nameMissingRegion, QuietLogger, REGION_MISSING, s3Retries, type Waits } from './s3-client.js';

export type { RecordedObject, UploadLedger } from './sink-kind.js';

type S3Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<S3Sdk> | undefined;

/** The S3 client (@aws-sdk/client-s3, some 40 modules, kept out of the bundle): only runs that use
 * an s3:// target load it, once (every request asks for it). */
export const loadS3 = (): Promise<S3Sdk> => (sdk ??= loadPackage<S3Sdk>('@aws-sdk/client-s3'));

/** S3's smallest part but the last is 5 MiB; 8 MiB parts reach 80 GB within the 10,000 parts. */
const PART_SIZE = 8 << 20;
const MIN_PART_SIZE = 5 << 20;
const PARTS_IN_FLIGHT = 4;

/** What the object store needs from the run: where the SDK finds its settings, and our records. */
export interface ObjectStoreConfig {
  env: Readonly<Record<string, string | undefined>>;
  /** the uploads' records live in `uploads/` under it */
  configDir: string;
  host: Host;
  /** -v: a line per request to the bucket (no secret is in them) */
  trace?: (line: string) => void;
  /** with a state: the uploads in flight are recorded there, wherever it is (a bucket), rather
   * than under the configuration folder, so that a fresh pod aborts a killed one's */
  ledger?: UploadLedger;
  /** --retries (unset: 3), and the clock, sleep and randomness of the client's waits */
  retries?: number; waits?: Waits;
}

/** What an object's commit made visible. */
export interface PlacedObject {
  outcome: 'written' | 'unchanged';
  bytes: number;
  sha256: string;
  etag?: string;
}

const clients = new Map<string, Promise<S3Client>>();

/** Endpoint set by the environment: a MinIO, R2, GCS or local server, addressed path-style. */
function endpointOf(env: ObjectStoreConfig['env']): string | undefined {
  return env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
}

export async function clientFor(config: ObjectStoreConfig): Promise<S3Client> {
  const endpoint = endpointOf(config.env);
  const key = `${endpoint ?? ''}\n${config.retries}`;
  let client = clients.get(key);
  if (!client) {
    client = (async () => {
      const { S3Client } = await loadS3();
      return nameMissingRegion(new S3Client({
        // the SDK reads the region from AWS_REGION or the profile; a custom endpoint needs none
        ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
        ...(!config.env.AWS_REGION && !config.env.AWS_DEFAULT_REGION && endpoint ? { region: 'us-east-1' } : {}),
        ...(config.env.AWS_DEFAULT_REGION && !config.env.AWS_REGION ? { region: config.env.AWS_DEFAULT_REGION } : {}),
        logger: new QuietLogger(),
        // S3-compatible servers (GCS, older MinIO, R2) refuse the newer default checksums
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        ...s3Retries(config.retries ?? 3, config.waits),
      }));
    })();
    clients.set(key, client);
  }
  return client;
}

const CREDENTIAL_ERRORS = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken', 'TokenRefreshRequired', 'CredentialsProviderError', 'UnrecognizedClientException', 'InvalidClientTokenId', 'ExpiredTokenException']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'TimeoutError', 'RequestTimeout']);

interface SdkError {
  name?: string;
  code?: string;
  Code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $fault?: string;
}

/** An SDK failure as one line and the SPEC's exit code: 3 credentials, 2 missing bucket or a
 * refused write, 5 the network or the server. No secret is in it (the SDK's messages about
 * signatures quote the request: only the error's name is shown for those). */
export function objectError(error: unknown, url: string, doing: string): CliError {
  if (error instanceof CliError) return error;
  const e = (error ?? {}) as SdkError;
  const name = e.name ?? e.Code ?? 'Error';
  const code = e.code ?? name;
  const status = e.$metadata?.httpStatusCode;
  const { bucket } = parseObjectUrl(url);
  if (CREDENTIAL_ERRORS.has(name)) {
    // the credential chain's own words name a profile or a file, never a secret
    const chain = (e.message ?? '').split('\n')[0]?.trim().replace(/\.$/, '');
    const why = name === 'CredentialsProviderError' ? `no AWS credentials were found${chain && !/^Could not load credentials from any providers$/i.test(chain) ? ` (${chain})` : ''}` : `the credentials were refused (${name})`;
    return new AuthError(`cannot ${doing} ${url}: ${why}`, 'set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_PROFILE');
  }
  if (name === 'NoSuchBucket') return new UsageError(`cannot ${doing} ${url}: the bucket ${bucket} does not exist`, 'create it, or check the name and AWS_ENDPOINT_URL_S3/AWS_REGION');
  if (name === 'AccessDenied' || name === 'AllAccessDisabled' || status === 403) {
    // (reading a state or its lease needs s3:GetObject; writing an output, its upload's rights)
    const reading = doing.startsWith('read');
    return new UsageError(`cannot ${doing} ${url}: access denied (${name}): s3:${reading ? 'GetObject' : 'PutObject'} on ${bucket} is not allowed to these credentials`,
      reading ? 'grant s3:GetObject on the key, or use other credentials' : doing === 'write' || doing === 'write -o' ? 'grant s3:PutObject and s3:AbortMultipartUpload on the key, or use other credentials' : 'grant s3:GetObject, s3:PutObject and s3:DeleteObject on the key and KEY.lock, or use other credentials');
  }
  if (name === REGION_MISSING) return new UsageError(`cannot ${doing} ${url}: no region is set`, 'set AWS_REGION (e.g. us-east-1), or AWS_ENDPOINT_URL_S3 for an S3-compatible server');
  if (name === 'PermanentRedirect' || name === 'AuthorizationHeaderMalformed' || status === 301) {
    return new UsageError(`cannot ${doing} ${url}: the bucket ${bucket} is in another region (${name})`, 'set AWS_REGION to the bucket\'s region');
  }
  if (NETWORK_CODES.has(code) || NETWORK_CODES.has(name) || status === undefined || status >= 500) {
    const detail = status && status >= 500 ? `the server answered ${status} (${name})` : `cannot reach the object store (${code})`;
    return new NetworkError(`cannot ${doing} ${url}: ${detail.split('\n')[0]}`, `check AWS_ENDPOINT_URL_S3 and the network${doing === 'write' || doing === 'write -o' ? '; nothing was left at the key' : ''}`);
  }
  return new CliError(`cannot ${doing} ${url}: ${name} (HTTP ${status})`, status >= 400 && status < 500 ? EXIT.usage : EXIT.internal);
}

// ---- the uploads' records: what a killed run left is found by the next run to the same key ----

interface UploadRecord {
  uploadId: string;
  bucket: string;
  key: string;
  pid: number;
  host: string;
  startedAt: string;
}

function recordsDir(config: ObjectStoreConfig, url: ObjectUrl): string {
  const id = createHash('sha256').update(`${endpointOf(config.env) ?? ''}\n${url.bucket}\n${url.key}`).digest('hex').slice(0, 32);
  return join(config.configDir, 'uploads', id);
}

/** A run refreshes its records this often while its upload is open... */
const RECORD_HEARTBEAT_MS = 60_000;
/** ...so that a record of another machine (a pod gone with its hostname) untouched this long is a
 * killed run's: its PID cannot be asked about from here. */
const OTHER_HOST_STALE_MS = 10 * 60_000;

/** Whether the run that recorded an upload is gone: on this machine, its process; on another, a
 * record left unrefreshed for OTHER_HOST_STALE_MS. */
function runGone(record: UploadRecord, file: string, host: Host): boolean {
  if (record.host !== hostname()) {
    try {
      return Date.now() - statSync(file).mtimeMs > OTHER_HOST_STALE_MS;
    } catch {
      return false;
    }
  }
  return record.pid !== host.pid && !host.isAlive(record.pid);
}

function readRecords(dir: string): { file: string; record: UploadRecord }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((name) => name.endsWith('.json')).flatMap((name) => {
    try {
      return [{ file: join(dir, name), record: JSON.parse(readFileSync(join(dir, name), 'utf8')) as UploadRecord }];
    } catch {
      return [];
    }
  });
}

/** Aborts the uploads to this key that earlier runs recorded and left unfinished (killed), once
 * their run is gone (runGone); never another program's, nor a live run's. */
export async function abortLeftUploads(client: S3Client, config: ObjectStoreConfig, url: ObjectUrl): Promise<number> {
  const { AbortMultipartUploadCommand } = await loadS3();
  let aborted = 0;
  for (const { file, record } of readRecords(recordsDir(config, url))) {
    if (!runGone(record, file, config.host)) continue;
    try {
      await client.send(new AbortMultipartUploadCommand({ Bucket: record.bucket, Key: record.key, UploadId: record.uploadId }));
      aborted++;
    } catch (error) {
      // already gone (completed, aborted, expired by a lifecycle rule): the record is stale anyway
      if ((error as SdkError).name !== 'NoSuchUpload') continue;
    }
    removeRecord(file);
  }
  return aborted;
}

/** Aborts the uploads a state recorded (a killed run's: the run now holding the state is the
 * only one writing with it). The IDs no longer in flight (aborted, or gone already); one that
 * could not be asked about (the network) stays recorded for the next run. */
export async function abortRecordedUploads(uploads: readonly { bucket: string; key: string; uploadId: string }[], config: ObjectStoreConfig): Promise<string[]> {
  if (uploads.length === 0) return [];
  const client = await clientFor(config);
  const { AbortMultipartUploadCommand } = await loadS3();
  const gone: string[] = [];
  for (const upload of uploads) {
    try {
      await client.send(new AbortMultipartUploadCommand({ Bucket: upload.bucket, Key: upload.key, UploadId: upload.uploadId }));
      config.trace?.(`  s3 s3://${upload.bucket}/${upload.key}: multipart upload ${upload.uploadId} of an earlier run aborted`);
      gone.push(upload.uploadId);
    } catch (error) {
      if ((error as SdkError).name === 'NoSuchUpload' || (error as SdkError).$metadata?.httpStatusCode === 404) gone.push(upload.uploadId);
    }
  }
  return gone;
}

/** Removes an upload's record, and its key's folder once empty. */
function removeRecord(file: string): void {
  try {
    unlinkSync(file);
    rmdirSync(dirname(file));
  } catch {
    // gone already, or another upload to the key is recorded there
  }
}

// ---- the check before any report is submitted ----

/** Checks, before the first request, that the key can be written: an upload is started and
 * aborted at once (no object is created), which proves the bucket, the credentials and the
 * permission. Earlier killed runs' uploads to this key are aborted on the way. */
export async function checkObjectTarget(target: string, config: ObjectStoreConfig, shown = target): Promise<void> {
  const url = parseObjectUrl(target);
  const client = await clientFor(config);
  const { CreateMultipartUploadCommand, AbortMultipartUploadCommand } = await loadS3();
  try {
    await abortLeftUploads(client, config, url);
    const created = await client.send(new CreateMultipartUploadCommand({ Bucket: url.bucket, Key: url.key }));
    await client.send(new AbortMultipartUploadCommand({ Bucket: url.bucket, Key: url.key, UploadId: created.UploadId }));
  } catch (error) {
    const failure = objectError(error, shown, 'write -o');
    // the path-style message of local targets: `cannot write -o TARGET: why`
    throw failure;
  }
}

// ---- the sink ----

const CONTENT_TYPES: Record<string, string> = {
  csv: 'text/csv', json: 'application/json', ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

/** Part size, overridable (down to S3's 5 MiB) for tests by REPORTING_S3_PART_SIZE. */
function partSizeOf(env: ObjectStoreConfig['env']): number {
  const asked = Number(env.REPORTING_S3_PART_SIZE);
  return Number.isInteger(asked) && asked >= MIN_PART_SIZE ? asked : PART_SIZE;
}

/**
 * A multipart upload fed as the rows come; visible at commit(), aborted by abort(). The object is
 * created by exactly one request (S3's event notifications fire once): a PutObject when the body
 * fits in one part (with the `sha256` metadata, known by then), else CompleteMultipartUpload
 * (S3 fixes metadata when the upload starts, before the content is known: no `sha256` metadata;
 * the state file records the SHA-256 and the ETag).
 */
export class ObjectSink implements Sink {
  readonly path: string;
  private uploadId?: string;
  private record?: string;
  /** the upload recorded in the state (the ledger) */
  private ledgered?: string;
  private heartbeat?: NodeJS.Timeout;
  /** the part being filled: one of a fixed set of buffers, so memory stays flat however long the run */
  private part?: Buffer;
  private pendingBytes = 0;
  private readonly free: Buffer[] = [];
  private readonly parts: { PartNumber: number; ETag: string }[] = [];
  private partsStarted = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private failed?: unknown;
  private readonly hash = createHash('sha256');
  private bytes = 0;
  private readonly stop = new AbortController();
  private done = false;
  placed?: PlacedObject;

  private constructor(private readonly url: ObjectUrl, private readonly client: S3Client, private readonly config: ObjectStoreConfig, private readonly contentType: string, private readonly keepUnchanged: boolean, private readonly partSize: number, private readonly recorded?: RecordedObject) {
    this.path = url.url;
  }

  /** `keepUnchanged` (with --state): an object found to hold the same content is left as it is;
   * `recorded`: what the state file says of the object there. */
  static async open(target: string, config: ObjectStoreConfig, format: string, keepUnchanged: boolean, recorded?: RecordedObject): Promise<ObjectSink> {
    const url = parseObjectUrl(target);
    const client = await clientFor(config);
    const sink = new ObjectSink(url, client, config, CONTENT_TYPES[format] ?? 'application/octet-stream', keepUnchanged, partSizeOf(config.env), recorded);
    await sink.start();
    return sink;
  }

  private async start(): Promise<void> {
    const { CreateMultipartUploadCommand } = await loadS3();
    try {
      await abortLeftUploads(this.client, this.config, this.url);
      const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.url.bucket, Key: this.url.key, ContentType: this.contentType }));
      this.uploadId = created.UploadId;
      this.trace(`multipart upload ${this.uploadId} started`);
    } catch (error) {
      throw objectError(error, this.url.url, 'write');
    }
    // with a state, the upload is recorded there before its first part (sendPart)
    if (this.config.ledger) return;
    // recorded before the first part: a run killed from now on leaves a record the next run acts on
    const dir = recordsDir(this.config, this.url);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, `${this.config.host.pid}-${randomBytes(4).toString('hex')}.json`);
    const record: UploadRecord = { uploadId: this.uploadId as string, bucket: this.url.bucket, key: this.url.key, pid: this.config.host.pid, host: hostname(), startedAt: new Date().toISOString() };
    await writeFileAtomic(file, `${JSON.stringify(record)}\n`, 0o600);
    this.record = file;
    // a live run's record stays fresh: another machine then knows the upload is not left over
    this.heartbeat = setInterval(() => {
      try {
        const now = new Date();
        utimesSync(file, now, now);
      } catch {
        // removed meanwhile
      }
    }, RECORD_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  async write(chunk: string | Buffer): Promise<void> {
    if (this.failed) throw objectError(this.failed, this.url.url, 'write');
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (buffer.length === 0) return;
    this.hash.update(buffer);
    this.bytes += buffer.length;
    for (let at = 0; at < buffer.length;) {
      this.part ??= this.free.pop() ?? Buffer.allocUnsafe(this.partSize);
      const copied = buffer.copy(this.part, this.pendingBytes, at);
      at += copied;
      this.pendingBytes += copied;
      if (this.pendingBytes === this.partSize) await this.sendPart();
    }
  }

  private trace(line: string): void {
    this.config.trace?.(`  s3 ${this.url.url}: ${line}`);
  }

  /** The pending bytes as the next part; waits while PARTS_IN_FLIGHT are on the wire. */
  private async sendPart(): Promise<void> {
    const buffer = this.part as Buffer;
    const body = buffer.subarray(0, this.pendingBytes);
    this.part = undefined;
    this.pendingBytes = 0;
    if (this.config.ledger && !this.ledgered && this.uploadId) {
      // recorded in the state before the first part: an upload that never sends one holds no bytes
      this.ledgered = this.uploadId;
      await this.config.ledger.started({ bucket: this.url.bucket, key: this.url.key, uploadId: this.uploadId, startedAt: new Date().toISOString() });
    }
    const number = ++this.partsStarted;
    const { UploadPartCommand } = await loadS3();
    const started = performance.now();
    const sent: Promise<void> = this.client.send(new UploadPartCommand({ Bucket: this.url.bucket, Key: this.url.key, UploadId: this.uploadId, PartNumber: number, Body: body, ContentLength: body.length }), { abortSignal: this.stop.signal })
      .then((answer) => {
        this.parts.push({ PartNumber: number, ETag: answer.ETag as string });
        this.trace(`part ${number} (${body.length} bytes) in ${Math.round(performance.now() - started)} ms`);
      })
      .catch((error: unknown) => { this.failed ??= error; })
      .finally(() => {
        this.inFlight.delete(sent);
        // the SDK is done with the bytes: the buffer takes the next part
        this.free.push(buffer);
      });
    this.inFlight.add(sent);
    while (this.inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(this.inFlight);
    if (this.failed) throw objectError(this.failed, this.url.url, 'write');
  }

  private async settle(): Promise<void> {
    await Promise.all([...this.inFlight]);
    if (this.failed) throw objectError(this.failed, this.url.url, 'write');
  }

  async commit(): Promise<void> {
    const s3 = await loadS3();
    const sha256 = this.hash.digest('hex');
    const { bucket, key } = this.url;
    try {
      if (this.keepUnchanged) {
        const current = await this.client.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: key })).catch((error: unknown) => {
          // 404: nothing there; 403: a missing key without s3:ListBucket, or no s3:GetObject (write-only
          // rights): not known to be the same, so written
          const status = (error as SdkError).$metadata?.httpStatusCode;
          if ((error as SdkError).name === 'NotFound' || status === 404 || status === 403) {
            if (status === 403) this.trace('cannot read the object there (403): writing it');
            return undefined;
          }
          throw error;
        });
        // the same bytes are there: the object the state recorded with this content, untouched since
        // (its ETag), or an object whose metadata carries this SHA-256 (one written by a PutObject)
        const recorded = current !== undefined && this.recorded?.sha256 === sha256 && current.ETag === this.recorded.etag && current.ContentLength === this.bytes;
        if (current && (recorded || (current.Metadata?.sha256 === sha256 && current.ContentLength === this.bytes))) {
          // the object keeps its ETag and LastModified: nothing is created, nothing notified
          await this.abort();
          this.trace(`the same content is there (${recorded ? 'the state\'s sha256 and ETag' : 'its sha256 metadata'}): left untouched`);
          this.placed = { outcome: 'unchanged', bytes: this.bytes, sha256, etag: current.ETag };
          return;
        }
      }
      let etag: string | undefined;
      if (this.partsStarted === 0) {
        // one part's worth: a plain put carries the metadata, and the upload is dropped
        const body = this.part?.subarray(0, this.pendingBytes) ?? Buffer.alloc(0);
        const put = await this.client.send(new s3.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length, ContentType: this.contentType, Metadata: { sha256 } }));
        etag = put.ETag;
        await this.abortUpload();
      } else {
        if (this.pendingBytes > 0) await this.sendPart();
        await this.settle();
        const parts = [...this.parts].sort((a, b) => a.PartNumber - b.PartNumber);
        const started = performance.now();
        const completed = await this.client.send(new s3.CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: this.uploadId, MultipartUpload: { Parts: parts } }));
        etag = completed.ETag;
        this.trace(`completed (${parts.length} parts, ${this.bytes} bytes) in ${Math.round(performance.now() - started)} ms`);
        this.forget();
      }
      this.done = true;
      this.placed = { outcome: 'written', bytes: this.bytes, sha256, etag };
    } catch (error) {
      await this.abort();
      throw objectError(error, this.url.url, 'write');
    }
  }

  /** Nothing becomes visible: the parts on the wire are stopped, the upload aborted. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.stop.abort();
    await Promise.allSettled([...this.inFlight]);
    this.part = undefined;
    this.free.length = 0;
    await this.abortUpload();
  }

  private async abortUpload(): Promise<void> {
    if (!this.uploadId) return;
    const { AbortMultipartUploadCommand } = await loadS3();
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.url.bucket, Key: this.url.key, UploadId: this.uploadId }));
      this.trace(`multipart upload ${this.uploadId} aborted`);
      this.forget();
    } catch (error) {
      // gone already; else the record stays, and the next run to this key aborts it
      if ((error as SdkError).name === 'NoSuchUpload') this.forget();
    }
    this.uploadId = undefined;
  }

  private forget(): void {
    clearInterval(this.heartbeat);
    if (this.ledgered) {
      // (the state's writes are serialised: the run's end waits for this one)
      this.config.ledger?.ended([this.ledgered]).catch(() => undefined);
      this.ledgered = undefined;
    }
    if (!this.record) return;
    removeRecord(this.record);
    this.record = undefined;
  }
}
