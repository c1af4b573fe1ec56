import { createRequire } from 'node:module';

const requireCjs = createRequire(import.meta.url);

// The optional heavy dependencies, loaded when first needed and nowhere else (the commands'
// modules load at the registry, the Parquet and XLSX writers at the format table of
// export/export.ts). Measured on this project's 2-core machine: importing `conf` takes 80-90 ms,
// `cli-progress` 12-30 ms; a run with REPORTING_TOKEN never reads the token store, and a run off a
// terminal never draws a bar, so neither pays for them.

export const loadConf = async () => (await import('conf')).default;

export const loadProgressBars = async () => (await import('cli-progress')).default;

/** What the HTTP client uses of undici: a keep-alive agent, its connector, and `request`. */
export type Undici = Pick<typeof import('undici'), 'Agent' | 'buildConnector' | 'request'>;

/**
 * The HTTP client's library, loaded by the commands that send a request (not by `jobs
 * validate|list|plan`, `schema` or `completion`): its agent, connector and `request` from their own
 * modules. undici's index also loads fetch, WebSocket, its caches, mocks and proxy agents: 45-53 ms
 * and 19.5 MiB of RSS on Node 20, against 19-23 ms and 11 MiB for these three (test/bench/RESULTS.md,
 * "undici's parts"), paid by every command that sends a request, its peak RSS included. An undici
 * whose files are laid out otherwise is loaded whole, as before.
 */
export const loadUndici = async (): Promise<Undici> => {
  if (undiciParts === undefined) undiciParts = partsOfUndici();
  return undiciParts ?? import('undici');
};

let undiciParts: Undici | null | undefined;

function partsOfUndici(): Undici | null {
  try {
    const Agent = requireCjs('undici/lib/dispatcher/agent.js') as Undici['Agent'];
    const buildConnector = requireCjs('undici/lib/core/connect.js') as Undici['buildConnector'];
    const requestOf = requireCjs('undici/lib/api/api-request.js') as (this: unknown, options: object) => ReturnType<Undici['request']>;
    if (typeof Agent !== 'function' || typeof buildConnector !== 'function' || typeof requestOf !== 'function') return null;
    // undici's own `request(url, options)`: the URL split into origin and path, the call made on the dispatcher
    const request = ((url: string | URL, options: { dispatcher: unknown }) => {
      const parsed = new URL(url);
      return requestOf.call(options.dispatcher, { ...options, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` });
    }) as Undici['request'];
    return { Agent, buildConnector, request };
  } catch {
    return null;
  }
}

// The database clients of `run --load`: only a run that loads pays for them (DuckDB's native
// binding alone is tens of megabytes).

/**
 * @duckdb/node-api is required, not imported: it is 180 CommonJS modules that re-export each other,
 * and import() has Node's ES module loader parse and wrap every one of them (21 MiB more RSS and
 * 150 ms, against 7.5 MiB and 70 ms for require: test/bench/RESULTS.md, "Loading into a database").
 */
export const loadDuckDb = async () => requireCjs('@duckdb/node-api') as typeof import('@duckdb/node-api');

/** DuckDB's C API as @duckdb/node-api's own binding exposes it (the same pinned version): the
 * appender fills data chunks' vectors through it (load/duckdb-chunks.ts). */
export const loadDuckDbBindings = async () => requireCjs('@duckdb/node-bindings') as typeof import('@duckdb/node-bindings');

/**
 * The `yaml` package, which keeps each node's place in the file: a job file's values are read by
 * js-yaml, and `yaml` reads the file again only when an error names a place (src/fleet/places.ts).
 * Required when first asked, not bundled into `jobs`' module: its 260 KB were compiled by every
 * `jobs validate|list|plan|run`, which a valid file never needs.
 */
export const requireYaml = () => requireCjs('yaml') as typeof import('yaml');

export const loadPg = async () => (await import('pg')).default;

export const loadPgCopy = async () => import('pg-copy-streams');

/** A package that only one kind of target needs (the S3 client, for an s3:// target: some 40
 * modules), loaded by that kind's file (destinations/objects.ts loadS3) when first used; every
 * dependency but those bundled is kept out of the bundle (scripts/bundle.mjs), so a new kind of
 * target needs no line here. */
export const loadPackage = async <T>(name: string): Promise<T> => (await import(name)) as T;
