// Every file put in place is made durable by a sync of its folder that begins after its rename,
// and files put in place in one folder at once share those syncs (a fleet's jobs keep their states
// in one folder). Seen from outside, in the system calls strace records of a real process.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, baseEnv, collect, NODE } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const strace = spawnSync('strace', ['-V']).status === 0;
const atomic = resolve('dist/fs/atomic.js');
const FILES = 30;

/** The order, in one strace log of all threads, of each rename's end and each folder sync's start. */
function events(trace: string, dir: string): { renamed: number[]; synced: number[] } {
  const renamed: number[] = [];
  const synced: number[] = [];
  const inFlight = new Map<string, string>();
  trace.split('\n').forEach((line, at) => {
    const [pid = '', ...rest] = line.trim().split(/\s+/);
    const call = rest.join(' ');
    const started = /^(\w+)\(/.exec(call)?.[1];
    if (started === 'fsync' && call.startsWith(`fsync(`) && call.includes(`<${dir}>`)) synced.push(at);
    if (started && /<unfinished \.\.\.>$/.test(call)) inFlight.set(pid, started);
    else if (started?.startsWith('rename') && / = 0$/.test(call)) renamed.push(at);
    const resumed = /^<\.\.\. (\w+) resumed>/.exec(call)?.[1];
    if (resumed) {
      inFlight.delete(pid);
      if (resumed.startsWith('rename') && / = 0$/.test(call)) renamed.push(at);
    }
  });
  return { renamed, synced };
}

describe('files put in place are durable, and share their folder\'s sync', () => {
  it.skipIf(!strace).each([1, 2, 3])('30 files written at once in one folder (%i): each whole, each rename followed by a later sync of the folder, fewer syncs than files', (round) => {
    const dir = tempDir();
    const log = join(tempDir(), `trace-${round}.txt`);
    const script = `const { writeFileAtomic } = await import(${JSON.stringify(atomic)});
await Promise.all(Array.from({ length: ${FILES} }, (_, i) => writeFileAtomic(${JSON.stringify(dir)} + '/state-' + i + '.json', JSON.stringify({ job: i }))));`;
    execFileSync('strace', ['-f', '-qq', '-y', '-e', 'trace=rename,renameat,renameat2,fsync', '-o', log, process.execPath, '--input-type=module', '-e', script]);
    for (let i = 0; i < FILES; i++) expect(JSON.parse(readFileSync(join(dir, `state-${i}.json`), 'utf8'))).toEqual({ job: i });
    const { renamed, synced } = events(readFileSync(log, 'utf8'), dir);
    expect(renamed).toHaveLength(FILES);
    for (const at of renamed) expect(synced.some((sync) => sync > at), `the rename at line ${at} of the trace`).toBe(true);
    expect(synced.length).toBeGreaterThan(0);
    expect(synced.length).toBeLessThan(FILES);
  });
});

describe('what is flushed to the disk in a run with a state', () => {
  it.skipIf(!strace)('a chunked run: each CSV and the state flushed, with their folders; the spool (scratch, read back by the run) never', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const log = join(dir, 'trace.txt');
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--chunk', 'day', '--state', 'nightly.json', '-o', 'out/{since}.csv', '--poll-interval', '20ms', '-q'];
      const child = spawn('strace', ['-f', '-qq', '-y', '-e', 'trace=fsync', '-o', log, NODE, BIN, ...args], {
        cwd: dir, env: baseEnv({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token }),
      });
      const result = await collect(child);
      expect(result.code, result.stderr).toBe(0);
      const flushed = [...readFileSync(log, 'utf8').matchAll(/fsync\(\d+<([^>]+)>/g)].map((match) => match[1] as string);
      for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) expect(flushed.some((path) => path.includes(`/out/.${day}.csv.`)), day).toBe(true);
      expect(flushed).toContain(join(dir, 'out'));
      expect(flushed.some((path) => path.includes('/.nightly.json.'))).toBe(true);
      expect(flushed.filter((path) => path.includes('reporting-spool-'))).toEqual([]);
    });
  }, 60_000);
});

describe('the intent before a submit: written whole, its folder not synced', () => {
  it.skipIf(!strace)('a state file: the submitting record renamed into place with its bytes flushed, no folder sync until the submitted record\'s', () => {
    const dir = tempDir();
    const log = join(tempDir(), 'trace.txt');
    const dist = (path: string) => JSON.stringify(resolve('dist', path));
    const request = { side: 'buyer', metrics: ['displays'], breakdowns: ['DAILY'], filters: {}, params: {}, format: 'csv', output: null };
    const script = `import { writeFileSync } from 'node:fs';
const { RunState } = await import(${dist('engine/state.js')});
const { processHost } = await import(${dist('main.js')});
const { ExitCleanups } = await import(${dist('host.js')});
const state = await RunState.open(${JSON.stringify(join(dir, 's.json'))}, ${JSON.stringify(request)}, { now: Date.now, host: processHost(new ExitCleanups()) });
const window = { since: 1793487600, until: 1793573999 };
await state.pending([window]);
writeFileSync(${JSON.stringify(join(dir, 'marker-intent'))}, '');
await state.submitting(window);
writeFileSync(${JSON.stringify(join(dir, 'marker-submitted'))}, '');
await state.submitted(window, 'a1b2c3');
writeFileSync(${JSON.stringify(join(dir, 'marker-end'))}, '');
await state.close();`;
    execFileSync('strace', ['-f', '-qq', '-y', '-e', 'trace=openat,rename,fsync', '-o', log, process.execPath, '--input-type=module', '-e', script]);
    const lines = readFileSync(log, 'utf8').split('\n');
    const at = (marker: string) => lines.findIndex((line) => line.includes(`/${marker}"`));
    const between = (from: string, to: string) => lines.slice(at(from), at(to));
    const renames = (part: string[]) => part.filter((line) => /rename\(.*s\.json"/.test(line) || /<\.\.\. rename resumed>/.test(line));
    const folderSyncs = (part: string[]) => part.filter((line) => line.includes(`fsync(`) && line.includes(`<${dir}>`));
    const fileSyncs = (part: string[]) => part.filter((line) => /fsync\(\d+<[^>]*\.s\.json\./.test(line));
    const intent = between('marker-intent', 'marker-submitted');
    expect(renames(intent).length).toBeGreaterThan(0);
    expect(fileSyncs(intent).length).toBeGreaterThan(0);
    expect(folderSyncs(intent)).toEqual([]);
    const submitted = between('marker-submitted', 'marker-end');
    expect(folderSyncs(submitted).length).toBeGreaterThan(0);
    expect(JSON.parse(readFileSync(join(dir, 's.json'), 'utf8')).windows[0]).toMatchObject({ status: 'submitted', reportId: 'a1b2c3', submitting: null });
  });
});
