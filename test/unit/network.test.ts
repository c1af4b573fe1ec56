import { describe, expect, it } from 'vitest';
import { backoffMs, decideRetry, isRetryableStatus, parseRetryAfter } from '../../src/api/retry.js';
import { redact, registerSecret } from '../../src/api/redact.js';
import { checkBaseUrl, resolveBaseUrl, resolveToken } from '../../src/auth/resolve.js';
import { pollDelayMs } from '../../src/report/poll.js';
import { parseDuration } from '../../src/duration.js';
import { UsageError } from '../../src/errors.js';

describe('retry decisions', () => {
  it('retry 408, 429 and 5xx except 501; not other 4xx', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 501].some(isRetryableStatus)).toBe(false);
  });
  it('stop after --retries retries', () => {
    const random = () => 0.5;
    expect(decideRetry(0, 2, { status: 503 }, random).retry).toBe(true);
    expect(decideRetry(1, 2, { status: 503 }, random).retry).toBe(true);
    expect(decideRetry(2, 2, { status: 503 }, random).retry).toBe(false);
    expect(decideRetry(0, 0, { network: 'connection reset' }, random).retry).toBe(false);
    expect(decideRetry(0, 4, { status: 404 }, random).retry).toBe(false);
  });
  it('honour Retry-After in seconds or as an HTTP date, and refuse absurd waits', () => {
    const now = Date.parse('2026-11-21T11:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(decideRetry(0, 4, { status: 429, retryAfterMs: 3000 }, () => 0).delayMs).toBe(3000);
    expect(decideRetry(0, 4, { status: 429, retryAfterMs: 3_600_000 }, () => 0).retry).toBe(false);
  });
  it('back off exponentially with full jitter: anywhere from 0 to the bound', () => {
    expect(backoffMs(0, () => 0.999)).toBeLessThan(500);
    expect(backoffMs(3, () => 0.999)).toBeLessThan(4000);
    expect(backoffMs(3, () => 0.999)).toBeGreaterThan(3900);
    expect(backoffMs(3, () => 0)).toBe(0);
    expect(backoffMs(20, () => 0.999)).toBeLessThan(30_000);
  });
});

describe('polling', () => {
  it('starts at about 1 s and backs off to 7.5 s, so a 60 s report is seen within 8 s in at most 12 polls', () => {
    for (const random of [() => 0, () => 0.5, () => 0.999]) {
      let elapsed = 0;
      let polls = 0;
      while (elapsed < 60_000) elapsed += pollDelayMs(polls++, random);
      expect(polls + 1).toBeLessThanOrEqual(12); // the first status request is immediate
      expect(elapsed - 60_000).toBeLessThanOrEqual(8000);
    }
    expect(pollDelayMs(0, () => 0.5)).toBe(1000);
    expect(pollDelayMs(1, () => 0.5)).toBe(2000);
    expect(pollDelayMs(50, () => 0.5)).toBe(7500);
    expect(pollDelayMs(7, () => 0.5, 2500)).toBe(2500);
  });
});

describe('token and base URL resolution', () => {
  const profile = { token: 'stored-token', baseUrl: 'https://stored.example.com' };
  it('REPORTING_TOKEN wins over the profile\'s token', () => {
    expect(resolveToken({ REPORTING_TOKEN: 'env-token' }, profile)).toEqual({ token: 'env-token', source: 'REPORTING_TOKEN' });
    expect(resolveToken({}, profile)).toEqual({ token: 'stored-token', source: 'profile' });
    expect(resolveToken({ REPORTING_TOKEN: '  ' }, undefined)).toBeUndefined();
  });
  it('--base-url, then REPORTING_BASE_URL, then the profile\'s; none is a usage error saying how to set one', () => {
    expect(resolveBaseUrl('https://flag.example.com/', { REPORTING_BASE_URL: 'https://env.example.com' }, profile, 'p'))
      .toEqual({ url: 'https://flag.example.com', source: '--base-url' });
    expect(resolveBaseUrl(undefined, { REPORTING_BASE_URL: 'https://env.example.com' }, profile, 'p').source).toBe('REPORTING_BASE_URL');
    expect(resolveBaseUrl(undefined, {}, profile, 'p').source).toBe('profile');
    expect(() => resolveBaseUrl(undefined, {}, undefined, 'staging')).toThrow(/no base URL for profile "staging"/);
  });
  it('allows plain HTTP only to loopback hosts', () => {
    for (const url of ['http://127.0.0.1:8787', 'http://localhost:1', 'http://[::1]:2', 'http://127.5.6.7']) {
      expect(() => checkBaseUrl(url, 'test')).not.toThrow();
    }
    for (const url of ['http://api.example.com', 'http://10.0.0.1', 'http://127.0.0.1.example.com']) {
      expect(() => checkBaseUrl(url, 'test')).toThrow(UsageError);
    }
    expect(() => checkBaseUrl('ftp://x', 'test')).toThrow(/https/);
    expect(() => checkBaseUrl('https://user:pw@x.example', 'test')).toThrow(/credentials/);
  });
});

describe('redaction', () => {
  it('hides registered secrets and token or password fields anywhere in a text', () => {
    registerSecret('0123456789abcdef0123456789abcdef01234567');
    expect(redact('Authorization: 0123456789abcdef0123456789abcdef01234567')).toBe('Authorization: ***');
    expect(redact('{"response":{"token":"fresh"}}')).toBe('{"response":{"token":"***"}}');
    expect(redact('{"auth":{"email":"a@b.c","password":"hunter2"}}')).toBe('{"auth":{"email":"a@b.c","password":"***"}}');
  });
});

describe('durations', () => {
  it('read 500ms, 30s, 5m, 2h and plain seconds', () => {
    expect(['500ms', '30s', '5m', '2h', '12', '1.5'].map((text) => parseDuration(text, '--timeout'))).toEqual([500, 30_000, 300_000, 7_200_000, 12_000, 1500]);
    expect(() => parseDuration('soon', '--timeout')).toThrow(/--timeout wants a duration/);
  });
});
