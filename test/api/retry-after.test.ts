// Retry-After, end to end inside the process: a tiny node:http server on 127.0.0.1 answers 503 or
// 429 with a Retry-After header, then 200; the CLI's real HTTP client (undici, no mocks) must wait
// what the server asked, in seconds or as an HTTP date, give up at once on a wait beyond the cap
// rather than hang, and fall back to its own backoff on a value that is neither. Waits are handed
// to an injected sleep, which records them and returns at once.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Http } from '../../src/api/http.js';
import { RETRY_AFTER_CAP_MS } from '../../src/api/retry.js';
import { NetworkError } from '../../src/errors.js';

const NOW = Date.parse('2026-11-21T11:00:00Z');

interface Harness {
  http: Http;
  waits: number[];
  throttles: (number | undefined)[];
  requests: () => number;
}

const opened: { server: Server; http: Http }[] = [];

afterEach(async () => {
  for (const { server, http } of opened.splice(0)) {
    await http.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A server whose first `failures` answers are `status` with `Retry-After: header`, then 200. */
async function serve(status: number, header: string | undefined, failures = 1): Promise<Harness> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    count++;
    if (count <= failures) {
      if (header !== undefined) res.setHeader('Retry-After', header);
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ response: { error_id: 'BUSY', error: 'busy' } }));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ ok: count }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const waits: number[] = [];
  const throttles: (number | undefined)[] = [];
  const http = new Http({
    baseUrl: `http://127.0.0.1:${port}`,
    timeoutMs: 10_000,
    retries: 3,
    encoding: 'form',
    userAgent: 'reporting-test',
    signal: new AbortController().signal,
    now: () => NOW,
    // 0.9: the first backoff is 450 ms of its 500 ms bound, not the 250 ms floor under Retry-After
    random: () => 0.9,
    sleep: async (ms) => { waits.push(ms); },
  });
  http.onThrottle = (retryAfterMs) => throttles.push(retryAfterMs);
  opened.push({ server, http });
  return { http, waits, throttles, requests: () => count };
}

const ok = z.object({ ok: z.number() });
const call = (h: Harness) => h.http.json({ method: 'POST', path: '/status-reporting', params: { id: 'r1' } }, ok);

describe('Retry-After from a real server', () => {
  it('in seconds: waits that long, then succeeds', async () => {
    const h = await serve(503, '7');
    await expect(call(h)).resolves.toEqual({ ok: 2 });
    expect(h.waits).toEqual([7000]);
  });

  it('as an HTTP date (IMF-fixdate): waits until then, by the injected clock', async () => {
    const h = await serve(503, 'Sat, 21 Nov 2026 11:00:12 GMT');
    await expect(call(h)).resolves.toEqual({ ok: 2 });
    expect(h.waits).toEqual([12_000]);
  });

  it('as an obsolete HTTP date (RFC 850, asctime): the same', async () => {
    for (const header of ['Saturday, 21-Nov-26 11:00:05 GMT', 'Sat Nov 21 11:00:09 2026']) {
      const h = await serve(503, header);
      await expect(call(h)).resolves.toEqual({ ok: 2 });
      expect(h.waits, header).toEqual([header.includes('05') ? 5000 : 9000]);
    }
  });

  it('on a 429, tells the pool the wait (onThrottle) and waits it', async () => {
    const h = await serve(429, '3', 2);
    await expect(call(h)).resolves.toEqual({ ok: 3 });
    expect(h.throttles).toEqual([3000, 3000]);
    expect(h.waits).toEqual([3000, 3000]);
  });

  it('0 or a date in the past: waits the backoff floor, so the retries are not spent at once', async () => {
    const h = await serve(503, '0', 3);
    await expect(call(h)).resolves.toEqual({ ok: 4 });
    expect(h.waits).toEqual([250, 500, 1000]);
  });

  it(`capped: a wait beyond ${RETRY_AFTER_CAP_MS / 60_000} minutes is not waited for, the call fails at once`, async () => {
    for (const header of [String(RETRY_AFTER_CAP_MS / 1000 + 1), 'Sun, 22 Nov 2026 11:00:00 GMT']) {
      const h = await serve(503, header);
      const error = await call(h).catch((thrown: unknown) => thrown);
      expect(error, header).toBeInstanceOf(NetworkError);
      // saying why: more --retries would not help
      expect((error as Error).message, header).toMatch(/HTTP 503: busy \(BUSY\); it asks to retry in (5m01s|24h) \(Retry-After\), longer than the 5m this tool waits/);
      expect((error as NetworkError).hint, header).toBe('try again later');
      expect(h.waits, header).toEqual([]);
      expect(h.requests(), header).toBe(1);
    }
  });

  it('a value that is neither seconds nor an HTTP date: the client\'s own backoff', async () => {
    for (const header of ['soon', '1.5', '-3', '5s', '2026-11-21T11:00:10Z', 'Sat, 21 Nov 2026 11:00:10 +0100']) {
      const h = await serve(503, header);
      await expect(call(h), header).resolves.toEqual({ ok: 2 });
      // full jitter of the first 500 ms step with random() = 0.9
      expect(h.waits, header).toEqual([450]);
    }
  });

  it('no Retry-After at all: the same backoff, growing', async () => {
    const h = await serve(503, undefined, 3);
    await expect(call(h)).resolves.toEqual({ ok: 4 });
    expect(h.waits).toEqual([450, 900, 1800]);
  });
});
