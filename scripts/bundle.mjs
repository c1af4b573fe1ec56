// Bundles the CLI entry (src/main.ts, the program and the registry, with commander) into dist/main.js, so that
// `reporting --help` loads a handful of files instead of some twenty-five modules. Code splitting
// keeps every `import()` lazy: undici, zod, luxon, conf, csv-stringify and cli-progress load only
// when a command needs them. tsc still type-checks and emits dist/ for the demo and the bench.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

// Every dependency stays out of the bundle, loaded from node_modules when a command needs it
// (src/lazy.ts), but these few, small and needed at once, which are bundled in.
const BUNDLED = ['commander', 'js-yaml', 'string-width'];
const { dependencies } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

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
  external: Object.keys(dependencies).filter((name) => !BUNDLED.includes(name)),
  // commander is CommonJS: give the bundle a require() of its own
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});

// dist/quick.cjs: main.ts's `quick` (--version, and --help from dist/help.json) as CommonJS, which
// bin/reporting.js requires before anything else: answering those without starting Node's ES
// module loader takes some 10% off their start-up (test/bench/RESULTS.md). main() and what only it
// loads are left out (tree shaking); import.meta.url is this file's, as dist/main.js's would be.
await build({
  stdin: { contents: "export { quick } from './src/main.ts';", resolveDir: fileURLToPath(new URL('..', import.meta.url)), loader: 'ts', sourcefile: 'quick.ts' },
  outfile: 'dist/quick.cjs',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  allowOverwrite: true,
  define: { 'import.meta.url': '__quickUrl' },
  banner: { js: "const __quickUrl = require('node:url').pathToFileURL(__filename).href;" },
  // main()'s lazy boundary is not followed: quick() never reaches it
  plugins: [{ name: 'program-stays-out', setup(b) { b.onResolve({ filter: /^\.\/cli\/program\.js$/ }, (args) => ({ path: args.path, external: true })); } }],
  logLevel: 'warning',
});
