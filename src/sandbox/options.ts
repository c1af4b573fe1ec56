// From the `reporting sandbox` command's flags (typed at the edge) to the server's settings.

import { parseInstant } from '../clock.js';
import type { Faults } from './faults.js';
import type { Layout, SandboxOptions } from './state.js';

/** The faults a flag of `reporting sandbox` sets, each named as in Faults (faults.ts). */
const FAULT_FLAGS = ['errors', 'resetDownload', 'stallDownload', 'latencyMs', 'tokenUses', 'reportStatus', 'malformed'] as const;
type FaultFlag = (typeof FAULT_FLAGS)[number];

/** The `reporting sandbox` flags, parsed at the edge (src/cli/registry.ts): the faults as Faults
 * names them, and the server's settings. */
export type SandboxFlags = Partial<Pick<Faults, FaultFlag>> & Pick<Faults, 'errors'> & {
  port: number;
  host: string;
  seed: number;
  /** how many accounts (1 by default) */
  accounts?: number;
  delayMs?: number;
  scaleRows?: number;
  layout: Layout;
  workMsPerDay?: number;
  maxRunning?: number;
  failOverDays?: number;
  restateMs?: number;
  reportTtlMs?: number;
  /** an ISO time or Unix seconds: the sandbox clock starts there */
  now?: string;
};

/** The server's settings from the command's flags. */
export function sandboxOptionsFrom(flags: SandboxFlags): SandboxOptions & { host: string; port: number } {
  const faults: Partial<Faults> = {};
  for (const key of FAULT_FLAGS) if (flags[key] !== undefined) Object.assign(faults, { [key]: flags[key] });
  return {
    host: flags.host,
    port: flags.port,
    seed: flags.seed,
    ...(flags.accounts === undefined || flags.accounts === 1 ? {} : { accounts: flags.accounts }),
    ...(flags.delayMs === undefined ? {} : { readyDelayMs: flags.delayMs }),
    faults,
    scaleRows: flags.scaleRows,
    layout: flags.layout,
    ...(flags.workMsPerDay === undefined ? {} : { workMsPerDay: flags.workMsPerDay }),
    ...(flags.maxRunning === undefined ? {} : { maxRunning: flags.maxRunning }),
    ...(flags.failOverDays === undefined ? {} : { failOverDays: flags.failOverDays }),
    ...(flags.restateMs === undefined ? {} : { restateMs: flags.restateMs }),
    ...(flags.reportTtlMs === undefined ? {} : { reportTtlMs: flags.reportTtlMs }),
    ...(flags.now === undefined ? {} : { now: clockFrom(flags.now) }),
  };
}

/** A clock that reads `text` now and then runs at the speed of real time: the syntax of
 * REPORTING_NOW (src/clock.ts), an ISO 8601 time (without an offset: Paris time) or Unix seconds. */
export function clockFrom(text: string, option = '--now'): () => number {
  const offset = parseInstant(text, option) - Date.now();
  return () => Date.now() + offset;
}
