import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { call, fetchReport } from '../helpers/http.js';

const NOV_1 = 1793487600; // 2026-11-01T00:00:00+01:00
const NOV_1_END = 1793573999; // 2026-11-01T23:59:59+01:00

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 600 });
});
afterAll(() => sandbox.close());

const errorOf = (answer: { json: any }) => answer.json?.response as { error_id: string; error: string };

describe('POST /auth-reporting', () => {
  it('answers a 40-hex token for the JSON body {"auth":{"email","password"}}, and the token works', async () => {
    const answer = await call(sandbox, '/auth-reporting', { token: null, json: { auth: { email: sandbox.email, password: sandbox.password } } });
    expect(answer.status).toBe(200);
    expect(answer.json.response.status).toBe('OK');
    expect(answer.json.response.token).toMatch(/^[0-9a-f]{40}$/);
    const campaigns = await call(sandbox, '/campaigns', { token: answer.json.response.token });
    expect(campaigns.status).toBe(200);
  });

  it('says the platform\'s message when the email or password is missing', async () => {
    const answer = await call(sandbox, '/auth-reporting', { token: null, json: { auth: { email: sandbox.email } } });
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toEqual({ error_id: 'SYSTEM', error: 'Username or password not set in request' });
  });

  it('refuses a wrong password with 401', async () => {
    const answer = await call(sandbox, '/auth-reporting', { token: null, json: { auth: { email: sandbox.email, password: 'nope' } } });
    expect(answer.status).toBe(401);
    expect(errorOf(answer).error_id).toBe('NOAUTH');
    expect(answer.text).not.toContain('nope');
  });
});

describe('authorization', () => {
  it.each([
    ['no header', null],
    ['an unknown token', 'f'.repeat(40)],
    ['a scheme word before the token', 'Bearer TOKEN'],
  ])('answers 401 NOAUTH for %s', async (_label, header) => {
    const token = header === 'Bearer TOKEN' ? `Bearer ${sandbox.token}` : header;
    const answer = await call(sandbox, '/campaigns', { token });
    expect(answer.status).toBe(401);
    expect(errorOf(answer).error_id).toBe('NOAUTH');
  });
});

describe('the report cycle', () => {
  it('stays in progress for the delay, then is ready; downloads are refused before', async () => {
    const submitted = await call(sandbox, '/buyer-reporting', { form: { since: NOV_1, until: NOV_1_END, metrics: 'displays' } });
    expect(submitted.status).toBe(200);
    expect(submitted.json.response.status).toBe('OK');
    const id = submitted.json.response.report_id;
    expect(typeof id).toBe('string');

    const early = await call(sandbox, '/status-reporting', { form: { id } });
    expect(early.json.response).toEqual({ status: 'progress', message: 'progress', report_id: id });
    const tooSoon = await call(sandbox, '/download-reporting', { form: { id } });
    expect(tooSoon.status).toBe(400);
    expect(errorOf(tooSoon).error_id).toBe('NOT_READY');

    sandbox.advance(650); // the sandbox's clock, moved past the ready delay
    const ready = await call(sandbox, '/status-reporting', { form: { id } });
    expect(ready.json.response).toEqual({ status: 'ready', message: 'ready', report_id: id });
    const downloaded = await call(sandbox, '/download-reporting', { form: { id } });
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers.get('content-type')).toContain('application/json');
    expect(Array.isArray(downloaded.json.data)).toBe(true);
    expect(downloaded.json.summary).toEqual({
      since: '2026-11-01T00:00:00+01:00',
      until: '2026-11-01T23:59:59+01:00',
      breakdowns: [],
      timezone: 'europe/paris',
    });
  });

  it('serves the seller endpoint the same way', async () => {
    const report = await fetchReport(sandbox, 'seller', { since: NOV_1, until: NOV_1_END, breakdowns: ['APP'] });
    expect(report.data.length).toBeGreaterThan(1);
    expect(report.summary.breakdowns).toEqual(['APP']);
  });

  it('answers 404 for an unknown report id, on status and download', async () => {
    for (const path of ['/status-reporting', '/download-reporting']) {
      const answer = await call(sandbox, path, { form: { id: 'does-not-exist' } });
      expect(answer.status).toBe(404);
      expect(errorOf(answer).error).toContain('does-not-exist');
    }
  });

  it('answers 400 when the id is missing', async () => {
    const answer = await call(sandbox, '/status-reporting', { form: {} });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).error).toMatch(/id is required/);
  });
});

