// The state file's lock, between real processes: two runs racing for it, a holder killed with
// SIGKILL, and a state file that stays valid JSON whatever moment its writer is killed at.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXIT } from '../../src/errors.js';
import { FOREIGN_STALE_MS, lockFile, LockedError } from '../../src/fs/lock.js';
import { RunState, readState, type StateRequest } from '../../src/engine/state.js';
import { bundleForChild } from '../helpers/bundle.js';
import { HOST } from '../helpers/host.js';
import { tempDir } from '../helpers/tmp.js';

const REQUEST: StateRequest = { side: 'buyer', metrics: ['displays'], breakdowns: ['DAILY'], filters: {}, params: {}, format: 'csv', output: null };

// a child that opens the state file as `run` would, says what happened on stdout, holds the lock
// until its stdin closes, and exits with the error's code when it could not take it
const HOLDER = `
const [module, hostModule, path, request, churn] = process.argv.slice(1);
const { RunState } = await import(module);
const { HOST } = await import(hostModule);
let state;
try {
  state = await RunState.open(path, JSON.parse(request), { now: Date.now, host: HOST });
} catch (error) {
  process.stdout.write(JSON.stringify({ won: false, code: error.exitCode, message: error.message, hint: error.hint }) + '\\n');
  process.exit(error.exitCode ?? 1);
}
process.stdout.write(JSON.stringify({ won: true, pid: process.pid }) + '\\n');
if (churn) {
  // rewrites the file as fast as it can, until killed
  for (let i = 0; ; i++) await state.update({ since: 1763593200 + i * 86400, until: 1763679599 + i * 86400 }, { status: 'done', rows: i, bytes: i, reportId: 'r' + i });
}
process.stdin.resume();
process.stdin.on('end', async () => { await state.close(); process.exit(0); });
`;

let bundled = '';
let bundledHost = '';
let bundleDir = '';
beforeAll(async () => {
  // not a tempDir(): those go after each test, this serves them all
  bundleDir = mkdtempSync(join(tmpdir(), 'reporting-bundle-'));
  bundled = await bundleForChild('src/engine/state.ts', bundleDir);
  bundledHost = await bundleForChild('test/helpers/host.ts', bundleDir);
});
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }));

interface Said { won: boolean; pid?: number; code?: number; message?: string; hint?: string }

