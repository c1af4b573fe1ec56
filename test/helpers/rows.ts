// Report rows for tests of chunked runs: the sandbox's own data, computed in-process for any
// period, fed through the CLI's scanner as a download would be, and compared by exact value texts.

import type { Summary } from '../../src/api/schemas.js';
import { ReportScanner, type Kind, type RowHandler } from '../../src/export/scanner.js';
import type { Side } from '../../src/report/catalog.js';
import { parseTime } from '../../src/report/time.js';
import { FactSource } from '../../src/sandbox/facts.js';
import { buildRows, summaryOf } from '../../src/sandbox/report.js';
import type { Window } from '../../src/report/windows.js';

const NOW = Date.parse('2026-11-21T11:00:00Z');
const source = new FactSource(42);

export interface Query {
  side: Side;
  metrics: string[];
  breakdowns: string[];
}

/** A period as the CLI sends `--since FROM --until TO` (Paris dates or times). */
export const period = (from: string, to: string): Window => ({ since: parseTime(from, 'since', NOW), until: parseTime(to, 'until', NOW) });

/** The sandbox's answer for one period, as the JSON text it would send. */
export function reportText(query: Query, window: Window): string {
  const full = { ...query, since: window.since, until: window.until, filters: {} };
  return JSON.stringify({ data: buildRows(source, full), summary: summaryOf(full) });
}

export interface Collected {
  keys: string[];
  values: string[];
  kinds: Kind[];
  raw: string;
}

export function collector(): RowHandler & { rows: Collected[] } {
  const rows: Collected[] = [];
  return { rows, row: (keys, values, kinds, raw) => rows.push({ keys: [...keys], values: [...values], kinds: [...kinds], raw }) };
}

/** Feeds a report text through the scanner, in chunks as a download would, into `handler`. */
export function scan(text: string, handler: RowHandler, chunkSize = 997): Summary {
  const scanner = new ReportScanner(handler);
  for (let i = 0; i < text.length; i += chunkSize) scanner.push(text.slice(i, i + chunkSize));
  scanner.end();
  return scanner.members.summary as Summary;
}

/** Metric fields, listed here rather than taken from the code under test. */
export const METRIC_FIELDS = new Set(['requests', 'displays', 'clicks', 'downloads', 'leads', 'landings', 'revenueEuro', 'valueDollar', 'eyesTrackings']);

/** Rows by their non-metric fields; each row as field -> kind and exact value text (not a double). */
export function byKey(rows: Collected[], metrics: Set<string> = METRIC_FIELDS): Map<string, Record<string, string>> {
  const map = new Map<string, Record<string, string>>();
  for (const row of rows) {
    const fields = Object.fromEntries(row.keys.map((key, i) => [key, `${row.kinds[i]}:${row.values[i]}`]));
    const key = JSON.stringify(row.keys.filter((k) => !metrics.has(k)).sort().map((k) => [k, fields[k]]));
    if (map.has(key)) throw new Error(`two rows for one key: ${key}`);
    map.set(key, fields);
  }
  return map;
}
