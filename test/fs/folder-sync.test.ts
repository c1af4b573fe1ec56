// Every file put in place is made durable by a sync of its folder that begins after its rename,
// and files put in place in one folder at once share those syncs (a fleet's jobs keep their states
// in one folder). Seen from outside, in the system calls strace records of a real process.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
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
