// `state show|forget|unlock FILE` (issue 20, item 11): flags apart from behaviour, then the
// behaviour in-process on state files made by real `run --state` runs against the sandbox.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import type { StateOptions } from '../../src/commands/state.js';
import { lockFile } from '../../src/fs/lock.js';
import type { StateDoc } from '../../src/engine/state.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { argv, fakeContext, FIXED_NOW, parseOptions } from '../helpers/ctx.js';
import { HOST } from '../helpers/host.js';
import { withSandbox } from '../helpers/http.js';

describe('state: flags', () => {
  it('show, forget and unlock receive the file, the windows and --force typed, under their own names', async () => {
    expect(await parseOptions<StateOptions>('state', 'show', 's.json')).toMatchObject({ code: 0, name: 'state show', opts: { action: 'show', file: 's.json' } });
    expect(await parseOptions<StateOptions>('state', 'forget', 's.json', '2026-11-03', '2026-11-01..2026-11-02', 'all'))
      .toMatchObject({ code: 0, name: 'state forget', opts: { action: 'forget', file: 's.json', windows: ['2026-11-03', '2026-11-01..2026-11-02', 'all'] } });
    expect(await parseOptions<StateOptions>('state', 'unlock', 's.json')).toMatchObject({ name: 'state unlock', opts: { action: 'unlock', file: 's.json', force: false } });
    expect((await parseOptions<StateOptions>('state', 'unlock', '--force', 's.json')).opts).toEqual({ action: 'unlock', file: 's.json', force: true });
  });

  it('a missing file or window, an empty file name, an unknown subcommand or --force on show: usage errors, nothing run', async () => {
    for (const args of [['state'], ['state', 'show'], ['state', 'forget', 's.json'], ['state', 'show', ''], ['state', 'shwo', 's.json'], ['state', 'show', 's.json', '--force']]) {
      const { name, code } = await parseOptions<StateOptions>(...args);
      expect(`${args.join(' ')}: ${code} ${name}`).toBe(`${args.join(' ')}: 2 `);
    }
    expect((await parseOptions('state', 'shwo', 's.json')).stderr).toMatch(/unknown command 'shwo'.*Did you mean show\?/s);
  });
});

const env = (sandbox: Sandbox, dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });
const RUN = ['run', 'buyer', '--until', '2026-11-05', '--chunk', 'day', '--breakdowns', 'DAILY,COUNTRY', '--metrics', 'displays,clicks',
  '-o', 'out/{since}.csv', '--state', 's.json', '--poll-interval', '20ms', '--log-format', 'json'];

/** Runs the CLI in-process in `dir`; a fake clock (2026-11-21), a pipe or a terminal. */
async function cli(sandbox: Sandbox, dir: string, args: string[], options: { tty?: boolean } = {}) {
  const { ctx, stdout, stderr } = fakeContext({ env: env(sandbox, dir), cwd: dir, tty: options.tty });
  const code = await runCli(argv(...args), ctx);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** `run ... --state s.json` over 1..5 November: the days it submitted (from its JSON log). */
async function nightly(sandbox: Sandbox, dir: string, since = '2026-11-01'): Promise<string[]> {
  const result = await cli(sandbox, dir, [...RUN, '--since', since]);
  expect(result.code, result.stderr).toBe(0);
  return result.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { event: string; window: { since: string } })
    .filter((line) => line.event === 'submitted').map((line) => line.window.since.slice(0, 10));
}

const readDoc = (dir: string) => JSON.parse(readFileSync(join(dir, 's.json'), 'utf8')) as StateDoc;
const statuses = (dir: string) => readDoc(dir).windows.map((w) => `${w.since.slice(0, 10)} ${w.status}`);
const DAYS = ['2026-11-01', '2026-11-02', '2026-11-03', '2026-11-04', '2026-11-05'];

