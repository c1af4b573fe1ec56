// stdout and stderr as a shell gives them: a reader slower than the CLI, a full disk (/dev/full),
// a reader of messages that goes away. The output must be complete, or the exit code must say why.

import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { BIN, NODE, baseEnv, collect, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { PYTHON } from '../helpers/python.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 20, scaleRows: 1500 });
});
afterAll(() => sandbox.close());

const env = (dir: string) => ({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token });
const REPORT = ['--since', '2026-11-01', '--until', '2026-11-20', '--breakdowns', 'DAILY,CITY', '--poll-interval', '20ms', '-q'];

// A reader slower than the CLI: 4 kB every 2 ms, through a real pipe, as a shell would set it up.
const SLOW_READER = `
import sys, time
out = open(sys.argv[1], 'wb')
while True:
    piece = sys.stdin.buffer.read1(4096)
    if not piece: break
    out.write(piece)
    time.sleep(0.002)
`;

async function slowRead(args: string[], dir: string, out: string): Promise<{ code: number | null; stderr: string }> {
  const cli = [NODE, BIN, ...args].map((arg) => `'${arg}'`).join(' ');
  const child = spawn('bash', ['-c', `${cli} | "${PYTHON}" -c "$SLOW_READER" '${out}' 2>/dev/null; exit \${PIPESTATUS[0]}`], {
    env: { ...baseEnv(env(dir)), SLOW_READER },
  });
  const result = await collect(child, { timeoutMs: 120_000 });
  return { code: result.code, stderr: result.stderr };
}

describe('stdout through a slow reader', () => {
  it.each([
    ['--json', ['--json'], 'out.json'],
    // every field: the requested columns alone would fit in a pipe's buffer
    ['CSV', ['--columns', 'all'], 'out.csv'],
  ])('run %s: 30 runs, each byte for byte the -o file', async (_name, flags, file) => {
    const dir = tempDir();
    const saved = await runCli(['run', 'buyer', ...REPORT, ...flags.filter((flag) => flag !== '--json'), '-o', join(dir, file)], { env: env(dir) });
    expect(saved.code).toBe(0);
    const expected = readFileSync(join(dir, file));
    expect(expected.length).toBeGreaterThan(256 * 1024); // several times a pipe's buffer
    const sizes: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const outs = [0, 1, 2].map((i) => join(dir, `piped-${batch}-${i}`));
      const results = await Promise.all(outs.map((out) => slowRead(['run', 'buyer', ...REPORT, ...flags], dir, out)));
      results.forEach((result, i) => {
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        const piped = readFileSync(outs[i]!);
        sizes.push(piped.length);
        expect(piped.equals(expected), `run ${sizes.length}: ${piped.length} of ${expected.length} bytes`).toBe(true);
      });
    }
    expect(sizes).toHaveLength(30);
  }, 300_000);
});

describe('a failed write to stdout', () => {
  const commands: [string, string[]][] = [
    ['run --json', ['run', 'buyer', ...REPORT, '--json']],
    ['run (CSV)', ['run', 'buyer', ...REPORT]],
    ['buyer', ['buyer', '--since', 'today', '--until', 'today']],
    ['seller --json', ['seller', '--since', 'today', '--until', 'today', '--json']],
    ['status', ['status', 'ID']],
    ['download', ['download', 'ID', '--wait', '--poll-interval', '20ms']],
    ['download --json', ['download', 'ID', '--wait', '--poll-interval', '20ms', '--json']],
    ['campaigns', ['campaigns']],
    ['campaigns --json', ['campaigns', '--json']],
    ['campaigns --format csv', ['campaigns', '--format', 'csv']],
    ['whoami', ['whoami']],
    ['logout --json', ['logout', '--json']],
    ['completion bash', ['completion', 'bash']],
    ['--help', ['--help']],
    ['--version', ['--version']],
  ];
  it.each(commands)('%s > /dev/full: exit 1 and a message', async (_name, args) => {
    const dir = tempDir();
    const id = args.includes('ID') ? (await runCli(['buyer', '--since', 'today', '--until', 'today'], { env: env(dir) })).stdout.trim() : '';
    const full = openSync('/dev/full', 'w');
    try {
      const child = spawn(NODE, [BIN, ...args.map((arg) => (arg === 'ID' ? id : arg))], { env: baseEnv(env(dir)), stdio: ['pipe', full, 'pipe'] });
      const result = await collect(child);
      // one wording for every command, --version's shortcut included (no raw ENOSPC)
      expect(result.stderr).toMatch(/^error: cannot write standard output: the disk is full$/m);
      expect(result.stderr).not.toMatch(/ENOSPC/);
      expect(result.code).toBe(1);
    } finally {
      closeSync(full);
    }
  });
});

describe('a closed stderr', () => {
  it('`2>&1 | grep -m1 submitted`: the job goes on and the file is written', async () => {
    const dir = tempDir();
    const child = spawn(NODE, [BIN, 'run', 'buyer', ...REPORT.filter((arg) => arg !== '-q'), '-o', join(dir, 'ep.csv')], { env: baseEnv(env(dir)), stdio: ['ignore', 'pipe', 'pipe'] });
    // the reader of messages leaves after the first line
    child.stderr.once('data', () => child.stderr.destroy());
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    const again = await runCli(['run', 'buyer', ...REPORT, '-o', join(dir, 'again.csv')], { env: env(dir) });
    expect(again.code).toBe(0);
    expect(readFileSync(join(dir, 'ep.csv'), 'utf8')).toBe(readFileSync(join(dir, 'again.csv'), 'utf8'));
  });
});
