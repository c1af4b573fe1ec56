// The token store's lock between real processes (parallel cron jobs sharing one store): several
// racing on a lock left by a killed process, and one stopped (Ctrl-Z) while inside. Each process
// counts in one profile under the lock and checks, with an exclusive marker file, that nobody else
// is inside at the same time.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForChild } from '../helpers/bundle.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

// a child that, from `startAt` on, makes `rounds` updates: +1 to the `counter` profile (holding
// the lock `holdMs`), and one profile of its own; it prints how often it found someone inside
const UPDATER = `
import { closeSync, openSync, unlinkSync } from 'node:fs';
const [storeModule, hostModule, config, marker, name, rounds, holdMs, startAt, aheadMs] = process.argv.slice(1);
const { TokenStore } = await import(storeModule);
const { HOST } = await import(hostModule);
// a clock ahead of the real one by aheadMs: the lock it finds is that much older to it
const store = new TokenStore(config, HOST, () => Date.now() + Number(aheadMs));
let overlaps = 0;
// conf loads before the start, so that the first attempts meet at the lock
await store.writer();
while (Date.now() < Number(startAt)) { /* start together */ }
for (let i = 0; i < Number(rounds); i++) {
  await store.update('counter', (current) => {
    let fd;
    try {
      fd = openSync(marker, 'wx');
    } catch {
      overlaps++;
    }
    const end = Date.now() + Number(holdMs);
    while (Date.now() < end) { /* inside */ }
    if (fd !== undefined) {
      closeSync(fd);
      unlinkSync(marker);
    }
    return { ...current, token: String(Number(current?.token ?? 0) + 1) };
  });
  await store.update(name + '-' + i, () => ({ token: name }));
}
process.stdout.write(JSON.stringify({ overlaps }) + '\\n');
`;

let bundleDir = '';
let storeModule = '';
let hostModule = '';
beforeAll(async () => {
  bundleDir = mkdtempSync(join(tmpdir(), 'reporting-bundle-'));
  storeModule = await bundleForChild('src/auth/store.ts', bundleDir);
  hostModule = await bundleForChild('test/helpers/host.ts', bundleDir);
});
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }));

interface Updater { exited: Promise<{ code: number | null; overlaps?: number; stderr: string }>; pid?: number }

function updater(config: string, marker: string, name: string, rounds: number, holdMs: number, startAt: number, aheadMs = 0): Updater {
  const child = spawn(process.execPath, ['--input-type=module', '-e', UPDATER, storeModule, hostModule, config, marker, name, String(rounds), String(holdMs), String(startAt), String(aheadMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  const exited = new Promise<{ code: number | null; overlaps?: number; stderr: string }>((resolve) => child.on('close', (code) => {
    resolve({ code, stderr, overlaps: out ? (JSON.parse(out) as { overlaps: number }).overlaps : undefined });
  }));
  return { exited, pid: child.pid };
}

/** A lock left by a process killed while it held it: its PID is gone. */
function deadLock(config: string, ageMs: number): void {
  const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
  const lock = join(config, 'config.json.lock');
  writeFileSync(lock, `${JSON.stringify({ pid: dead, host: hostname(), nonce: 'killed', since: new Date(Date.now() - ageMs).toISOString() })}\n`);
  const at = new Date(Date.now() - ageMs);
  utimesSync(lock, at, at);
}

function profilesOf(config: string): Record<string, { token?: string }> {
  return (JSON.parse(readFileSync(join(config, 'config.json'), 'utf8')) as { profiles: Record<string, { token?: string }> }).profiles;
}

describe('the token store lock, between processes', () => {
  it('processes racing on a lock left by a killed one: one inside at a time, no update lost', async () => {
    const dir = tempDir();
    const config = join(dir, 'config');
    const marker = join(dir, 'inside');
    mkdirSync(config, { mode: 0o700 });
    const processes = 6;
    const rounds = 6;
    for (let attempt = 0; attempt < 3; attempt++) {
      // old enough for any rule of staleness: the race is about who removes it
      deadLock(config, 60_000);
      const startAt = Date.now() + 1500;
      const done = await Promise.all(Array.from({ length: processes }, (_, i) => updater(config, marker, `a${attempt}p${i}`, rounds, 2, startAt).exited));
      expect(done.map((d) => d.code), done.map((d) => d.stderr).join('')).toEqual(done.map(() => 0));
      expect(done.map((d) => d.overlaps)).toEqual(done.map(() => 0));
      const profiles = profilesOf(config);
      expect(profiles.counter?.token).toBe(String((attempt + 1) * processes * rounds));
      for (let i = 0; i < processes; i++) for (let r = 0; r < rounds; r++) expect(profiles[`a${attempt}p${i}-${r}`]?.token).toBe(`a${attempt}p${i}`);
      expect(readdirSync(config)).toEqual(['config.json']);
    }
  });

  it('a holder stopped while inside (Ctrl-Z) for longer than 10 s is waited for, not robbed of its lock', async () => {
    const dir = tempDir();
    const config = join(dir, 'config');
    const marker = join(dir, 'inside');
    mkdirSync(config, { mode: 0o700 });
    const startAt = Date.now() + 1000;
    const holder = updater(config, marker, 'holder', 1, 300, startAt);
    await until(() => readdirSync(dir).includes('inside'), 'the holder inside');
    process.kill(holder.pid as number, 'SIGSTOP');
    // the waiters' clocks run 11 s ahead: to them the stopped holder's lock is older than every
    // rule of age (10 s) from their first look; they try for 2 s of real time, and take nothing
    const waiters = Array.from({ length: 3 }, (_, i) => updater(config, marker, `w${i}`, 1, 2, Date.now(), 11_000));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    process.kill(holder.pid as number, 'SIGCONT');
    const done = await Promise.all([holder, ...waiters].map((u) => u.exited));
    expect(done.map((d) => d.code), done.map((d) => d.stderr).join('')).toEqual([0, 0, 0, 0]);
    expect(done.map((d) => d.overlaps)).toEqual([0, 0, 0, 0]);
    expect(profilesOf(config).counter?.token).toBe('4');
  }, 30_000);
});
