// `prepare` (npm install in a clone, and `npm install -g .`): build dist/. A global install from a
// fresh clone runs this before any dependency is installed, so the build tools (dev dependencies:
// TypeScript, esbuild) are installed first when they are missing.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// a global install passes its own settings down: this folder's install is a local one
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_(global|prefix|location)$/i.test(key)));
const run = (args) => {
  const result = spawnSync('npm', args, { stdio: 'inherit', env, shell: process.platform === 'win32' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};
const has = (name) => {
  try {
    require.resolve(`${name}/package.json`);
    return true;
  } catch {
    return false;
  }
};

if (!has('typescript') || !has('esbuild') || !has('commander')) {
  console.error('reporting: installing the build tools (dev dependencies) to build dist/');
  run(['install', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund']);
}
run(['run', 'build']);
