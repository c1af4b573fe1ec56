// A Context for running commands in-process: collected stdout/stderr, a fixed clock, no process.*.

import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { Context, Output } from '../../src/context.js';
import { HOST } from './host.js';

export class FakeOutput extends EventEmitter implements Output {
  text = '';
  constructor(public isTTY = false, public columns = 100) {
    super();
  }
  write(chunk: string | Uint8Array, callback?: (error?: Error | null) => void): boolean {
    this.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    callback?.();
    return true;
  }
}

export interface FakeContext {
  ctx: Context;
  stdout: FakeOutput;
  stderr: FakeOutput;
  controller: AbortController;
}

/** 2026-11-21T12:00:00+01:00 */
export const FIXED_NOW = Date.parse('2026-11-21T11:00:00Z');

export function fakeContext(options: { env?: Record<string, string | undefined>; now?: number; stdin?: string; tty?: boolean; cwd?: string } = {}): FakeContext {
  const stdout = new FakeOutput(options.tty);
  const stderr = new FakeOutput(options.tty);
  const controller = new AbortController();
  const ctx: Context = {
    stdout,
    stderr,
    stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    env: { ...options.env },
    cwd: options.cwd ?? process.cwd(),
    now: () => options.now ?? FIXED_NOW,
    random: () => 0.5,
    signal: controller.signal,
    version: '0.0.0-test',
    host: HOST,
  };
  return { ctx, stdout, stderr, controller };
}

export const argv = (...args: string[]) => ['node', 'reporting', ...args];

/** Parses a command line as the CLI would and returns the typed options the command would
 * receive, without running it (the gh `runF` seam): flags are tested apart from behaviour. */
export async function parseOptions<O>(...args: string[]): Promise<{ name: string; opts: O; code: number; stderr: string }> {
  const { runCli } = await import('../../src/cli/program.js');
  const { ctx, stderr } = fakeContext();
  let captured: { name: string; opts: O } | undefined;
  const code = await runCli(argv(...args), ctx, async (name, opts) => {
    captured = { name, opts: opts as O };
  });
  return { name: captured?.name ?? '', opts: captured?.opts as O, code, stderr: stderr.text };
}
