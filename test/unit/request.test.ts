import { describe, expect, it } from 'vitest';
import type { ReportOptions } from '../../src/commands/report.js';
import { buildReportRequest, requestParams, resolveBreakdowns, resolveMetrics, type ReportFlags } from '../../src/report/request.js';
import { parseOptions } from '../helpers/ctx.js';
import { encodeBody, formEncode } from '../../src/api/encode.js';
import { closest } from '../../src/suggest.js';
import { UsageError } from '../../src/errors.js';

const NOW = Date.parse('2026-11-21T11:00:00Z');

function usageMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return `${(error as UsageError).message} | ${(error as UsageError).hint ?? ''}`;
  }
  throw new Error('expected a usage error');
}

describe('metrics', () => {
  it('are matched case-insensitively and sent in the contract spelling, duplicates once', () => {
    expect(resolveMetrics('buyer', ['Displays', 'CLICKS', 'revenuedollar', 'clicks'])).toEqual(['displays', 'clicks', 'revenueDollar']);
  });
  it('default to every metric of the side; the seller also accepts eyesTrackings', () => {
    expect(resolveMetrics('buyer', [])).toContain('eyesTrackings');
    expect(resolveMetrics('seller', [])).not.toContain('eyesTrackings');
    expect(resolveMetrics('seller', ['eyestrackings'])).toEqual(['eyesTrackings']);
  });
  it('refuses an unknown metric with the valid list and a suggestion', () => {
    const message = usageMessage(() => resolveMetrics('buyer', ['displays', 'clikcs']));
    expect(message).toMatch(/unknown metric "clikcs" for buyer reports; did you mean clicks\?/);
    expect(message).toMatch(/valid metrics: displays, clicks, downloads, leads, landings, revenueEuro, revenueDollar, eyesTrackings$/);
    expect(usageMessage(() => resolveMetrics('seller', ['request']))).toMatch(/did you mean requests\?/);
  });
  it('a metric named by its column (a CSV header: valueDollar): the metric that gives it', () => {
    expect(usageMessage(() => resolveMetrics('buyer', ['clicks', 'valueDollar']))).toBe(
      'unknown metric "valueDollar" for buyer reports: it is the column of the metric revenueDollar | request it as --metrics revenueDollar (its column is named valueDollar)');
  });
  it('refuse a metric no row of the side shows (buyer requests: a seller metric), unless --no-validate', () => {
    expect(usageMessage(() => resolveMetrics('buyer', ['clicks', 'Requests']))).toBe(
      'metric requests gives no column in buyer reports: requests is a seller metric (`reporting run seller ...`) | ' +
      'buyer metrics: displays, clicks, downloads, leads, landings, revenueEuro, revenueDollar, eyesTrackings (--no-validate sends it anyway)',
    );
    expect(resolveMetrics('buyer', ['requests'], false)).toEqual(['requests']);
    expect(resolveMetrics('seller', ['requests'])).toEqual(['requests']);
  });
  it('--no-validate sends values as given', () => {
    expect(resolveMetrics('buyer', ['Impressions', 'clicks'], false)).toEqual(['Impressions', 'clicks']);
  });
});

describe('breakdowns', () => {
  it('are upper-cased', () => {
    expect(resolveBreakdowns('buyer', ['daily', 'country', 'Campaign'])).toEqual(['DAILY', 'COUNTRY', 'CAMPAIGN']);
  });
  it('allow at most one time dimension', () => {
    expect(usageMessage(() => resolveBreakdowns('buyer', ['DAILY', 'hourly']))).toMatch(/DAILY and HOURLY cannot be combined \| use at most one of DAILY, HOURLY, MONTHLY, RANGE/);
  });
  it('refuse a dimension of the other side', () => {
    expect(usageMessage(() => resolveBreakdowns('buyer', ['app']))).toMatch(/APP is only available for seller reports/);
    expect(usageMessage(() => resolveBreakdowns('seller', ['ADUNIT']))).toMatch(/ADUNIT is only available for buyer reports/);
  });
  it('suggest the closest valid value', () => {
    expect(usageMessage(() => resolveBreakdowns('seller', ['contry']))).toMatch(/did you mean COUNTRY\?/);
    expect(usageMessage(() => resolveBreakdowns('buyer', ['devicemodle']))).toMatch(/did you mean DEVICEMODEL\?/);
  });
  it('accept the seller sample\'s APPCOUNTRY', () => {
    expect(resolveBreakdowns('seller', ['appcountry'])).toEqual(['APPCOUNTRY']);
  });
  it('--no-validate keeps the values as given', () => {
    expect(resolveBreakdowns('buyer', ['daily', 'Nope'], false)).toEqual(['daily', 'Nope']);
  });
});

