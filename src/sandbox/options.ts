// From the `reporting sandbox` command's options to the server's settings, with usage errors.

import { BOUNDS, parseDuration } from '../duration.js';
import { UsageError } from '../errors.js';
import { MALFORMED, parseBodyFault, parseErrorFault, type Faults, type Malformed } from './faults.js';
import type { Layout, SandboxOptions } from './server.js';

export interface SandboxFlags {
  port: string;
  host: string;
  seed: string;
  delay: string;
  latency?: string;
  error: string[];
  resetDownload?: string;
  stallDownload?: string;
  tokenUses?: string;
  reportStatus?: string;
  malformed?: string;
  scale?: string;
  layout: string;
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
    readyDelayMs: parseDuration(flags.delay, '--delay', BOUNDS.sandboxDelay),
    faults,
    scaleRows: flags.scale === undefined ? undefined : wholeNumber(flags.scale, '--scale', 0),
    layout: flags.layout as Layout,
  };
}

function wholeNumber(text: string, option: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) {
    throw new UsageError(`${option} wants a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not "${text}"`);
  }
  return value;
}
