// The progress line on a real (pseudo-)terminal, through `script`, as in the login prompt test:
// the waiting line ticks every second, and after Ctrl-C or a failed download the terminal has its
// cursor and line wrapping back, and the error starts on its own line.

import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox, type SandboxOptions } from '../../src/sandbox/server.js';
import { BIN, NODE, baseEnv, collect } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const hasScript = spawnSync('script', ['--version']).status === 0;
const ESC = '\u001b';

/** Runs the CLI on a pseudo-terminal; `act` may type into it once `when` appears on the screen. */
async function onTerminal(options: SandboxOptions, args: string[], when?: RegExp, keys?: string) {
  const sandbox = await startSandbox({ port: 0, ...options });
  try {
    const dir = tempDir();
    const env = baseEnv({ REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, TERM: 'xterm' });
    const command = [NODE, BIN, ...args].map((arg) => `'${arg}'`).join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env, cwd: dir });
    if (when && keys) {
      let seen = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        if (seen === null) return;
        seen += chunk.toString('utf8');
        if (when.test(seen)) {
          child.stdin!.write(keys);
          seen = null as unknown as string;
        }
      });
    }
    return await collect(child, { keepStdin: true, timeoutMs: 30_000 });
  } finally {
    await sandbox.close();
  }
}

/** The terminal's state at the end: the last word on cursor and wrapping wins. */
function restored(screen: string): { cursor: boolean; wrap: boolean } {
  const last = (on: string, off: string) => screen.lastIndexOf(on) >= screen.lastIndexOf(off);
  return { cursor: last(`${ESC}[?25h`, `${ESC}[?25l`), wrap: last(`${ESC}[?7h`, `${ESC}[?7l`) };
}

/** Whether `error:` is written at the start of an empty line: a tiny terminal that knows the
 * moves the progress bar makes (CR, LF, column 1, save/restore the cursor, erase the line). */
function startsOwnLine(screen: string): boolean {
  const at = screen.indexOf('error:');
  if (at < 0) return false;
  let line: string[] = [];
  let col = 0;
  let saved = 0;
  for (let i = 0; i < at; i++) {
    const c = screen[i] as string;
    if (c === '\r') col = 0;
    else if (c === '\n') { line = []; col = 0; }
    else if (c === ESC) {
      const sequence = /^\u001b(\[[0-9;?]*[A-Za-z]|[78])/.exec(screen.slice(i));
      const code = sequence?.[1] ?? '';
      if (code === '7') saved = col;
      else if (code === '8') col = saved;
      else if (/^\[\d*G$/.test(code)) col = Math.max(0, Number(code.slice(1, -1) || 1) - 1);
      else if (code === '[2K') line = [];
      else if (/^\[0?K$/.test(code)) line = line.slice(0, col);
      i += (sequence?.[0].length ?? 1) - 1;
    } else line[col++] = c;
  }
  return col === 0 && line.join('').trim() === '';
}

describe.skipIf(!hasScript)('on a terminal', () => {
  it('the waiting line ticks every second between polls; Ctrl-C restores the terminal and the error has its own line', async () => {
    const result = await onTerminal({ readyDelayMs: 20_000 }, ['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', 'x.csv', '--poll-interval', '10s'],
      /waiting 3\.\ds/, '\u0003');
    const screen = result.stdout;
    // three ticks with one poll only
    expect(screen).toMatch(/waiting 1\.\ds {2}status progress {2}polls 1/);
    expect(screen).toMatch(/waiting 2\.\ds {2}status progress {2}polls 1/);
    expect(screen).toContain(`${ESC}[?25l`); // the bar did hide the cursor
    expect(screen).toMatch(/error: interrupted \(SIGINT\)/);
    expect(restored(screen)).toEqual({ cursor: true, wrap: true });
    expect(startsOwnLine(screen)).toBe(true);
    expect(result.code).toBe(130);
  }, 40_000);

  it('a download that fails half way: the terminal is restored and the error has its own line', async () => {
    const result = await onTerminal({ readyDelayMs: 50, scaleRows: 200_000, faults: { resetDownload: { afterBytes: 2_000_000, times: 10 } } },
      ['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', 'y.csv', '--poll-interval', '20ms', '--retries', '0']);
    const screen = result.stdout;
    expect(screen).toMatch(/downloading {2}[\d,]+ rows/);
    expect(screen).toMatch(/error: the download broke off/);
    expect(restored(screen)).toEqual({ cursor: true, wrap: true });
    expect(startsOwnLine(screen)).toBe(true);
    expect(result.code).toBe(5);
  }, 40_000);
});
