import { describe, expect, it } from 'vitest';
import { backoffFloorMs, backoffMs, decideRetry, isRetryableStatus, parseRetryAfter } from '../../src/api/retry.js';
import { Secrets } from '../../src/api/redact.js';
import { loopbackOnly, NotLoopbackError, readCapped } from '../../src/api/http.js';
import { describeNetworkError } from '../../src/network.js';
import { stallGuarded } from '../../src/export/export.js';
import { errors } from 'undici';
import type { Socket } from 'node:net';
import { checkBaseUrl, environmentLogin, environmentSecrets, isLoopbackAddress, profileVariable, resolveBaseUrl, resolveToken } from '../../src/auth/resolve.js';
import { pollDelayMs } from '../../src/report/poll.js';
import { formatDuration, parseDuration } from '../../src/duration.js';
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
  it('accept only delta-seconds and the three HTTP-date forms as Retry-After', () => {
    const now = Date.parse('2026-11-21T11:00:00Z');
    expect(parseRetryAfter('Saturday, 21-Nov-26 11:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Sat Nov 21 11:00:07 2026', now)).toBe(7000);
    for (const lenient of ['1.5', 'soon 5', '-3', '5s', '2026-11-21T11:00:10Z', 'Sat, 21 Nov 2026 11:00:10 +0100', '0x10']) {
      expect(parseRetryAfter(lenient, now), lenient).toBeUndefined();
    }
  });
  it('never retry sooner than the backoff floor, whatever Retry-After says', () => {
    const now = Date.parse('2026-11-21T11:00:00Z');
    for (const header of ['0', 'Fri, 20 Nov 2026 11:00:00 GMT']) {
      const waits = [0, 1, 2, 3].map((attempt) => decideRetry(attempt, 4, { status: 503, retryAfterMs: parseRetryAfter(header, now) }, () => 0).delayMs);
      expect(waits).toEqual([250, 500, 1000, 2000]);
    }
    expect(backoffFloorMs(30)).toBe(15_000);
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

describe('durations as messages say them', () => {
  it('decides each unit on the rounded value: 999.6 ms is 1.0s, 59.6 s 1m, 119.6 s 2m, never 1m60s', () => {
    expect([450, 999.6, 9_949, 9_960, 59_400, 59_600, 60_000, 90_000, 119_600, 119_987, 125_400, 3_599_600, 3_600_000, 5_400_000, 86_400_000, 172_800_000, 366 * 86_400_000].map(formatDuration))
      .toEqual(['450ms', '1.0s', '9.9s', '10s', '59s', '1m', '1m', '1m30s', '2m', '2m', '2m05s', '1h', '1h', '90m', '24h', '2d', '366d']);
  });
});

describe('token and base URL resolution', () => {
  const profile = { token: 'stored-token', baseUrl: 'https://stored.example.com' };
  it('REPORTING_TOKEN wins over the profile\'s token', () => {
    expect(resolveToken({ REPORTING_TOKEN: 'env-token' }, profile)).toEqual({ token: 'env-token', source: 'REPORTING_TOKEN' });
    expect(resolveToken({}, profile)).toEqual({ token: 'stored-token', source: 'profile' });
    expect(resolveToken({ REPORTING_TOKEN: '  ' }, undefined)).toBeUndefined();
  });
  it("a profile's own variable wins over REPORTING_TOKEN and the store; its name is the profile's upper-cased, other characters _", () => {
    expect(profileVariable('REPORTING_TOKEN', 'acme-fr.eu')).toBe('REPORTING_TOKEN_ACME_FR_EU');
    expect(profileVariable('REPORTING_PASSWORD', 'default')).toBe('REPORTING_PASSWORD_DEFAULT');
    const env = { REPORTING_TOKEN: 'generic', REPORTING_TOKEN_ACME_FR: 'own' };
    expect(resolveToken(env, profile, 'acme-fr')).toEqual({ token: 'own', source: 'REPORTING_TOKEN_ACME_FR' });
    expect(resolveToken(env, profile, 'globex')).toEqual({ token: 'generic', source: 'REPORTING_TOKEN' });
    expect(resolveToken({ REPORTING_TOKEN_ACME_FR: ' ' }, profile, 'acme-fr')).toEqual({ token: 'stored-token', source: 'profile' });
    // a login needs both halves of one pair: the profile's own, else the generic one
    expect(environmentLogin({ REPORTING_EMAIL_ACME: 'a@x', REPORTING_PASSWORD: 'p' }, 'acme')).toBeUndefined();
    expect(environmentLogin({ REPORTING_EMAIL_ACME: 'a@x', REPORTING_PASSWORD_ACME: 'pa', REPORTING_EMAIL: 'g@x', REPORTING_PASSWORD: 'pg' }, 'acme')).toEqual({ email: 'a@x', password: 'pa' });
    expect(environmentLogin({ REPORTING_EMAIL: 'g@x', REPORTING_PASSWORD: 'pg' }, 'acme')).toEqual({ email: 'g@x', password: 'pg' });
    expect(environmentSecrets({ REPORTING_TOKEN_ACME: ' t1 ', REPORTING_PASSWORD: 'p', REPORTING_TOKENS: 'x', REPORTING_EMAIL: 'e', OTHER: 'o' }).sort()).toEqual([' t1 ', 'p', 'p', 't1'].sort());
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
  });
  it('a host without its scheme: the hint gives the URL with it (http for loopback, else https), user info never echoed', () => {
    const refusal = (text: string) => {
      try {
        checkBaseUrl(text, '--base-url');
      } catch (error) {
        return `${(error as UsageError).message} | ${(error as UsageError).hint}`;
      }
      return 'accepted';
    };
    expect(refusal('127.0.0.1:8787')).toBe('the base URL from --base-url is not a URL: "127.0.0.1:8787" | give its scheme: http://127.0.0.1:8787');
    expect(refusal('localhost:8787/v1')).toMatch(/\| give its scheme: http:\/\/localhost:8787\/v1$/);
    expect(refusal('api.example.com/v1')).toMatch(/\| give its scheme: https:\/\/api\.example\.com\/v1$/);
    expect(refusal('user:hunter2@api.example.com')).not.toContain('hunter2');
    expect(refusal('not a url at all')).toMatch(/\| for example https:\/\/api\.example\.com\/v1$/);
  });
  it('refuse a base URL with user info, never echoing it', () => {
    for (const url of ['https://user:hunter2@x.example', 'http://hunter2@127.0.0.1:1', 'https://user:hunter2@[bad']) {
      let message = '';
      try {
        checkBaseUrl(url, 'test');
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, url).toMatch(/user name or password|not a URL/);
      expect(message).not.toContain('hunter2');
    }
  });
  it('tell loopback addresses from others, names never counting', () => {
    expect(['127.0.0.1', '127.9.8.7', '::1', '[::1]', '::ffff:127.0.0.1'].every(isLoopbackAddress)).toBe(true);
    expect(['10.200.0.1', '0.0.0.0', '::ffff:10.0.0.1', 'localhost', 'x.localhost', '', undefined].some(isLoopbackAddress)).toBe(false);
  });
  it('close a plain-HTTP connection whose peer is not loopback, before anything is sent on it', async () => {
    const connectTo = (remoteAddress: string, protocol: string) => new Promise<{ error: Error | null; destroyed: boolean }>((resolve) => {
      const socket = { remoteAddress, destroyed: false, destroy() { this.destroyed = true; } };
      const fake = ((_options: unknown, callback: (error: null, socket: Socket) => void) => callback(null, socket as unknown as Socket)) as Parameters<typeof loopbackOnly>[0];
      loopbackOnly(fake)({ hostname: 'api.localhost', host: 'api.localhost', protocol, port: '80', servername: undefined, localAddress: null, httpSocket: undefined }, (...args) => resolve({ error: args[0], destroyed: socket.destroyed }));
    });
    const refused = await connectTo('10.200.0.1', 'http:');
    expect(refused.error).toBeInstanceOf(NotLoopbackError);
    expect(refused.destroyed).toBe(true);
    expect((await connectTo('127.0.0.1', 'http:')).error).toBeNull();
    expect((await connectTo('10.200.0.1', 'https:')).error).toBeNull();
  });
});

describe('redaction', () => {
  it('hides registered secrets and token or password fields anywhere in a text', () => {
    const secrets = new Secrets();
    secrets.add('0123456789abcdef0123456789abcdef01234567');
    expect(secrets.redact('Authorization: 0123456789abcdef0123456789abcdef01234567')).toBe('Authorization: ***');
    expect(secrets.redact('{"response":{"token":"fresh"}}')).toBe('{"response":{"token":"***"}}');
    expect(secrets.redact('{"auth":{"email":"a@b.c","password":"hunter2"}}')).toBe('{"auth":{"email":"a@b.c","password":"***"}}');
  });
  it('hide a secret in every encoding a server may echo it in, short ones too', () => {
    const secrets = new Secrets();
    const password = 'pa"ss wörd\\n-SECRETPART';
    secrets.add(password);
    secrets.add('k9');
    const forms = [
      password,
      JSON.stringify(password).slice(1, -1),
      encodeURIComponent(password),
      new URLSearchParams({ p: password }).toString().slice(2),
      Array.from(password, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join(''),
      `pa\\"ss w\\u00f6rd${JSON.stringify('\\n').slice(1, -1)}-SECRETPART`,
    ];
    for (const form of forms) {
      const out = secrets.redact(`echo: <${form}> and {"password":"${form}"}`);
      expect(out, form).not.toMatch(/SECRETPART|SECRET|ss w/);
    }
    expect(secrets.redact('token k9 here')).toBe('token *** here');
    expect(secrets.redact('{"password":"a\\"SECRETPART-xyz"}')).toBe('{"password":"***"}');
    // a secret cut where a long text is cut shows no part of it, even after white space collapses
    expect(secrets.excerpt(`${' '.repeat(65_536 - 4)}SECRETPART`, 300)).toBe('…');
    expect(secrets.excerpt(`${'\n'.repeat(10)}k`, 300, true)).toBe('…');
    expect(secrets.excerpt('short  and\tsimple', 300)).toBe('short and simple');
    // every secret belongs to its own session
    expect(new Secrets().redact('k9')).toBe('k9');
  });
  it('hides a secret nested in several encodings, and only the secret (issue 20, item 9)', () => {
    const secrets = new Secrets();
    const password = 'p"a\\ss/w%rd é ü';
    secrets.add(password);
    const json = (text: string) => JSON.stringify(text).slice(1, -1);
    const nested = [
      json(json(password)),
      json(json(json(password))),
      json(json(json(json(password)))),
      encodeURIComponent(json(password)),
      json(encodeURIComponent(password)),
      encodeURIComponent(encodeURIComponent(password)),
      json(encodeURIComponent(json(password))),
      new URLSearchParams({ p: json(password) }).toString().slice(2),
    ];
    for (const form of nested) expect(secrets.redact(`before ${form} after`), form).toBe('before *** after');
    // the text around a secret is left as received, escapes included
    expect(secrets.redact(`{"error":"a \\"quote\\" %41 ${json(json(password))}\\n"}`)).toBe('{"error":"a \\"quote\\" %41 ***\\n"}');
    // a body that decodes every way is read a bounded number of times
    const started = performance.now();
    secrets.excerpt('\\"%22+'.repeat(11_000), 300, true);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('network errors', () => {
  it('are recognised by code and class, never by message', () => {
    // undici's types leave out the code argument its parser passes
    const Parser = errors.HTTPParserError as unknown as new (message: string, code: string) => Error;
    const parser = new Parser('Invalid character in chunk size', 'HPE_INVALID_CHUNK_SIZE');
    expect(describeNetworkError(parser)).toMatch(/malformed HTTP/);
    expect(describeNetworkError(new TypeError('fetch failed', { cause: new errors.SocketError('other side closed') }))).toMatch(/closed/);
    expect(describeNetworkError(new errors.ResponseContentLengthMismatchError())).toMatch(/Content-Length/);
    expect(describeNetworkError(new Error('socket terminated'))).toBeUndefined();
  });
  it('read at most a bounded prefix of an answer', async () => {
    async function* endless() {
      for (;;) yield Buffer.alloc(1000, 120);
    }
    const { text, cut } = await readCapped(endless(), 2500);
    expect(cut).toBe(true);
    expect(text).toHaveLength(2500);
  });
});

describe('durations', () => {
  it('read 500ms, 30s, 5m, 2h and plain seconds', () => {
    expect(['500ms', '30s', '5m', '2h', '12', '1.5'].map((text) => parseDuration(text, '--timeout'))).toEqual([500, 30_000, 300_000, 7_200_000, 12_000, 1500]);
    expect(() => parseDuration('soon', '--timeout')).toThrow(/--timeout wants a duration/);
  });
});

describe('a download that trickles', () => {
  /** Chunks of `size` bytes, each arriving `everyMs` after it is asked for, on a fake clock. */
  function paced(chunks: number, size: number, everyMs: number) {
    let clock = 0;
    async function* body() {
      for (let i = 0; i < chunks; i++) {
        clock += everyMs;
        yield new Uint8Array(size);
      }
    }
    return { body: body(), now: () => clock, advance: (ms: number) => { clock += ms; } };
  }
  async function drain(source: AsyncIterable<Uint8Array>, onChunk?: () => void): Promise<number> {
    let bytes = 0;
    for await (const chunk of source) {
      bytes += chunk.length;
      onChunk?.();
    }
    return bytes;
  }

  it('fails as stalled when under 1 KiB a second arrives for --timeout of waiting', async () => {
    const slow = paced(100, 1, 1000);
    await expect(drain(stallGuarded(slow.body, 5000, slow.now))).rejects.toThrow(/stalled: 5 bytes in 5(\.0)?s/);
  });
  it('lets a slow but steady download, and a slow output, go on', async () => {
    const steady = paced(20, 2048, 1000);
    expect(await drain(stallGuarded(steady.body, 5000, steady.now))).toBe(20 * 2048);
    // the output takes a minute per chunk: time not spent waiting on the server does not count
    const fast = paced(10, 10, 1);
    expect(await drain(stallGuarded(fast.body, 5000, fast.now), () => fast.advance(60_000))).toBe(100);
  });
});
