// A report request checked as the API would: every problem is a 400 naming what to send instead.

import {
  SIDE_DIMENSIONS, SIDES, dimensionsOf, isTimeDimension, metricsOf, DEFAULT_METRICS, TIME_DIMENSIONS, type Side,
} from '../report/catalog.js';
import { HttpError } from './http.js';
import { listOf, type ReceivedParams } from './params.js';
import { isFilterParam, type ReportQuery } from './report.js';

const MAX_PERIOD_DAYS = 1100;
/** 2200-01-01: beyond it a timestamp is almost surely in milliseconds */
const MAX_TIMESTAMP = 7_258_118_400;

/** Validates a report request as the API would, into a query; every problem is a 400. */
export function validate(side: Side, params: ReceivedParams): ReportQuery {
  const since = timestamp(params, 'since');
  const until = timestamp(params, 'until');
  if (since > until) throw new HttpError(400, 'INVALID_PARAMETER', `since (${since}) is after until (${until})`);
  if (until - since > MAX_PERIOD_DAYS * 86400) {
    throw new HttpError(400, 'INVALID_PARAMETER', `the period is longer than the sandbox's limit of ${MAX_PERIOD_DAYS} days`);
  }

  const accepted = metricsOf(side);
  const metricValues = listOf(params, 'metrics');
  const metrics = metricValues === undefined
    ? [...DEFAULT_METRICS[side]]
    : metricValues.flatMap((value) => value.split(',')).map((value) => value.trim()).filter(Boolean);
  for (const metric of metrics) {
    if (!accepted.includes(metric)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `unknown metric "${metric}" for ${side} reports; valid: ${accepted.join(', ')}`);
    }
  }

  const breakdowns = [...new Set(listOf(params, 'breakdowns') ?? [])];
  const valid = dimensionsOf(side);
  const other = SIDES.find((candidate) => candidate !== side) as Side;
  for (const breakdown of breakdowns) {
    if (SIDE_DIMENSIONS[other].includes(breakdown)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `breakdown ${breakdown} is only available for ${other} reports`);
    }
    if (!valid.includes(breakdown)) {
      throw new HttpError(400, 'INVALID_PARAMETER', `unknown breakdown "${breakdown}"; valid: ${valid.join(', ')}`);
    }
  }
  const times = breakdowns.filter(isTimeDimension);
  if (times.length > 1) {
    throw new HttpError(400, 'INVALID_PARAMETER', `only one of ${TIME_DIMENSIONS.join(', ')} may be used; got ${times.join(' and ')}`);
  }

  const filters: Record<string, string[]> = {};
  for (const name of Object.keys(params)) {
    if (!isFilterParam(name)) continue;
    const values = listOf(params, name);
    if (values) filters[name] = values;
  }
  return { side, since, until, metrics: [...new Set(metrics)], breakdowns, filters };
}

function timestamp(params: ReceivedParams, name: string): number {
  const value = params[name];
  if (value === undefined) throw new HttpError(400, 'MISSING_PARAMETER', `${name} is required: a Unix timestamp in seconds`);
  const text = typeof value === 'string' ? value.trim() : '';
  if (!/^\d+$/.test(text)) {
    throw new HttpError(400, 'INVALID_PARAMETER', `${name} must be a Unix timestamp in seconds (an integer), not ${JSON.stringify(value)}`);
  }
  const seconds = Number(text);
  if (seconds > MAX_TIMESTAMP) {
    throw new HttpError(400, 'INVALID_PARAMETER', `${name}=${text} is after the year 2200: is it in milliseconds? Send seconds`);
  }
  return seconds;
}
