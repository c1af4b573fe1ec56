// What a report request is: the report options of `buyer`, `seller` and `run`, validated into the
// parameters the API receives. A usage error here means no request is made at all.

import type { Params } from '../api/encode.js';
import { UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import {
  DEFAULT_METRICS, FILTERS, SIDE_DIMENSIONS, TIME_DIMENSIONS, dimensionsOf, isTimeDimension, metricField, metricsOf,
  metricsWithField, type Side,
} from './catalog.js';
import { parseTime } from './time.js';

/** The report flags of `buyer`, `seller` and `run`, parsed at the edge (lists already split). */
export interface ReportFlags {
  since?: string;
  until?: string;
  metrics: string[];
  breakdowns: string[];
  /** request parameter (contract name) -> values given, for every filter flag used */
  filters: Record<string, string[]>;
  /** --param NAME=VALUE, as typed */
  params: string[];
  /** false with --no-validate */
  validate: boolean;
}

export interface ReportRequest {
  side: Side;
  since: number;
  until: number;
  metrics: string[];
  breakdowns: string[];
  /** request parameter -> values */
  filters: Record<string, string[]>;
  /** --param NAME=VALUE, sent as given */
  extra: Record<string, string | string[]>;
}

export function resolveMetrics(side: Side, values: readonly string[], validate = true): string[] {
  if (values.length === 0) return [...DEFAULT_METRICS[side]];
  if (!validate) return [...new Set(values)];
  const valid = metricsWithField(side);
  const known = metricsOf(side);
  const resolved = values.map((value) => {
    const lower = value.toLowerCase();
    const match = known.find((metric) => metric.toLowerCase() === lower);
    // a metric named by its column (the row field it arrives as: revenueDollar as valueDollar)
    const byField = known.find((metric) => metricField(metric).toLowerCase() === lower && metric.toLowerCase() !== lower);
    if (!match && byField) {
      throw new UsageError(`unknown metric "${value}" for ${side} reports: it is the column of the metric ${byField}`, `request it as --metrics ${byField} (its column is named ${metricField(byField)})`).about('--metrics');
    }
    if (!match) {
      throw new UsageError(
        `unknown metric "${value}" for ${side} reports${didYouMean(value, valid)}`,
        `valid metrics: ${valid.join(', ')}`,
      ).about('--metrics');
    }
    if (!valid.includes(match)) {
      // accepted by the API, but no row of this side has its field: the column would be missing
      const other = side === 'buyer' ? 'seller' : 'buyer';
      const where = metricsWithField(other).includes(match) ? `${match} is a ${other} metric (\`reporting run ${other} ...\`)` : `the ${side} row has no "${metricField(match)}" field`;
      throw new UsageError(
        `metric ${match} gives no column in ${side} reports: ${where}`,
        `${side} metrics: ${valid.join(', ')} (--no-validate sends it anyway)`,
      ).about('--metrics');
    }
    return match;
  });
  return [...new Set(resolved)];
}

export function resolveBreakdowns(side: Side, values: readonly string[], validate = true): string[] {
  if (!validate) return [...new Set(values)];
  const valid = dimensionsOf(side);
  const other = side === 'buyer' ? 'seller' : 'buyer';
  const resolved = [...new Set(values.map((value) => value.toUpperCase()))];
  for (const value of resolved) {
    if (SIDE_DIMENSIONS[other].includes(value)) {
      throw new UsageError(`breakdown ${value} is only available for ${other} reports`, `${side} breakdowns: ${valid.join(', ')}`).about('--breakdowns');
    }
    if (!valid.includes(value)) {
      throw new UsageError(`unknown breakdown "${value}" for ${side} reports${didYouMean(value, valid)}`, `valid breakdowns: ${valid.join(', ')}`).about('--breakdowns');
    }
  }
  const times = resolved.filter(isTimeDimension);
  if (times.length > 1) {
    throw new UsageError(`breakdowns ${times.join(' and ')} cannot be combined`, `use at most one of ${TIME_DIMENSIONS.join(', ')}`).about('--breakdowns');
  }
  return resolved;
}

function resolveExtra(params: readonly string[]): Record<string, string | string[]> {
  // no prototype: a name such as `constructor` or `__proto__` is a parameter like any other
  const extra: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const param of params) {
    const at = param.indexOf('=');
    if (at <= 0) throw new UsageError(`--param wants NAME=VALUE, not "${param}"`, 'for example --param timezone=Europe/Paris').about('--param');
    const name = param.slice(0, at);
    const value = param.slice(at + 1);
    const existing = extra[name];
    extra[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return extra;
}

export function buildReportRequest(side: Side, options: ReportFlags, nowMs: number): ReportRequest {
  if (options.since === undefined) throw new UsageError('--since is required', 'for example --since yesterday --until yesterday').about('--since');
  // a calendar word names a period: the same word ends it (--since last-month --until last-month)
  const period = options.since !== undefined && /^(this|last)-(week|month)$|^month-to-date$/.test(options.since.trim());
  if (options.until === undefined) throw new UsageError('--until is required', period ? `for example --until ${options.since?.trim()} (the end of that period)` : 'for example --until today (a date means its last second, 23:59:59)').about('--until');
  const since = parseTime(options.since, 'since', nowMs);
  const until = parseTime(options.until, 'until', nowMs);
  if (since > until) {
    // the two given the other way round make a period: say so (`--since yesterday --until -7d`)
    const swapped = (() => {
      try {
        return parseTime(options.until as string, 'since', nowMs) <= parseTime(options.since as string, 'until', nowMs);
      } catch {
        return false;
      }
    })();
    throw new UsageError(
      `--since (${options.since}) is after --until (${options.until})`,
      swapped ? `swap them: --since ${options.until} --until ${options.since}` : 'a date as --until means its last second, so --since D --until D is the day D',
    ).about('--since');
  }
  const filters: Record<string, string[]> = {};
  for (const filter of FILTERS) {
    const given = options.filters[filter.param] ?? [];
    if (given.length === 0) continue;
    if (!filter.sides.includes(side)) {
      throw new UsageError(`--${filter.option} is a ${filter.sides.join('/')} filter, not for ${side} reports`).about(`--${filter.option}`);
    }
    filters[filter.param] = given;
  }
  return {
    side,
    since,
    until,
    metrics: resolveMetrics(side, options.metrics, options.validate),
    breakdowns: resolveBreakdowns(side, options.breakdowns, options.validate),
    filters,
    extra: resolveExtra(options.params),
  };
}

/** The request's parameters, named as the API names them. `--param` wins over a modelled one. */
export function requestParams(request: ReportRequest): Params {
  // no prototype, so that Object.assign copies `__proto__` from --param as a plain name
  const params: Params = Object.assign(Object.create(null) as Params, {
    since: request.since,
    until: request.until,
    metrics: request.metrics.join(','),
  });
  if (request.breakdowns.length > 0) params.breakdowns = request.breakdowns;
  Object.assign(params, request.filters, request.extra);
  return params;
}