describe('state show', () => {
  it('a load-only run\'s state names its table and database, and no output', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const run = await cli(sandbox, dir, ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--metrics', 'displays',
        '--poll-interval', '20ms', '--state', 's.json', '--load', 'duckdb:w.duckdb', '--table', 'daily', '-q']);
      expect(run.code, run.stderr).toBe(0);
      const shown = await cli(sandbox, dir, ['state', 'show', 's.json']);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^output: +\(none: a table\)$/m);
      expect(shown.stdout).toContain(`load:       daily in duckdb:${join(dir, 'w.duckdb')}`);
    });
  });

  it('prints the request, then a line per window (tab-separated in a pipe, a table on a terminal); --json is the windows as recorded', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      expect(await nightly(sandbox, dir)).toEqual(DAYS);
      const doc = readDoc(dir);
      const before = readFileSync(join(dir, 's.json'));
      const mtime = statSync(join(dir, 's.json')).mtimeMs;

      const plain = await cli(sandbox, dir, ['state', 'show', 's.json']);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stderr).toBe('');
      const [request, windows] = plain.stdout.split('\n\n') as [string, string];
      expect(request).toMatch(/^side: +buyer$/m);
      expect(request).toMatch(/^metrics: +displays,clicks$/m);
      expect(request).toMatch(/^breakdowns: +DAILY,COUNTRY$/m);
      expect(request).toContain(`output:     ${join(dir, 'out', '{since}.csv')}`);
      expect(request).toMatch(/^chunk: +day$/m);
      expect(request).toMatch(/^windows: +5 \(5 done\)$/m);
      expect(windows.split('\n').slice(0, -1).map((line) => line.split('\t'))).toEqual(doc.windows.map((w) => [
        w.since.slice(0, 10), 'done', w.reportId, '1', String(w.rows), join(dir, 'out', `${w.since.slice(0, 10)}.csv`), '',
      ]));

      const terminal = await cli(sandbox, dir, ['state', 'show', 's.json'], { tty: true });
      const lines = terminal.stdout.split('\n');
      const header = lines.findIndex((line) => line.startsWith('PERIOD'));
      expect(lines[header]).toMatch(/^PERIOD +STATUS +REPORT +ATTEMPTS +ROWS +FILE +ERROR$/);
      // 100 columns: the file's path gives way (cut with an ellipsis), the period, status and ID do not
      expect(lines[header + 1]).toMatch(new RegExp(`^2026-11-01 +done +${doc.windows[0]?.reportId} +1 +\\d+ +/\\S+…$`));
      expect(lines.filter((line) => /^2026-11-0\d /.test(line))).toHaveLength(5);

      const json = await cli(sandbox, dir, ['state', 'show', 's.json', '--json']);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual(doc.windows);

      // read-only: the file untouched, no lock taken
      expect(readFileSync(join(dir, 's.json'))).toEqual(before);
      expect(statSync(join(dir, 's.json')).mtimeMs).toBe(mtime);
      expect(existsSync(join(dir, 's.json.lock'))).toBe(false);
    });
  });

  it('says on stderr that a run holds the file (its PID) and shows it anyway; a dead holder is named as gone', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      await nightly(sandbox, dir);
      const lock = lockFile(join(dir, 's.json'), HOST);
      try {
        const held = await cli(sandbox, dir, ['state', 'show', 's.json']);
        expect(held.code).toBe(0);
        expect(held.stderr).toMatch(new RegExp(`^note: a run holds .*s\\.json \\(process ${process.pid}, since .*\\)`));
        expect(held.stdout).toMatch(/windows: +5/);
      } finally {
        lock.release();
      }
      writeFileSync(join(dir, 's.json.lock'), JSON.stringify({ pid: deadPid(), host: hostname(), nonce: 'n', since: '2026-11-21T05:00:00.000Z' }));
      const dead = await cli(sandbox, dir, ['state', 'show', 's.json', '--json']);
      expect(dead.stderr).toMatch(/note: .*s\.json\.lock was left by process \d+, which is gone: .*reporting state unlock/);
      expect(JSON.parse(dead.stdout)).toHaveLength(5);
    });
  });

  it('a missing file is a usage error', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const missing = await cli(sandbox, dir, ['state', 'show', 'nope.json']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/^error: there is no state file at .*nope\.json\nhint: a run with --state FILE creates it/);
    });
  });
});

