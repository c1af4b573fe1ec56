// `-o s3://BUCKET/KEY`: the s3 kind's line in the table of sinks (sinks.ts). The sink (a multipart
// upload), the check before the first request and the SDK's errors are objects.ts's.

import { isObjectUrl, parseObjectUrl } from './object-url.js';
import { checkObjectTarget, ObjectSink, type ObjectStoreConfig } from './objects.js';
import type { SinkDeps, SinkKind } from './sink-kind.js';

function configOf(deps: SinkDeps): ObjectStoreConfig {
  if (!deps.env || deps.configDir === undefined) throw new Error('an s3:// output needs the object store settings');
  return { env: deps.env, configDir: deps.configDir, host: deps.host, trace: deps.trace, ledger: deps.ledger, retries: deps.retries, waits: deps.waits };
}

export const S3: SinkKind = {
  scheme: 's3',
  matches: isObjectUrl,
  local: false,
  parse: (target) => { parseObjectUrl(target); },
  // an object is its URL as written (a bucket's names are lowercase; a key is case-sensitive)
  identity: (target) => target,
  // the bucket is asked (check) just before the run, not by `--plan` or `jobs validate`
  place: () => undefined,
  check: (target, deps, shown) => checkObjectTarget(target, configOf(deps), shown),
  open: async (target, deps, options) => {
    const sink = await ObjectSink.open(target, configOf(deps), options.format, options.keepUnchanged, options.recorded);
    return { sink, placed: () => sink.placed };
  },
  // the SDK reads them from the environment; they must never show
  secrets: (env) => [env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN],
  describe: (target) => target,
  // (taken to be there: asking would cost a request per window)
  exists: () => true,
  // an object's key is not a path: its "folder" is the key up to its last `/`, as written
  split: (target) => {
    const at = target.lastIndexOf('/');
    return { where: target.slice(0, at), name: target.slice(at + 1) };
  },
};
