// Bundles the CLI entry (src/main.ts, the program and the registry, with commander) into dist/main.js, so that
// `reporting --help` loads a handful of files instead of some twenty-five modules. Code splitting
// keeps every `import()` lazy: undici, zod, luxon, conf, csv-stringify and cli-progress load only
// when a command needs them. tsc still type-checks and emits dist/ for the demo and the bench.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.ts'],
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  allowOverwrite: true,
  chunkNames: 'chunks/[name]-[hash]',
  external: ['undici', 'zod', 'luxon', 'conf', 'csv-stringify', 'cli-progress', 'hyparquet-writer', 'fflate', 'pg', 'pg-copy-streams', '@duckdb/node-api', '@duckdb/node-bindings', '@aws-sdk/client-s3'],
  // commander is CommonJS: give the bundle a require() of its own
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
