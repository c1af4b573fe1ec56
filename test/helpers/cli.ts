// Spawning the built CLI, as a user would run it.

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/reporting.js', import.meta.url));
/** The runtime that runs the CLI: .ci/run sets REPORTING_TEST_NODE to run the end-to-end tests
 * under Node 22 and 24 too (the tests themselves, and the sandbox, stay on this Node). */
export const NODE = process.env.REPORTING_TEST_NODE || process.execPath;

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
  /** leave stdin open: the test types into it later */
  keepStdin?: boolean;
}

/** A clean environment: nothing from the developer's shell leaks into a test. */
export function baseEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

export function startCli(args: string[], options: RunOptions = {}): ChildProcess {
  return spawn(NODE, [BIN, ...args], {
    env: baseEnv(options.env),
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export function runCli(args: string[], options: RunOptions = {}): Promise<Result> {
  const child = startCli(args, options);
  return collect(child, options);
}

export function collect(child: ChildProcess, options: RunOptions = {}): Promise<Result> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  if (options.input !== undefined) child.stdin?.end(options.input);
  else if (!options.keepStdin) child.stdin?.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Resolves with the first line the child prints on stdout. */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\n');
      if (end >= 0) {
        child.stdout?.off('data', onData);
        resolve(buffered.slice(0, end));
      }
    };
    child.stdout?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited with ${code} before printing a line`)));
  });
}

/** Peak resident memory of a live process, from /proc (Linux), in bytes. */
export function peakRss(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmHWM:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