describe('a whole report request', () => {
  const flags = (given: Partial<ReportFlags>): ReportFlags => ({ metrics: [], breakdowns: [], filters: {}, params: [], validate: true, ...given });

  it('becomes the API parameters, filters by their contract names, text filters never split', async () => {
    const { opts, code } = await parseOptions<ReportOptions>(
      'seller', '--since', '2026-11-01', '--until', '2026-11-01', '--metrics', 'displays', '--breakdowns', 'daily',
      '--placement-id', 'p1,p2', '--carrier', 'AT&T, Inc.', '--device-model', 'Galaxy S24, 5G', '--app-id', '9001', '--app-id', '9002',
      '--param', 'timezone=Europe/Paris', '--param', 'x=1', '--param', 'x=2',
    );
    expect(code).toBe(0);
    const params = requestParams(buildReportRequest(opts.side, opts.report, NOW));
    expect(params).toEqual({
      since: 1793487600, until: 1793573999, metrics: 'displays', breakdowns: ['DAILY'],
      s: ['p1', 'p2'], carrier: ['AT&T, Inc.'], deviceModel: ['Galaxy S24, 5G'], appId: ['9001', '9002'],
      timezone: 'Europe/Paris', x: ['1', '2'],
    });
    expect(formEncode(params)).toBe(
      'since=1793487600&until=1793573999&metrics=displays&breakdowns[0]=DAILY&appId[0]=9001&appId[1]=9002' +
      '&s[0]=p1&s[1]=p2&carrier[0]=AT%26T%2C%20Inc.&deviceModel[0]=Galaxy%20S24%2C%205G' +
      '&timezone=Europe%2FParis&x[0]=1&x[1]=2',
    );
  });
  it('splits comma-separated metrics and breakdowns, repeatable', async () => {
    const { opts } = await parseOptions<ReportOptions>('buyer', '--metrics', 'Displays,CLICKS', '--metrics', 'clicks', '--breakdowns', 'daily,country', '--breakdowns', 'Campaign');
    expect(opts.report.metrics).toEqual(['Displays', 'CLICKS', 'clicks']);
    expect(opts.report.breakdowns).toEqual(['daily', 'country', 'Campaign']);
  });
  it('needs --since and --until, in order', () => {
    expect(usageMessage(() => buildReportRequest('buyer', flags({ until: 'today' }), NOW))).toMatch(/--since is required/);
    expect(usageMessage(() => buildReportRequest('buyer', flags({ since: 'today' }), NOW))).toMatch(/--until is required/);
    expect(usageMessage(() => buildReportRequest('buyer', flags({ since: 'today', until: 'yesterday' }), NOW))).toMatch(/--since \(today\) is after --until \(yesterday\)/);
    // given the other way round: the hint swaps them
    expect(usageMessage(() => buildReportRequest('buyer', flags({ since: 'yesterday', until: '-7d' }), NOW))).toBe('--since (yesterday) is after --until (-7d) | swap them: --since -7d --until yesterday');
    expect(usageMessage(() => buildReportRequest('buyer', flags({ since: '2026-11-05', until: '2026-11-04' }), NOW))).toMatch(/\| swap them: --since 2026-11-04 --until 2026-11-05$/);
  });
  it('sends --param names that are also names of Object.prototype as given, in both encodings', () => {
    const request = buildReportRequest('buyer', flags({
      since: '2026-11-01', until: '2026-11-01', params: ['constructor=x', '__proto__=y', 'toString=z', 'toString=w'],
    }), NOW);
    const params = requestParams(request);
    expect(formEncode(params)).toMatch(/&constructor=x&__proto__=y&toString\[0\]=z&toString\[1\]=w$/);
    expect(JSON.parse(encodeBody(params, 'json').body)).toMatchObject({ constructor: 'x', toString: ['z', 'w'] });
    expect(encodeBody(params, 'json').body).toContain('"__proto__":"y"');
  });
  it('refuses a malformed --param', () => {
    expect(usageMessage(() => buildReportRequest('buyer', flags({ since: 'today', until: 'today', params: ['novalue'] }), NOW))).toMatch(/--param wants NAME=VALUE/);
  });
});

describe('suggestions', () => {
  it('offer the closest candidate only when it is close', () => {
    expect(closest('revenu', ['revenueEuro', 'revenueDollar'])).toBe('revenueEuro');
    expect(closest('xyzzy', ['DAILY', 'COUNTRY'])).toBeUndefined();
  });
});
