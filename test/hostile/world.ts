// A small world for one hostile-server test: a working folder, a config folder, and a snapshot of
// every file under them, so that a test can assert that nothing outside its target folder changed.

import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import { runCli, type Result, type RunOptions } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import type { Hostile } from './server.js';

export interface World {
  root: string;
  /** the working folder the CLI runs in */
  cwd: string;
  config: string;
  env: Record<string, string>;
  snapshot(): Map<string, string>;
  run(args: string[], options?: RunOptions): Promise<Result>;
}

/** Every file and folder under `root`: its path, and its type, mode and content hash. */
export function snapshotOf(root: string): Map<string, string> {
  const seen = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      const key = relative(root, path);
      if (stat.isDirectory()) {
        seen.set(key, `dir ${(stat.mode & 0o777).toString(8)}`);
        walk(path);
      } else {
        const hash = stat.isFile() ? createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16) : 'special';
        seen.set(key, `file ${(stat.mode & 0o777).toString(8)} ${hash}`);
      }
    }
  };
  walk(root);
  return seen;
}

/** The paths that appeared, vanished or changed between two snapshots. */
export function changes(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed = new Set<string>();
  for (const [key, value] of after) if (before.get(key) !== value) changed.add(key);
  for (const key of before.keys()) if (!after.has(key)) changed.add(key);
  return [...changed].sort();
}

export function makeWorld(server: Hostile, extraEnv: Record<string, string> = {}): World {
  const root = tempDir('reporting-hostile-');
  const cwd = join(root, 'work');
  const config = join(root, 'config');
  const env = { REPORTING_CONFIG_DIR: config, REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: 't'.repeat(40), ...extraEnv };
  mkdirSync(cwd);
  // a user's configuration folder exists (runs keep their journal in it while they work)
  mkdirSync(config, { mode: 0o700 });
  return {
    root,
    cwd,
    config,
    env,
    snapshot: () => snapshotOf(root),
    run: (args, options = {}) => runCli(args, { cwd, timeoutMs: 60_000, ...options, env: { ...env, ...options.env } }),
  };
}

// control characters other than the line feed: ESC sequences, CR, BEL, C1 controls
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

/** No escape or control byte reached the terminal. */
export function expectNoControl(text: string): void {
  expect(text).not.toMatch(CONTROL);
}
