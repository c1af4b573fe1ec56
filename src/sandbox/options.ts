// From the `reporting sandbox` command's flags (typed at the edge) to the server's settings.

import { parseInstant } from '../clock.js';
import type { BodyFault, ErrorFault, Faults, Malformed } from './faults.js';
import type { Layout, SandboxOptions } from './state.js';

/** The `reporting sandbox` flags, parsed at the edge (src/cli/registry.ts). */
export interface SandboxFlags {
  port: number;
  host: string;
  seed: number;
  delayMs?: number;
  latencyMs?: number;
  errors: ErrorFault[];
  resetDownload?: BodyFault;
  stallDownload?: BodyFault;
  tokenUses?: number;
  reportStatus?: string;
  malformed?: Malformed;
  scaleRows?: number;
  layout: Layout;
  workMsPerDay?: number;
  maxRunning?: number;
  failOverDays?: number;
  restateMs?: number;
  reportTtlMs?: number;
  /** an ISO time or Unix seconds: the sandbox clock starts there */
  now?: string;
}

/** The server's settings from the command's flags. */
export function sandboxOptionsFrom(flags: SandboxFlags): SandboxOptions & { host: string; port: number } {
  const faults: Partial<Faults> = { errors: flags.errors };
  if (flags.resetDownload !== undefined) faults.resetDownload = flags.resetDownload;
  if (flags.stallDownload !== undefined) faults.stallDownload = flags.stallDownload;
  if (flags.latencyMs !== undefined) faults.latencyMs = flags.latencyMs;
  if (flags.tokenUses !== undefined) faults.tokenUses = flags.tokenUses;
  if (flags.reportStatus !== undefined) faults.reportStatus = flags.reportStatus;
  if (flags.malformed !== undefined) faults.malformed = flags.malformed;
  return {
    host: flags.host,
    port: flags.port,
    seed: flags.seed,
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