function holder(path: string, churn = false): { child: ChildProcess; said: Promise<Said>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', HOLDER, bundled, bundledHost, path, JSON.stringify(REQUEST), churn ? '1' : ''], { stdio: ['pipe', 'pipe', 'inherit'] });
  const said = new Promise<Said>((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const end = out.indexOf('\n');
      if (end >= 0) resolve(JSON.parse(out.slice(0, end)) as Said);
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code} before saying anything`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, said, exited };
}

describe('the state lock', () => {
  it('two runs on one state file at once: one runs, the other exits 2 with a clear message', async () => {
    const path = join(tempDir(), 'nightly.state.json');
    const runs = [holder(path), holder(path)];
    const said = await Promise.all(runs.map((run) => run.said.catch(() => ({ won: false }) as Said)));
    const winners = said.filter((s) => s.won);
    const losers = said.filter((s) => !s.won);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    const winner = winners[0] as Said;
    expect(losers[0]).toMatchObject({
      code: EXIT.usage,
      message: expect.stringContaining(`${path} is in use by process ${winner.pid} since 20`),
      hint: expect.stringContaining('let it finish'),
    });
    expect(losers[0]?.message).toMatch(/another run with this state file is still going$/);
    const loser = runs[said.indexOf(losers[0] as Said)];
    expect(await loser?.exited).toBe(EXIT.usage);
    // the winner finishes normally and releases: a third run takes the lock
    const win = runs[said.indexOf(winner)];
    win?.child.stdin?.end();
    expect(await win?.exited).toBe(0);
    const third = await RunState.open(path, REQUEST, { now: Date.now, host: HOST });
    await third.close();
  });

  it('a lock whose holder was killed (SIGKILL) is taken over; a live one is not', async () => {
    const path = join(tempDir(), 'nightly.state.json');
    const run = holder(path);
    const said = await run.said;
    expect(said.won).toBe(true);
    expect(() => lockFile(path, HOST)).toThrowError(LockedError);
    run.child.kill('SIGKILL');
    await run.exited;
    // the lock file is still there, naming a dead process: not a reason to refuse
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: said.pid });
    const lock = lockFile(path, HOST);
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid, nonce: lock.holder.nonce });
    lock.release();
    expect(() => readFileSync(`${path}.lock`)).toThrow(/ENOENT/);
  });

  it("two runs finding the same dead holder's lock: one takes it over, the other is refused", async () => {
    const path = join(tempDir(), 'nightly.state.json');
    for (let round = 0; round < 3; round++) {
      const dead = holder(path);
      expect((await dead.said).won).toBe(true);
      dead.child.kill('SIGKILL');
      await dead.exited;
      const runs = [holder(path), holder(path)];
      const said = await Promise.all(runs.map((run) => run.said));
      expect(said.filter((s) => s.won), `round ${round}`).toHaveLength(1);
      expect(said.find((s) => !s.won)).toMatchObject({ code: EXIT.usage });
      for (const run of runs) run.child.kill('SIGKILL');
      await Promise.all(runs.map((run) => run.exited));
    }
  });

  it('is judged by the liveness of its PID, not by its age', () => {
    const path = join(tempDir(), 'state.json');
    const old = { pid: 4242, host: 'elsewhere', nonce: 'x', since: '2020-01-01T00:00:00.000Z' };
    // an old lock from another host: its process cannot be checked, so it is respected
    writeFileSync(`${path}.lock`, JSON.stringify(old));
    expect(() => lockFile(path, HOST, { alive: () => false })).toThrowError(/in use by process 4242 on elsewhere since 2020/);
    // a lock of this host: alive means refused however old, dead means taken over
    const local = { ...old, host: hostname() };
    writeFileSync(`${path}.lock`, JSON.stringify(local));
    expect(() => lockFile(path, HOST, { alive: () => true })).toThrowError(expect.objectContaining({ exitCode: EXIT.usage, hint: expect.stringContaining('let it finish') }));
    const taken = lockFile(path, HOST, { alive: (pid) => pid !== 4242 });
    taken.release();
    // one this tool did not write: refused, with the way out
    writeFileSync(`${path}.lock`, 'garbage');
    expect(() => lockFile(path, HOST)).toThrowError(expect.objectContaining({ hint: `if no such run is going, delete ${path}.lock` }));
  });

  it('a lock of another host is taken over once its holder stopped touching it; the holder touches it', async () => {
    const path = join(tempDir(), 'state.json');
    writeFileSync(`${path}.lock`, JSON.stringify({ pid: 7, host: 'reporting-28350240-x7k2p', nonce: 'n', since: '2026-11-20T05:15:00.000Z' }));
    expect(() => lockFile(path, HOST)).toThrowError(/in use by process 7 on reporting-28350240-x7k2p/);
    const untouched = new Date(Date.now() - FOREIGN_STALE_MS - 1000);
    utimesSync(`${path}.lock`, untouched, untouched);
    const lock = lockFile(path, HOST, { heartbeatMs: 20 });
    utimesSync(`${path}.lock`, untouched, untouched);
    await vi.waitFor(() => expect(statSync(`${path}.lock`).mtimeMs).toBeGreaterThan(Date.now() - 5000));
    lock.release();
  });

  it('a lock naming this very process, which does not hold it, is a previous run (a container PID 1)', () => {
    const path = join(tempDir(), 'state.json');
    writeFileSync(`${path}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'previous', since: '2026-11-20T05:15:00.000Z' }));
    const lock = lockFile(path, HOST);
    expect(() => lockFile(path, HOST)).toThrowError(LockedError);
    lock.release();
  });

  it('release only removes its own lock', () => {
    const path = join(tempDir(), 'state.json');
    const first = lockFile(path, HOST, { pid: 999_999 });
    // a takeover by someone who (wrongly) thought the first holder dead
    const second = lockFile(path, HOST, { alive: () => false });
    first.release();
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ nonce: second.holder.nonce });
    second.release();
  });

  it('a writer killed at any moment leaves a valid state file', async () => {
    const path = join(tempDir(), 'nightly.state.json');
    for (let round = 0; round < 3; round++) {
      const run = holder(path, true);
      expect((await run.said).won).toBe(true);
      // let it rewrite the file a good number of times, then kill it mid-flight
      await new Promise<void>((resolve) => {
        const check = setInterval(() => {
          const doc = readState(path);
          if (doc && doc.windows.length >= 20 * (round + 1)) { clearInterval(check); resolve(); }
        }, 5);
      });
      run.child.kill('SIGKILL');
      await run.exited;
      const doc = readState(path);
      expect(doc?.version).toBe(2);
      expect(doc?.windows.length).toBeGreaterThanOrEqual(20);
    }
  });
});
