// The dependencies every command receives. Commands never reach for process.* themselves, so tests
// run them in-process with fake streams, environment and clock.

import type { Dispatcher } from 'undici';

export interface Output {
  write(chunk: string | Uint8Array, callback?: (error?: Error | null) => void): boolean;
  once(event: 'drain' | 'error' | 'close', listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Input extends AsyncIterable<Buffer | string> {
  isTTY?: boolean;
}

export interface Context {
  stdout: Output;
  stderr: Output;
  stdin: Input;
  env: Record<string, string | undefined>;
  cwd: string;
  /** milliseconds since the epoch; tests fix it */
  now(): number;
  /** aborted on SIGINT/SIGTERM; its reason is the signal name */
  signal: AbortSignal;
  /** the HTTP dispatcher; tests may hand in their own */
  dispatcher?: Dispatcher;
  version: string;
}

export function wantsColor(ctx: Context, stream: Output, noColorFlag = false): boolean {
  return Boolean(stream.isTTY) && !noColorFlag && ctx.env.NO_COLOR === undefined && ctx.env.TERM !== 'dumb';
}
