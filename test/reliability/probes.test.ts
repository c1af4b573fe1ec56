// Issue 30, item 7: checking that a target can be written creates nothing another process can
// see. 16 `jobs list`/`jobs validate` at once in one folder (pods sharing a volume) failed 4
// times in 16 with "cannot write -o ...": the check made and removed the first missing folder, and
// processes raced on it. Now list, plan and validate write nothing at all, and `jobs run --shard
// K/8` at once never fail because of each other. Real processes, each scenario five times.

import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const JOBS = 12;
const jobFile = () => `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-02
  chunk: day
  poll-interval: 20ms
  state: state/{job}.json
  output: out/{job}/deep/{since}.csv
jobs:
${Array.from({ length: JOBS }, (_, i) => `  - name: job-${i + 1}\n    side: buyer\n    breakdowns: DAILY\n`).join('')}`;

/** Every path under `dir` with its kind and mtime: what a process that writes nothing leaves as is. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const stats = statSync(path);
      out.push(`${relative(dir, path)} ${stats.isDirectory() ? 'd' : 'f'} ${stats.mtimeMs}`);
      if (stats.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return out;
}

const env = (sandbox: Sandbox, dir: string) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
});

describe('no shared probes', () => {
  it('16 jobs list / jobs validate at once in one folder, five times: all exit 0, nothing created or touched', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'reporting.yaml'), jobFile());
    const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: 'http://127.0.0.1:9', REPORTING_TOKEN: 'tok' };
    const before = tree(dir);
    for (let round = 1; round <= 5; round++) {
      const commands = Array.from({ length: 16 }, (_, i) => ['jobs', i % 3 === 0 ? 'list' : i % 3 === 1 ? 'validate' : 'plan']);
      const results = await Promise.all(commands.map((args) => runCli(args, { env, cwd: dir })));
      results.forEach((result, i) => expect(result.code, `round ${round}, ${commands[i]!.join(' ')}: ${result.stderr}`).toBe(0));
      expect(tree(dir)).toEqual(before);
    }
  }, 120_000);

  it('8 jobs run --shard K/8 at once, outputs into folders not made yet, five times: none fails because of another', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, base) => {
      for (let round = 1; round <= 5; round++) {
        const dir = join(base, `round-${round}`);
        mkdirSync(dir);
        writeFileSync(join(dir, 'reporting.yaml'), jobFile());
        const results = await Promise.all(Array.from({ length: 8 }, (_, k) => runCli(['jobs', 'run', '--shard', `${k + 1}/8`, '-q'], { env: env(sandbox, dir), cwd: dir, timeoutMs: 120_000 })));
        results.forEach((result, k) => expect(result.code, `round ${round}, shard ${k + 1}/8: ${result.stderr}`).toBe(0));
        // every job's two days are there
        const written = Array.from({ length: JOBS }, (_, i) => readdirSync(join(dir, 'out', `job-${i + 1}`, 'deep')).sort().join(','));
        expect(new Set(written)).toEqual(new Set(['2026-11-01.csv,2026-11-02.csv']));
      }
    });
  }, 300_000);
});
