// An object in a bucket as a target names it (`-o s3://BUCKET/KEY`, `--state s3://BUCKET/KEY`):
// the scheme's one test and its parse, for the s3 sink (s3.ts, objects.ts) and the bucket store
// (engine/stores/bucket.ts).

import { UsageError } from '../errors.js';

/** `-o s3://BUCKET/KEY` (and `--state s3://...`): an object in a bucket, not a path. */
export const isObjectUrl = (target: string): boolean => target.startsWith('s3://');

export interface ObjectUrl {
  url: string;
  bucket: string;
  key: string;
}

/** `s3://BUCKET/KEY`, or a usage error saying what is missing. */
export function parseObjectUrl(url: string, flag = '-o'): ObjectUrl {
  const match = /^s3:\/\/([^/]*)\/?(.*)$/.exec(url);
  const bucket = match?.[1] ?? '';
  const key = match?.[2] ?? '';
  const hint = `write ${flag} s3://BUCKET/path/to/${flag === '-o' ? 'report.csv' : 'buyer.state.json'}`;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new UsageError(`${flag} ${url}: ${bucket ? `"${bucket}" is not a bucket name (3-63 lowercase letters, digits, dots, hyphens)` : 'no bucket named'}`, hint).about(flag);
  if (!key || key.endsWith('/')) throw new UsageError(`${flag} ${url}: no object key${key ? ' (it ends with /)' : ''}`, hint).about(flag);
  return { url, bucket, key };
}
