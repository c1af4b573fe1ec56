// Merging the rows of a chunked run's windows into one output (issue 13).
//
// Rows arrive as the scanner hands them over, `row(keys, values, kinds, raw)`, and leave in the
// same shape, so a merged output goes through the same CSV / NDJSON writers as a single report.
//
// - With DAILY or HOURLY the windows never cut a bucket (windows.ts checks the chunk, and
//   bisection halves on whole days or hours), so the merge is the windows' rows one after the
//   other, windows in chronological order, each window's rows in the server's order: passed
//   straight through, nothing kept.
// - With MONTHLY likewise, except for the pieces of a month window that bisection split: their
//   rows are summed per month (the pieces all carry the same `date`), and the month's rows leave
//   when its last piece is in. Memory: the distinct rows of one month.
// - With RANGE or no time breakdown every window answers for its own period: rows with the same
//   dimension values are summed across windows, metric fields added exactly (decimal.ts). Memory:
//   one row per distinct dimension key, whatever the number of windows.
//
// Order of summed rows: first seen. A row's place is where its key first appeared, windows taken in
// chronological order and rows in the order the server sent them; so the output is deterministic
// for a deterministic server, and with one window it is exactly the server's order.

import { UnexpectedResponseError, UsageError } from '../errors.js';
import { Kind, sameKeys, type RowHandler } from '../export/scanner.js';
import { ROW_FIELDS, SIDES, metricField, metricsOf, type Side, type TimeDimension } from '../report/catalog.js';
import type { Summary } from '../api/schemas.js';
import { DecimalSum } from './decimal.js';
import { describeWindow, timeBreakdown, type Window } from '../report/windows.js';

/** Every metric the contract lists: counts and amounts, all additive. */
const ADDITIVE_METRICS = new Set(SIDES.flatMap((side) => metricsOf(side)));

/** Row fields that hold an additive metric: the contract's number fields, and each metric's field. */
const ADDITIVE_FIELDS: ReadonlySet<string> = new Set([
  ...SIDES.flatMap((side) => ROW_FIELDS[side].filter((field) => field.type === 'number').map((field) => field.name)),
  ...[...ADDITIVE_METRICS].flatMap((metric) => [metric, metricField(metric)]),
]);

export type MergeMode = 'concat' | 'sum';

export interface MergePlan {
  /** concat: windows one after the other; sum: rows with the same dimensions added up */
  mode: MergeMode;
  time?: TimeDimension;
}

/**
 * How a chunked request's windows merge, or a usage error before any request when they cannot:
 * summing (RANGE, no time breakdown, or the split pieces of a MONTHLY window) needs every metric to
 * be one the CLI knows to be additive, which `--no-validate` values are not.
 */
export function mergePlan(side: Side, metrics: readonly string[], breakdowns: readonly string[], options: { split: boolean }): MergePlan {
  const time = timeBreakdown(breakdowns);
  const mode: MergeMode = time === undefined || time === 'RANGE' ? 'sum' : 'concat';
  const sums = mode === 'sum' || (time === 'MONTHLY' && options.split);
  const unknown = metrics.filter((metric) => !ADDITIVE_METRICS.has(metric));
  if (sums && unknown.length > 0) {
    const what = unknown.map((metric) => `"${metric}"`).join(', ');
    throw new UsageError(
      `cannot merge windows: ${what} ${unknown.length > 1 ? 'are metrics' : 'is a metric'} this tool does not know to be additive, so windows cannot be summed`,
      mode === 'sum'
        ? `run without --chunk, or ask only for ${metricsOf(side).join(', ')}`
        : 'add --no-split (a MONTHLY window split in pieces is summed back), or run without --chunk',
    );
  }
  return { mode, ...(time ? { time } : {}) };
}

interface Layout {
  /** indices of the dimension fields, by field name, so that field order does not matter */
  dimensions: number[];
  /** indices of the additive fields */
  metrics: number[];
  /** indices of fields the contract does not name: dimensions, unless they are numbers */
  unknown: number[];
  /** the dimension names, sorted: the first part of every key of this layout */
  prefix: string;
}

const KNOWN_DIMENSIONS = new Set(['date', ...SIDES.flatMap((side) => ROW_FIELDS[side].filter((f) => f.type !== 'number').map((f) => f.name))]);

function layoutOf(keys: readonly string[]): Layout {
  const dimensions: number[] = [];
  const metrics: number[] = [];
  const unknown: number[] = [];
  keys.forEach((key, i) => {
    if (ADDITIVE_FIELDS.has(key)) metrics.push(i);
    else {
      dimensions.push(i);
      if (!KNOWN_DIMENSIONS.has(key)) unknown.push(i);
    }
  });
  dimensions.sort((a, b) => ((keys[a] as string) < (keys[b] as string) ? -1 : 1));
  return { dimensions, metrics, unknown, prefix: JSON.stringify(dimensions.map((i) => keys[i])) };
}

interface Group {
  keys: string[];
  values: string[];
  kinds: Kind[];
  /** per field of `keys`: the running sum of a metric field */
  sums: (DecimalSum | undefined)[];
}

/** The JSON text of one field value, as the scanner described it. */
function jsonValue(value: string, kind: Kind): string {
  switch (kind) {
    case Kind.String: return JSON.stringify(value);
    case Kind.Null: return 'null';
    default: return value; // numbers as sent or summed, booleans, nested JSON: already JSON text
  }
}

/** A row as compact JSON, as NDJSON and JSON outputs write it. */
export function rowJson(keys: readonly string[], values: readonly string[], kinds: readonly Kind[]): string {
  let text = '{';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) text += ',';
    text += `${JSON.stringify(keys[i])}:${jsonValue(values[i] as string, kinds[i] as Kind)}`;
  }
  return `${text}}`;
}