describe('GET /campaigns', () => {
  it('lists campaigns with the contract\'s fields, date format and ad units', async () => {
    const answer = await call(sandbox, '/campaigns');
    expect(answer.status).toBe(200);
    expect(answer.json.length).toBeGreaterThan(10);
    for (const campaign of answer.json) {
      expect(Object.keys(campaign).sort()).toEqual(
        ['adunits', 'advertiserId', 'advertiserName', 'campaignEndDate', 'campaignId', 'campaignName', 'campaignStartDate'],
      );
      expect(campaign.campaignStartDate).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      expect(campaign.campaignEndDate >= campaign.campaignStartDate).toBe(true);
      expect(campaign.adunits.length).toBeGreaterThan(0);
      for (const unit of campaign.adunits) expect(Object.keys(unit).sort()).toEqual(['adunitId', 'adunitName']);
    }
  });
});

describe('bad requests get the error envelope with a 400', () => {
  const cases: [string, 'buyer' | 'seller', Record<string, any>, RegExp][] = [
    ['missing since', 'buyer', { until: NOV_1_END }, /since is required/],
    ['missing until', 'buyer', { since: NOV_1 }, /until is required/],
    ['a non-integer since', 'buyer', { since: '2026-11-01', until: NOV_1_END }, /since must be a Unix timestamp/],
    ['a fractional until', 'buyer', { since: NOV_1, until: '1793573999.5' }, /until must be a Unix timestamp/],
    ['a millisecond timestamp', 'buyer', { since: NOV_1 * 1000, until: NOV_1_END * 1000 }, /milliseconds/],
    ['since after until', 'buyer', { since: NOV_1_END, until: NOV_1 }, /since .* is after until/],
    ['an unknown metric', 'buyer', { since: NOV_1, until: NOV_1_END, metrics: 'displays,impressions' }, /unknown metric "impressions"/],
    ['a metric in the wrong case', 'buyer', { since: NOV_1, until: NOV_1_END, metrics: 'Displays' }, /unknown metric "Displays"/],
    ['an unknown dimension', 'seller', { since: NOV_1, until: NOV_1_END, breakdowns: ['CONTRY'] }, /unknown breakdown "CONTRY"/],
    ['two time dimensions', 'buyer', { since: NOV_1, until: NOV_1_END, breakdowns: ['DAILY', 'MONTHLY'] }, /only one of DAILY, HOURLY, MONTHLY, RANGE/],
    ['a seller dimension on a buyer report', 'buyer', { since: NOV_1, until: NOV_1_END, breakdowns: ['APP'] }, /APP is only available for seller/],
    ['a buyer dimension on a seller report', 'seller', { since: NOV_1, until: NOV_1_END, breakdowns: ['CAMPAIGN'] }, /CAMPAIGN is only available for buyer/],
  ];
  it.each(cases)('%s', async (_label, side, form, message) => {
    const answer = await call(sandbox, `/${side}-reporting`, { form });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).error_id).toMatch(/^[A-Z_]+$/);
    expect(errorOf(answer).error).toMatch(message);
  });

  it('rejects a JSON body that is not valid JSON', async () => {
    const answer = await call(sandbox, '/buyer-reporting', { raw: { body: '{"since":', type: 'application/json' } });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).error).toMatch(/not valid JSON/);
  });

  it('answers 404 for an unknown path and 405 for the wrong method', async () => {
    expect((await call(sandbox, '/nope')).status).toBe(404);
    const wrong = await call(sandbox, '/buyer-reporting', { method: 'GET' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });
});
