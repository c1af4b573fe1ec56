// Pods sharing a volume run `reporting jobs ...` in one folder at once. Checking that an output can
// be written must create nothing another process can see: `jobs list`, `plan` and `validate` write
// nothing at all, and `jobs run` (and `run`) probe with a file of a name no other process uses, in
// the nearest folder that exists, never with a folder made and removed (which another process
// then found, or lost, half-way: "cannot write -o ...: cannot create a file").

import { watch, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/fleet/select.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const REPEATS = 5;

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 30 });
});
afterAll(() => sandbox.close());

/** Every entry under `dir` (itself included): its kind, size and modification time in nanoseconds
 * (a folder's changes when an entry is made in it, even if removed at once). */
function tree(dir: string): string[] {
  const out: string[] = [];
  const visit = (path: string) => {
    const stats = statSync(path, { bigint: true });
    out.push(`${relative(dir, path) || '.'} ${stats.isDirectory() ? 'dir' : 'file'} ${stats.size} ${stats.mtimeNs}`);
    if (stats.isDirectory()) for (const name of readdirSync(path).sort()) visit(join(path, name));
  };
  visit(dir);
  return out;
}

/** `count` job names, `perShard` in each of `shards` shards (the shard is the name's SHA-256 mod N). */
function namesPerShard(shards: number, perShard: number): string[] {
  const byShard = new Map<number, string[]>();
  for (let i = 0; [...byShard.values()].filter((names) => names.length >= perShard).length < shards; i++) {
    const name = `job-${i}`;
    const shard = shardOf(name, shards);
    const names = byShard.get(shard) ?? [];
    if (names.length < perShard) byShard.set(shard, [...names, name]);
  }
  return [...byShard.values()].flat();
}

const jobFile = (names: readonly string[]) => `version: 1
concurrency: 2
defaults:
  since: 2026-11-01
  until: 2026-11-02
  chunk: day
  poll-interval: 20ms
  breakdowns: DAILY
  output: out/{job}/{since}.csv
jobs:
${names.map((name, i) => `  - name: ${name}\n    side: ${i % 2 ? 'seller' : 'buyer'}\n${i % 3 === 0 ? '    state: state/{job}.json\n' : ''}`).join('')}`;

describe('jobs list, plan and validate write nothing', () => {
  it(`16 at once in one folder whose outputs' folders do not exist, ${REPEATS} times: all exit 0, the folder untouched (not even a probe made and removed)`, async () => {
    const dir = tempDir();
    const names = namesPerShard(4, 3);
    writeFileSync(join(dir, 'reporting.yaml'), jobFile(names));
    // no request is made: the base URL is never reached
    const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
    const before = tree(dir);
    const requests = sandbox.requests.length;
    const seen: string[] = [];
    const watcher = watch(dir, (event, name) => seen.push(`${event} ${name}`));
    try {
      for (let round = 0; round < REPEATS; round++) {
        // list and plan of one shard, or of all; validate checks every job
        const commands = Array.from({ length: 16 }, (_, i) => ['jobs', ['list', 'validate', 'plan'][i % 3] as string, ...(i % 3 !== 1 && i % 2 === 0 ? ['--shard', `${(i % 4) + 1}/4`] : [])]);
        const results = await Promise.all(commands.map((args) => runCli(args, { env, cwd: dir })));
        for (const [i, result] of results.entries()) expect(`${commands[i]?.join(' ')}: ${result.code} ${result.stderr}`).toMatch(/^[^:]+: 0 /);
        // what each says is what one alone says
        const list = results[0]?.stdout;
        expect(list?.trim().split('\n').sort()).toEqual(names.filter((name) => shardOf(name, 4) === 1).sort());
        expect(results[1]?.stderr).toBe(`reporting.yaml: ${names.length} jobs, valid\n`);
      }
      // inotify's events reach the watcher asynchronously: a moment for any to arrive
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      watcher.close();
    }
    expect(seen, 'no file or folder made, changed or removed in the folder').toEqual([]);
    expect(tree(dir)).toEqual(before);
    expect(sandbox.requests.length, 'no request').toBe(requests);
  }, 120_000);
});

describe('jobs run --shard K/8: eight pods at once over one job file', () => {
  it(`each job writing into a folder that does not exist yet, ${REPEATS} times: every shard exits 0, every file written`, async () => {
    const names = namesPerShard(8, 6);
    for (let round = 0; round < REPEATS; round++) {
      const dir = tempDir();
      writeFileSync(join(dir, 'reporting.yaml'), jobFile(names));
      const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const results = await Promise.all(Array.from({ length: 8 }, (_, k) => runCli(['jobs', 'run', '--shard', `${k + 1}/8`, '-q'], { env, cwd: dir })));
      for (const [k, result] of results.entries()) expect(`shard ${k + 1}/8, round ${round + 1}: ${result.code} ${result.stderr}`).toBe(`shard ${k + 1}/8, round ${round + 1}: 0 `);
      expect(readdirSync(join(dir, 'out')).sort()).toEqual([...names].sort());
      for (const name of names) {
        expect(readdirSync(join(dir, 'out', name)), `${name}: its files, and no temporary file left`).toEqual(['2026-11-01.csv', '2026-11-02.csv']);
        expect(readFileSync(join(dir, 'out', name, '2026-11-01.csv'), 'utf8')).toMatch(/^date,/);
      }
      expect(readdirSync(dir).filter((name) => name.includes('reporting-tmp')), 'no probe left').toEqual([]);
    }
  }, 180_000);
});

describe('run -o into folders that do not exist yet still refuses a place it cannot write, before any request', () => {
  it('/proc (where nothing can be created) and a file where a folder is expected: exit 2, no request, nothing left', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'plain'), 'x');
    const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
    const requests = sandbox.requests.length;
    const cases = [
      ['/proc/missing/sub/x.csv', 'error: cannot write -o /proc/missing/sub/x.csv: cannot create the folder /proc/missing: the file system there does not allow it\nhint: choose a folder you can write to\n'],
      [join(dir, 'plain', 'missing', 'x.csv'), `error: cannot write -o ${dir}/plain/missing/x.csv: ${dir}/plain is a file, not a folder\n`],
    ];
    for (const [target, message] of cases) {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '-o', target as string], { env, cwd: dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(message);
    }
    expect(sandbox.requests.length).toBe(requests);
    expect(readdirSync(dir)).toEqual(['plain']);
  });
});