/** Rows summed by their dimension values; memory: one entry per distinct key. It keeps the first
 * row's `values` array, so, as with the scanner, each row must bring its own. */
export class RowSummer implements RowHandler {
  private readonly groups = new Map<string, Group>();
  private layoutKeys: string[] = [];
  private layout: Layout = { dimensions: [], metrics: [], unknown: [], prefix: '[]' };
  /** rows added, for messages and tests */
  rows = 0;

  get size(): number {
    return this.groups.size;
  }

  row(keys: string[], values: string[], kinds: Kind[]): void {
    if (!sameKeys(keys, this.layoutKeys)) {
      this.layoutKeys = keys; // never changed once handed on (RowHandler): compared by identity next
      this.layout = layoutOf(keys);
    }
    const { dimensions, metrics, unknown, prefix } = this.layout;
    for (const i of unknown) {
      if (kinds[i] === Kind.Number) {
        throw new UnexpectedResponseError(
          `cannot merge windows: rows have a number field "${keys[i]}" that this tool does not know to be additive`,
        );
      }
    }
    // the sorted names, then the values as JSON (null apart from "", a number apart from a text):
    // unambiguous whatever a value holds, and one native call (measured 2x faster than concatenating)
    const parts = new Array<string | null | [Kind, string]>(dimensions.length);
    for (let j = 0; j < dimensions.length; j++) {
      const i = dimensions[j] as number;
      const kind = kinds[i] as Kind;
      parts[j] = kind === Kind.String ? (values[i] as string) : kind === Kind.Null ? null : [kind, values[i] as string];
    }
    const key = prefix + JSON.stringify(parts);
    this.rows++;
    let group = this.groups.get(key);
    if (!group) {
      group = { keys: this.layoutKeys, values, kinds: [...kinds], sums: new Array<DecimalSum | undefined>(keys.length) };
      this.groups.set(key, group);
    }
    for (const i of metrics) this.addMetric(group, i, keys[i] as string, values[i] as string, kinds[i] as Kind);
  }

  private addMetric(group: Group, index: number, field: string, value: string, kind: Kind): void {
    if (kind === Kind.Null) return; // nothing to add; a field only ever null stays null
    if (kind !== Kind.Number) {
      throw new UnexpectedResponseError(`cannot merge windows: the metric field "${field}" holds ${kind === Kind.String ? `the text ${JSON.stringify(value)}` : 'a value that is not a number'}`);
    }
    // the common case: the group's fields are laid out as this row's
    let slot = group.keys === this.layoutKeys ? index : group.keys.indexOf(field);
    if (slot < 0) {
      // a metric field this group's first row did not have: the group grows a field
      group.keys = [...group.keys, field];
      group.values = [...group.values, ''];
      group.kinds.push(Kind.Null);
      slot = group.keys.length - 1;
    }
    let sum = group.sums[slot];
    if (!sum) {
      sum = new DecimalSum();
      group.sums[slot] = sum;
    }
    sum.add(value);
  }

  /** Hands every group to `out` in first-seen order, and forgets them. */
  flush(out: RowHandler): number {
    let count = 0;
    for (const group of this.groups.values()) {
      const values = [...group.values];
      const kinds = group.kinds;
      group.sums.forEach((sum, i) => {
        if (sum && sum.size > 0) {
          values[i] = sum.toString();
          kinds[i] = Kind.Number;
        }
      });
      out.row(group.keys, values, kinds, rowJson(group.keys, values, kinds));
      count++;
    }
    this.groups.clear();
    return count;
  }
}

/**
 * The merge of a run's windows into one row stream. Feed windows in chronological order (the pool's
 * ordered delivery): `begin(window, origin)` gives the handler for that window's rows, `end` closes
 * the window, `finish` after the last window emits what was summed.
 */
export class WindowMerger {
  private readonly summer = new RowSummer();
  /** the pieces of a split MONTHLY window being summed back into their month */
  private month?: { origin: Window; summer: RowSummer };
  private first?: Summary;
  private last?: Summary;
  private lastWindow?: Window;

  constructor(private readonly plan: MergePlan, private readonly out: RowHandler) {}

  begin(window: Window, origin: Window = window): RowHandler {
    if (this.lastWindow && window.since <= this.lastWindow.until) {
      throw new Error(`windows out of order: ${describeWindow(window)} after ${describeWindow(this.lastWindow)}`);
    }
    this.lastWindow = window;
    if (this.plan.mode === 'sum') return this.summer;
    const piece = window.since !== origin.since || window.until !== origin.until;
    if (this.plan.time === 'MONTHLY' && piece) {
      if (this.month && this.month.origin.since !== origin.since) this.flushMonth();
      this.month ??= { origin, summer: new RowSummer() };
      return this.month.summer;
    }
    this.flushMonth();
    return this.out;
  }

  /** The window's rows are all in; its summary, when the report had one, tells the merged period. */
  end(window: Window, summary?: Summary): void {
    if (summary) {
      this.first ??= summary;
      this.last = summary;
    }
    if (this.month && window.until === this.month.origin.until) this.flushMonth();
  }

  private flushMonth(): void {
    this.month?.summer.flush(this.out);
    this.month = undefined;
  }

  /** Emits the summed rows (RANGE, no time breakdown); returns how many. */
  finish(): number {
    this.flushMonth();
    return this.plan.mode === 'sum' ? this.summer.flush(this.out) : 0;
  }

  /**
   * The merged report's summary: the first window's, with the last window's `until`, so that it
   * spans the whole period as one report's would (its since/until are derived from the request,
   * which the first and last windows share at either end).
   */
  summary(): Summary | undefined {
    if (!this.first) return undefined;
    return { ...this.first, until: this.last?.until ?? this.first.until };
  }
}