/** The PID of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  return child.pid as number;
}

describe('state forget', () => {
  it('forgets a date and a range; the next run fetches exactly those days again, their files left until then', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      await nightly(sandbox, dir);
      const file = join(dir, 'out', '2026-11-03.csv');
      const content = readFileSync(file, 'utf8');
      const forgot = await cli(sandbox, dir, ['state', 'forget', 's.json', '2026-11-03', '2026-11-04..2026-11-05']);
      expect(forgot.code, forgot.stderr).toBe(0);
      expect(forgot.stdout).toMatch(/^forgot 2026-11-03 \(done, report \w+, file .*2026-11-03\.csv\)\nforgot 2026-11-04 .*\nforgot 2026-11-05 .*\n$/);
      expect(forgot.stderr).toContain('3 windows forgotten: the next run covering them fetches them again');
      expect(forgot.stderr).toContain('the 3 files written for them are left as they are until then');
      expect(statuses(dir)).toEqual(['2026-11-01 done', '2026-11-02 done', '2026-11-03 pending', '2026-11-04 pending', '2026-11-05 pending']);
      expect(readDoc(dir).windows[2]).toMatchObject({ reportId: null, attempts: 0, rows: null, file: null, sha256: null });
      expect(readFileSync(file, 'utf8')).toBe(content);
      expect(existsSync(join(dir, 's.json.lock'))).toBe(false);

      const reports = sandbox.reports().length;
      expect(await nightly(sandbox, dir)).toEqual(['2026-11-03', '2026-11-04', '2026-11-05']);
      expect(sandbox.reports().length).toBe(reports + 3);
      expect(statuses(dir)).toEqual(DAYS.map((day) => `${day} done`));
    });
  });

  it('with --since auto, a day forgotten in the middle is fetched again, and only it', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      await nightly(sandbox, dir);
      expect((await cli(sandbox, dir, ['state', 'forget', 's.json', '2026-11-02', '-q'])).code).toBe(0);
      expect(await nightly(sandbox, dir, 'auto')).toEqual(['2026-11-02']);
    });
  });

  it('a window not recorded, or not a window: usage errors with the nearest recorded day; the file untouched', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      await nightly(sandbox, dir);
      const before = readFileSync(join(dir, 's.json'), 'utf8');
      const unknown = await cli(sandbox, dir, ['state', 'forget', 's.json', '2026-11-03', '2026-11-09']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/^error: no window starting on 2026-11-09 is recorded in .*s\.json; did you mean 2026-11-05\?\nhint: `reporting state show /);
      const range = await cli(sandbox, dir, ['state', 'forget', 's.json', '2026-10-01..2026-10-31']);
      expect(range.stderr).toMatch(/no window starting in 2026-10-01\.\.2026-10-31 is recorded/);
      for (const word of ['yesterday', '2026-11-31', '2026-11-05..2026-11-01', '2026-11-01..', 'a..b..c']) {
        const bad = await cli(sandbox, dir, ['state', 'forget', 's.json', word]);
        expect(`${word}: ${bad.code}`).toBe(`${word}: 2`);
        expect(bad.stderr).toMatch(/is not a window: give a Paris date \(2026-11-03: the windows starting that day\), a range \(2026-11-01\.\.2026-11-07\) or all|ends before it starts/);
      }
      expect(readFileSync(join(dir, 's.json'), 'utf8')).toBe(before);
    });
  });

  it('refuses while a run holds the file (exit 2, the same error as run); all with --json prints the records forgotten', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      await nightly(sandbox, dir);
      const doc = readDoc(dir);
      const lock = lockFile(join(dir, 's.json'), HOST, { pid: process.ppid });
      try {
        const refused = await cli(sandbox, dir, ['state', 'forget', 's.json', 'all']);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toMatch(new RegExp(`^error: .*s\\.json is in use by process ${process.ppid} since .*: another run with this state file is still going`));
        expect(readDoc(dir)).toEqual(doc);
      } finally {
        lock.release();
      }
      const all = await cli(sandbox, dir, ['state', 'forget', 's.json', 'all', '--json']);
      expect(all.code, all.stderr).toBe(0);
      expect(JSON.parse(all.stdout)).toEqual(doc.windows);
      expect(statuses(dir)).toEqual(DAYS.map((day) => `${day} pending`));
      expect(readDoc(dir).updatedAt).toBe(new Date(FIXED_NOW).toISOString());
    });
  });
});

describe('state unlock', () => {
  const lockOf = (dir: string) => join(dir, 's.json.lock');
  const writeLock = (dir: string, holder: { pid: number; host: string }, ageMs = 0) => {
    writeFileSync(lockOf(dir), `${JSON.stringify({ ...holder, nonce: 'n', since: '2026-11-21T05:00:00.000Z' })}\n`);
    const at = new Date(FIXED_NOW - ageMs);
    utimesSync(lockOf(dir), at, at);
  };

  it('removes the lock of a process gone, naming it; nothing to do without a lock', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const none = await cli(sandbox, dir, ['state', 'unlock', 's.json']);
      expect(none).toMatchObject({ code: 0, stdout: '' });
      expect(none.stderr).toMatch(/s\.json is not locked: nothing to remove/);
      const pid = deadPid();
      writeLock(dir, { pid, host: hostname() });
      const gone = await cli(sandbox, dir, ['state', 'unlock', 's.json']);
      expect(gone.code, gone.stderr).toBe(0);
      expect(gone.stdout).toBe(`removed ${lockOf(dir)} of process ${pid} since 2026-11-21T05:00:00.000Z (not running any more)\n`);
      expect(existsSync(lockOf(dir))).toBe(false);
    });
  });

  it('refuses a live holder of this host, --force or not, naming it; the lock stays', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const lock = lockFile(join(dir, 's.json'), HOST, { pid: process.ppid });
      try {
        for (const force of [[], ['--force']]) {
          const refused = await cli(sandbox, dir, ['state', 'unlock', 's.json', ...force]);
          expect(refused.code).toBe(2);
          expect(refused.stderr).toMatch(new RegExp(`^error: .*s\\.json is in use by process ${process.ppid} since .*\nhint: unlock removes a lock only when its holder is gone: stop process ${process.ppid} first`));
          expect(existsSync(lockOf(dir))).toBe(true);
        }
      } finally {
        lock.release();
      }
    });
  });

  it('another host\'s lock: refused while touched in the last 5 minutes (unless --force), removed once older', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeLock(dir, { pid: 7, host: 'pod-1' }, 60_000);
      const recent = await cli(sandbox, dir, ['state', 'unlock', 's.json']);
      expect(recent.code).toBe(2);
      expect(recent.stderr).toMatch(/in use by process 7 on pod-1 since .*\nhint: its holder on pod-1 touched it 60 s ago .*add --force/);
      const forced = await cli(sandbox, dir, ['state', 'unlock', 's.json', '--force', '--json']);
      expect(forced.code, forced.stderr).toBe(0);
      expect(JSON.parse(forced.stdout)).toEqual({ lock: lockOf(dir), removed: true, holder: { pid: 7, host: 'pod-1', nonce: 'n', since: '2026-11-21T05:00:00.000Z' } });
      expect(existsSync(lockOf(dir))).toBe(false);

      writeLock(dir, { pid: 7, host: 'pod-1' }, 6 * 60_000);
      const old = await cli(sandbox, dir, ['state', 'unlock', 's.json']);
      expect(old.code, old.stderr).toBe(0);
      expect(old.stdout).toMatch(/^removed .*s\.json\.lock of process 7 on pod-1 since .* \(on another host, untouched for 360 s\)\n$/);
    });
  });

  it('a lock this tool did not write is removed only with --force', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(lockOf(dir), 'locked by someone\n');
      const refused = await cli(sandbox, dir, ['state', 'unlock', 's.json']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/s\.json\.lock was not written by reporting .*\nhint: if no run uses .*add --force/);
      expect(existsSync(lockOf(dir))).toBe(true);
      expect((await cli(sandbox, dir, ['state', 'unlock', 's.json', '--force'])).code).toBe(0);
      expect(existsSync(lockOf(dir))).toBe(false);
    });
  });
});
