// From the `reporting sandbox` command's options to the server's settings, with usage errors.

import { DateTime } from 'luxon';
import { BOUNDS, parseDuration } from '../duration.js';
import { PARIS } from '../report/catalog.js';
import { UsageError } from '../errors.js';
import { MALFORMED, parseBodyFault, parseErrorFault, type Faults, type Malformed } from './faults.js';
import type { Layout, SandboxOptions } from './server.js';

export interface SandboxFlags {
  port: string;
  host: string;
  seed: string;
  delay?: string;
  latency?: string;
  error: string[];
  resetDownload?: string;
  stallDownload?: string;
  tokenUses?: string;
  reportStatus?: string;
  malformed?: string;
  scale?: string;
  layout: string;
  work?: string;
  maxRunning?: string;
  failOverDays?: string;
  restate?: string;
  reportTtl?: string;
  now?: string;
}

const LAYOUTS: Layout[] = ['compact', 'pretty', 'summary-first'];

export function sandboxOptionsFrom(flags: SandboxFlags): SandboxOptions & { host: string; port: number } {
  const faults: Partial<Faults> = {};
  try {
    faults.errors = flags.error.map(parseErrorFault);
    if (flags.resetDownload !== undefined) faults.resetDownload = parseBodyFault(flags.resetDownload, '--reset-download');
    if (flags.stallDownload !== undefined) faults.stallDownload = parseBodyFault(flags.stallDownload, '--stall-download');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (flags.latency !== undefined) faults.latencyMs = parseDuration(flags.latency, '--latency', BOUNDS.sandboxLatency);
  if (flags.tokenUses !== undefined) faults.tokenUses = wholeNumber(flags.tokenUses, '--token-uses', 1);
  if (flags.reportStatus !== undefined) faults.reportStatus = flags.reportStatus;
  if (flags.malformed !== undefined) {
    if (!(MALFORMED as readonly string[]).includes(flags.malformed)) {
      throw new UsageError(`--malformed is one of ${MALFORMED.join(', ')}, not "${flags.malformed}"`);
    }
    faults.malformed = flags.malformed as Malformed;
  }
  if (!(LAYOUTS as string[]).includes(flags.layout)) {
    throw new UsageError(`--layout is one of ${LAYOUTS.join(', ')}, not "${flags.layout}"`);
  }
  return {
    host: flags.host,
    port: wholeNumber(flags.port, '--port', 0, 65535),
    seed: wholeNumber(flags.seed, '--seed', 0),
    ...(flags.delay === undefined ? {} : { readyDelayMs: parseDuration(flags.delay, '--delay', BOUNDS.sandboxDelay) }),
    faults,
    scaleRows: flags.scale === undefined ? undefined : wholeNumber(flags.scale, '--scale', 0),
    layout: flags.layout as Layout,
    ...(flags.work === undefined ? {} : { workMsPerDay: parseDuration(flags.work, '--work') }),
    ...(flags.maxRunning === undefined ? {} : { maxRunning: wholeNumber(flags.maxRunning, '--max-running', 1) }),
    ...(flags.failOverDays === undefined ? {} : { failOverDays: wholeNumber(flags.failOverDays, '--fail-over-days', 1) }),
    ...(flags.restate === undefined ? {} : { restateMs: parseDuration(flags.restate, '--restate') }),
    ...(flags.reportTtl === undefined ? {} : { reportTtlMs: parseDuration(flags.reportTtl, '--report-ttl') }),
    ...(flags.now === undefined ? {} : { now: clockFrom(flags.now) }),
  };
}

/** A clock that reads `iso` now and then runs at the speed of real time. An instant without an
 * offset is read in Europe/Paris, as the API's dates are. */
export function clockFrom(iso: string, option = '--now'): () => number {
  const start = DateTime.fromISO(iso.trim(), { zone: PARIS });
  if (!start.isValid) {
    throw new UsageError(`${option} wants an ISO 8601 instant like 2026-11-20T06:00:00+01:00, not "${iso}"`);
  }
  const offset = start.toMillis() - Date.now();
  return () => Date.now() + offset;
}

function wholeNumber(text: string, option: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) {
    throw new UsageError(`${option} wants a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not "${text}"`);
  }
  return value;
}
