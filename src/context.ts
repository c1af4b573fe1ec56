// What the process provides to everything below it: its streams, environment, clocks, cancellation
// and host (src/main.ts builds it; tests build their own). A bottom module: the factory (which adds
// the flags, the token store and the API client) extends it, and the rooms below the commands take
// only this, never the factory.

import type { Dispatcher } from 'undici';
import type { Host } from './host.js';
import type { Sleep } from './retry.js';

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

/** What the process provides; tests build their own. */
export interface Context {
  stdout: Output;
  stderr: Output;
  stdin: Input;
  env: Record<string, string | undefined>;
  cwd: string;
  /** milliseconds since the epoch, the real clock: timers and durations; tests fix it. The
   * calendar (today, --since auto, the times in logs) is the Factory's `calendar`, which
   * REPORTING_NOW moves */
  now(): number;
  /** [0, 1); tests fix it */
  random(): number;
  /** every wait between two tries (src/retry.ts); unset: a timer (sleepFor). Tests give a fake clock's */
  sleep?: Sleep;
  /** aborted on SIGINT/SIGTERM; its reason is the signal name */
  signal: AbortSignal;
  /** the HTTP dispatcher; tests may hand in their own */
  dispatcher?: Dispatcher;
  version: string;
  /** this process: its pid and platform, liveness of others, cleanups run on any exit */
  host: Host;
}
