// An -o target that cannot be written is refused before the first request (exit 2, naming the
// path), never after a report was submitted, waited for and downloaded; and a write that still
// fails late says how to pick the report up.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { BIN, NODE, baseEnv, collect, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 30 });
});
afterAll(() => sandbox.close());

const env = (dir: string, server: Sandbox = sandbox) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: server.baseUrl, REPORTING_TOKEN: server.token,
});
const RUN = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--poll-interval', '20ms'];
const requests = () => sandbox.requests.length;

describe('-o that cannot be written: exit 2 before any request', () => {
  it('an existing folder, a path under a regular file, a device', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'plain'), 'x');
    const cases: [string, RegExp][] = [
      [dir, new RegExp(`^error: cannot write -o ${dir}: it is a folder\nhint: name a file inside it, for example -o ${dir}/report.csv\n$`)],
      [join(dir, 'plain', 'x.csv'), new RegExp(`^error: cannot write -o ${dir}/plain/x.csv: ${dir}/plain is a file, not a folder\n$`)],
      [join(dir, 'plain', 'a', 'b', 'x.csv'), /^error: cannot write -o .*\/plain\/a\/b\/x.csv: .*\/plain is a file, not a folder\n$/],
      ['/dev/null', /^error: cannot write -o \/dev\/null: it is not a regular file\nhint: write to stdout/],
    ];
    for (const [target, message] of cases) {
      const before = requests();
      for (const args of [RUN, ['download', 'abc123', '--wait'], ['campaigns']]) {
        const result = await runCli([...args, '-o', target], { env: env(dir) });
        expect(`${args[0]} -o ${target}: ${result.code} ${result.stderr}`).toMatch(new RegExp(`: 2 ${message.source.replace(/^\^/, '')}`));
      }
      expect(requests(), `no request for -o ${target}`).toBe(before);
    }
    expect(readdirSync(dir).sort()).toEqual(['plain']);
    // a folder that placeholders made: both spellings named, the hint a path that works
    mkdirSync(join(dir, 'buyer'));
    const made = await runCli([...RUN, '-o', join(dir, '{side}')], { env: env(dir) });
    expect(made.code).toBe(2);
    expect(made.stderr).toBe(`error: cannot write -o ${dir}/{side} (${dir}/buyer): it is a folder\nhint: name a file inside it, for example -o ${dir}/buyer/report.csv\n`);
  });

  it('/proc, where mkdir -p loops forever (deaf to SIGTERM): refused at once', async () => {
    const dir = tempDir();
    const before = requests();
    for (const target of ['/proc/nope/x.csv', '/proc/x.csv']) {
      const started = Date.now();
      const result = await runCli([...RUN, '-o', target], { env: env(dir), timeoutMs: 10_000 });
      expect(result.signal, 'killed after 10 s: it hung').toBeNull();
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^error: cannot write -o ${target}: cannot create (the folder /proc/nope|a file in /proc): the file system there does not allow it\nhint: `));
      expect(Date.now() - started).toBeLessThan(5_000);
    }
    expect(requests()).toBe(before);
  });

  // as root, the CLI runs as nobody to meet a folder it may not write in; else chmod does
  const asOtherUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
  const otherUserCanRun = asOtherUser !== undefined && spawnSync(NODE, [BIN, '--version'], { ...asOtherUser, cwd: '/' }).status === 0;
  it.skipIf(asOtherUser !== undefined && !otherUserCanRun)('a folder without write permission, and a missing folder under it', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const locked = join(dir, 'locked');
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const before = requests();
    try {
      for (const [target, where] of [[join(locked, 'x.csv'), `a file in ${locked}`], [join(locked, 'sub', 'x.csv'), `the folder ${locked}/sub`]] as const) {
        const result = await collect(spawn(NODE, [BIN, ...RUN, '-o', target], { cwd: '/', env: baseEnv({ ...env(dir), REPORTING_CONFIG_DIR: '/nonexistent' }), ...asOtherUser }));
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toBe(`error: cannot write -o ${target}: cannot create ${where}: permission denied\nhint: choose a folder you can write to\n`);
      }
    } finally {
      chmodSync(locked, 0o755);
    }
    expect(requests()).toBe(before);
    expect(readdirSync(locked)).toEqual([]);
  });

  it('what can be written still is: missing folders are created, {reportId} in a folder name', async () => {
    const dir = tempDir();
    const result = await runCli([...RUN, '-o', join(dir, 'a', '{reportId}', 'x.csv'), '-q', '--json'], { env: env(dir) });
    expect(result.code, result.stderr).toBe(0);
    const { reportId } = JSON.parse(result.stdout);
    expect(readFileSync(join(dir, 'a', reportId, 'x.csv'), 'utf8')).toMatch(/^date,/);
    expect(readdirSync(join(dir, 'a'))).toEqual([reportId]);
  });
});

describe('a write that fails once the report was submitted', () => {
  it('says how to pick the report up later, and that command works once the path is fixed', async () => {
    // the sandbox's clock stands still: the report stays in progress until the test moves it on
    const slow = await startSandbox({ port: 0, readyDelayMs: 4000, now: () => Date.parse('2026-11-21T11:00:00Z') });
    try {
      const dir = tempDir();
      const target = join(dir, 'sub', 'x.csv');
      const running = collect(spawn(NODE, [BIN, ...RUN, '-o', target], { env: baseEnv(env(dir, slow)) }));
      await until(() => slow.requests.some((r) => r.endpoint === 'status'), 'the first poll');
      writeFileSync(join(dir, 'sub'), 'a file where the folder was to be');
      slow.advance(4000);
      const result = await running;
      expect(result.code).toBe(1);
      const id = /submitted buyer report ([0-9a-f]+)/.exec(result.stderr)![1]!;
      expect(result.stderr).toContain(`error: cannot write ${target}: ${dir}/sub is a file, not a folder\n`);
      // the requested columns, named: download knows the request only while the journal keeps it
      const columns = 'date,displays,clicks,downloads,leads,landings,revenueEuro,valueDollar,eyesTrackings';
      expect(result.stderr).toContain(`hint: pick it up later with: reporting download ${id} --wait --columns ${columns} -o ${target}\n`);
      rmSync(join(dir, 'sub'));
      const later = await runCli(['download', id, '--wait', '--columns', columns, '-o', target, '-q'], { env: env(dir, slow) });
      expect(later.code, later.stderr).toBe(0);
      expect(readFileSync(target, 'utf8')).toMatch(/^date,displays,clicks,/);
    } finally {
      await slow.close();
    }
  });
});
