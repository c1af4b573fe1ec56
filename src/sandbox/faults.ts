// Fault injection: what the sandbox can be told to do wrong, and when.

import { didYouMean } from '../suggest.js';
import { hash, unit } from './random.js';

export const ENDPOINTS = {
  auth: '/auth-reporting',
  buyer: '/buyer-reporting',
  seller: '/seller-reporting',
  status: '/status-reporting',
  download: '/download-reporting',
  campaigns: '/campaigns',
} as const;
export type EndpointName = keyof typeof ENDPOINTS;

export interface ErrorFault {
  status: number;
  /** which endpoint, or every one */
  endpoint: EndpointName | '*';
  /** only the first N requests of that endpoint fail */
  first?: number;
  /** a fraction of requests fail (deterministic for a seed) */
  rate?: number;
  /** seconds, sent as Retry-After */
  retryAfter?: number;
  /** answer an HTML page, as a proxy in front of the API would */
  html?: boolean;
}

/** A fault that hits the first `times` downloads once `afterBytes` of the body have been sent. */
export interface BodyFault {
  afterBytes: number;
  times: number;
}

/** Answers the CLI must refuse as unexpected (issue 5's malformed-server checks). */
export const MALFORMED = ['truncated', 'wrong-types', 'no-report-id', 'data-not-array', 'unknown-status'] as const;
export type Malformed = (typeof MALFORMED)[number];

/** What `--report-status` may make reports end in: failure statuses the contract leaves unnamed,
 * `progress` (never ready: for --max-wait) and `ready` (the default). A fixed list, so that a typo
 * (`redy`) is an error with a suggestion, not a sandbox whose reports never become ready. */
export const REPORT_STATUSES = ['failed', 'error', 'canceled', 'expired', 'progress', 'ready'] as const;

export interface Faults {
  latencyMs: number;
  errors: ErrorFault[];
  resetDownload?: BodyFault;
  stallDownload?: BodyFault;
  /** every token stops working after this many uses (then log in again) */
  tokenUses?: number;
  /** reports end in this status instead of `ready` (e.g. `failed`) */
  reportStatus?: string;
  malformed?: Malformed;
}

export function noFaults(): Faults {
  return { latencyMs: 0, errors: [] };
}

/** Decides, request by request, which error fault fires. */
export class FaultPlan {
  private readonly seen = new Map<ErrorFault, number>();
  private draws = 0;
  private readonly bodyFaultsUsed = new Map<BodyFault, number>();

  constructor(readonly faults: Faults, private readonly seed: number) {}

  errorFor(endpoint: EndpointName): ErrorFault | undefined {
    for (const fault of this.faults.errors) {
      if (fault.endpoint !== '*' && fault.endpoint !== endpoint) continue;
      const count = (this.seen.get(fault) ?? 0) + 1;
      this.seen.set(fault, count);
      if (fault.first !== undefined) {
        if (count <= fault.first) return fault;
        continue;
      }
      const rate = fault.rate ?? 1;
      if (unit(hash(this.seed, 0xfa, this.draws++)) < rate) return fault;
    }
    return undefined;
  }

  /** Whether this download should suffer the body fault, counting it if so. */
  takeBodyFault(fault: BodyFault | undefined): BodyFault | undefined {
    if (!fault) return undefined;
    const used = this.bodyFaultsUsed.get(fault) ?? 0;
    if (used >= fault.times) return undefined;
    this.bodyFaultsUsed.set(fault, used + 1);
    return fault;
  }
}

const ERROR_SETTINGS = ['endpoint', 'first', 'rate', 'retry-after', 'html'];

/**
 * Parses the sandbox's `--error` option: `STATUS[,endpoint=NAME][,first=N|,rate=R][,retry-after=S][,html]`,
 * for example `503,endpoint=download,first=2` or `429,rate=0.2,retry-after=1`.
 */
export function parseErrorFault(text: string): ErrorFault {
  const [statusText, ...rest] = text.split(',').map((part) => part.trim());
  const status = Number(statusText);
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new Error(`--error wants an HTTP status from 400 to 599 first, not "${statusText}"`);
  }
  const fault: ErrorFault = { status, endpoint: '*' };
  for (const part of rest) {
    const [key, value = ''] = part.split('=');
    switch (key) {
      case 'endpoint': {
        const name = value.replace(/^\//, '').replace(/-reporting$/, '');
        if (name !== '*' && !(name in ENDPOINTS)) {
          throw new Error(`--error: unknown endpoint "${value}" (one of ${Object.keys(ENDPOINTS).join(', ')})${didYouMean(name, Object.keys(ENDPOINTS))}`);
        }
        fault.endpoint = name as EndpointName | '*';
        break;
      }
      case 'first': fault.first = positiveInteger(value, 'first'); break;
      case 'rate': {
        const rate = Number(value);
        if (!(rate >= 0 && rate <= 1)) throw new Error(`--error: rate is a fraction from 0 to 1, not "${value}"`);
        fault.rate = rate;
        break;
      }
      case 'retry-after': fault.retryAfter = positiveInteger(value, 'retry-after', true); break;
      case 'html': fault.html = true; break;
      default: throw new Error(`--error: unknown setting "${key}" (endpoint, first, rate, retry-after, html)${didYouMean(key ?? '', ERROR_SETTINGS)}`);
    }
  }
  // which requests fail: the first N, or a fraction of all; both at once would silently mean first
  if (fault.first !== undefined && fault.rate !== undefined) {
    throw new Error(`--error: first=${fault.first} and rate=${fault.rate} cannot be combined: give first=N (the first N requests fail) or rate=R (that fraction of them)`);
  }
  return fault;
}

/** Parses `BYTES[,times=N]` for `--reset-download` and `--stall-download`. */
export function parseBodyFault(text: string, option: string): BodyFault {
  const [bytesText = '', ...rest] = text.split(',');
  const fault: BodyFault = { afterBytes: positiveInteger(bytesText, option, true), times: Number.POSITIVE_INFINITY };
  for (const part of rest) {
    const [key, value = ''] = part.split('=');
    if (key !== 'times') throw new Error(`${option}: unknown setting "${key}" (times)`);
    fault.times = positiveInteger(value, 'times');
  }
  return fault;
}

function positiveInteger(value: string, name: string, zeroOk = false): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || (!zeroOk && number === 0)) {
    throw new Error(`${name} must be a whole number${zeroOk ? '' : ' above 0'}, not "${value}"`);
  }
  return number;
}
