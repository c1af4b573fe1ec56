// A module of src/ bundled (with its dependencies) into one plain .mjs file that a child process
// can import: for tests where separate processes race (locks), independent of `npm run build`.

import { build } from 'esbuild';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export async function bundleForChild(source: string, dir: string): Promise<string> {
  const outfile = join(dir, `${source.replace(/[^a-z0-9]+/gi, '-')}.mjs`);
  await build({
    entryPoints: [fileURLToPath(new URL(`../../${source}`, import.meta.url))],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    // the database clients of --load load lazily (src/lazy.ts), and DuckDB's native binding
    // cannot be bundled: left to node_modules, as in the CLI's own bundle
    external: ['@duckdb/node-api', '@duckdb/node-bindings', 'pg', 'pg-copy-streams'],
    // a CommonJS dependency bundled into ESM needs a require() of its own
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  });
  return outfile;
}
