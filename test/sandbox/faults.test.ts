import { describe, expect, it } from 'vitest';
import { parseBodyFault, parseErrorFault } from '../../src/sandbox/faults.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { call, fetchReport, formBody, withSandbox } from '../helpers/http.js';

const NOV_1 = 1793487600;
const NOV_20_END = 1795215599;
const REPORT = { since: NOV_1, until: NOV_20_END, breakdowns: ['DAILY', 'COUNTRY'], metrics: 'displays' };

async function readyReport(sandbox: Sandbox): Promise<string> {
  const submitted = await call(sandbox, '/buyer-reporting', { form: REPORT });
  const id = submitted.json.response.report_id as string;
  sandbox.advance(1000); // past the ready delay, without waiting for it
  return id;
}

/** Downloads with fetch and reads the body to its end, reporting how far it got. */
async function rawDownload(sandbox: Sandbox, id: string, timeoutMs = 10_000) {
  const response = await fetch(`${sandbox.baseUrl}/download-reporting`, {
    method: 'POST',
    headers: { Authorization: sandbox.token, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: formBody({ id }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const reader = response.body!.getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { status: response.status, bytes, error: undefined };
      bytes += value.length;
    }
  } catch (error) {
    return { status: response.status, bytes, error: error as Error };
  }
}

describe('error faults', () => {
  it('fails the first N requests of one endpoint with 503, then serves normally', async () => {
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'status', first: 2 }] } }, async (sandbox) => {
      const id = await readyReport(sandbox);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await call(sandbox, '/status-reporting', { form: { id } })).status);
      expect(statuses).toEqual([503, 503, 200]);
      expect((await call(sandbox, '/campaigns')).status).toBe(200);
    });
  });

  it('answers 429 with Retry-After in the error envelope', async () => {
    await withSandbox({ faults: { errors: [{ status: 429, endpoint: 'buyer', first: 1, retryAfter: 3 }] } }, async (sandbox) => {
      const answer = await call(sandbox, '/buyer-reporting', { form: REPORT });
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('3');
      expect(answer.json.response.error_id).toBe('SANDBOX_FAULT');
      expect((await call(sandbox, '/buyer-reporting', { form: REPORT })).status).toBe(200);
    });
  });

  it('fails about the given share of requests at a rate, the same ones for the same seed', async () => {
    const run = () => withSandbox({ faults: { errors: [{ status: 500, endpoint: '*', rate: 0.3 }] } }, async (sandbox) => {
      const statuses: number[] = [];
      for (let i = 0; i < 200; i++) statuses.push((await call(sandbox, '/campaigns')).status);
      return statuses;
    });
    const first = await run();
    const failures = first.filter((status) => status === 500).length;
    expect(failures).toBeGreaterThan(35);
    expect(failures).toBeLessThan(85);
    expect(await run()).toEqual(first);
  });

  it('can answer an HTML page, as a proxy would', async () => {
    await withSandbox({ faults: { errors: [{ status: 502, endpoint: 'download', html: true }] } }, async (sandbox) => {
      const id = await readyReport(sandbox);
      const answer = await call(sandbox, '/download-reporting', { form: { id } });
      expect(answer.status).toBe(502);
      expect(answer.headers.get('content-type')).toContain('text/html');
      expect(answer.text).toContain('<html>');
    });
  });

  it('adds latency to every answer', async () => {
    await withSandbox({ faults: { latencyMs: 150 } }, async (sandbox) => {
      const started = performance.now();
      await call(sandbox, '/campaigns');
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    });
  });
});

describe('download faults', () => {
  it('resets the connection in the middle of a download, then serves the next one whole', async () => {
    await withSandbox({ faults: { resetDownload: { afterBytes: 1000, times: 1 } } }, async (sandbox) => {
      const id = await readyReport(sandbox);
      const broken = await rawDownload(sandbox, id);
      expect(broken.status).toBe(200);
      expect(broken.error).toBeDefined();
      expect(broken.bytes).toBeLessThanOrEqual(1000);
      const whole = await call(sandbox, '/download-reporting', { form: { id } });
      expect(whole.json.data.length).toBeGreaterThan(20);
    });
  });

  it('stalls a download: the body goes silent and never ends', async () => {
    await withSandbox({ faults: { stallDownload: { afterBytes: 500, times: 1 } } }, async (sandbox) => {
      const id = await readyReport(sandbox);
      const stalled = await rawDownload(sandbox, id, 800);
      expect(stalled.error?.name).toMatch(/TimeoutError|AbortError/);
      expect(stalled.bytes).toBe(500);
    });
  });

  it('expires tokens after N uses; a new login gives a fresh token', async () => {
    await withSandbox({ faults: { tokenUses: 2 } }, async (sandbox) => {
      expect((await call(sandbox, '/campaigns')).status).toBe(200);
      expect((await call(sandbox, '/campaigns')).status).toBe(200);
      const expired = await call(sandbox, '/campaigns');
      expect(expired.status).toBe(401);
      expect(expired.json.response).toEqual({ error_id: 'NOAUTH', error: 'Token expired' });
      const login = await call(sandbox, '/auth-reporting', { token: null, json: { auth: { email: sandbox.email, password: sandbox.password } } });
      expect((await call(sandbox, '/campaigns', { token: login.json.response.token })).status).toBe(200);
    });
  });

  it('ends reports in a failure status, with a message naming the report', async () => {
    await withSandbox({ faults: { reportStatus: 'failed' } }, async (sandbox) => {
      const id = await readyReport(sandbox);
      const status = await call(sandbox, '/status-reporting', { form: { id } });
      expect(status.json.response.status).toBe('failed');
      expect(status.json.response.message).toContain(id);
      expect((await call(sandbox, '/download-reporting', { form: { id } })).status).toBe(400);
    });
  });
});

describe('malformed answers', () => {
  it('truncated: the download is cut short and is not valid JSON', async () => {
    await withSandbox({ faults: { malformed: 'truncated' } }, async (sandbox) => {
      const answer = await call(sandbox, '/download-reporting', { form: { id: await readyReport(sandbox) } });
      expect(answer.status).toBe(200);
      expect(answer.json).toBeUndefined();
    });
  });

  it('no-report-id, data-not-array, wrong-types, unknown-status', async () => {
    await withSandbox({ faults: { malformed: 'no-report-id' } }, async (sandbox) => {
      expect((await call(sandbox, '/buyer-reporting', { form: REPORT })).json).toEqual({ response: { status: 'OK' } });
    });
    await withSandbox({ faults: { malformed: 'data-not-array' } }, async (sandbox) => {
      const answer = await call(sandbox, '/download-reporting', { form: { id: await readyReport(sandbox) } });
      expect(answer.json.data).toEqual({ rows: 0 });
    });
    await withSandbox({ faults: { malformed: 'wrong-types' } }, async (sandbox) => {
      const answer = await call(sandbox, '/status-reporting', { form: { id: await readyReport(sandbox) } });
      expect(typeof answer.json.response.status).toBe('number');
    });
    await withSandbox({ faults: { malformed: 'unknown-status' } }, async (sandbox) => {
      const answer = await call(sandbox, '/status-reporting', { form: { id: await readyReport(sandbox) } });
      expect(answer.json.response.status).toBe('archived');
    });
  });
});

describe('layouts and scale', () => {
  it('pretty and summary-first layouts carry the same report as compact', async () => {
    const compact = await withSandbox({}, (sandbox) => fetchReport(sandbox, 'buyer', REPORT));
    for (const layout of ['pretty', 'summary-first'] as const) {
      const other = await withSandbox({ layout }, async (sandbox) => {
        const id = await readyReport(sandbox);
        return call(sandbox, '/download-reporting', { form: { id } });
      });
      expect(other.json).toEqual(compact);
      if (layout === 'pretty') expect(other.text).toContain('\n    {');
      else expect(other.text.startsWith('{"summary":')).toBe(true);
    }
  });

  it('the scale switch yields the asked number of full-shape rows', async () => {
    await withSandbox({ scaleRows: 5000 }, async (sandbox) => {
      const report = await fetchReport(sandbox, 'buyer', REPORT);
      expect(report.data).toHaveLength(5000);
      expect(report.data[0]!.date).toBe('2026-11-01');
      expect(report.data.at(-1)!.date).toBe('2026-11-20');
      expect(report.data[0]!.campaignName).not.toBe('');
      expect(report.data[0]!.country).not.toBeNull();
      expect(Object.keys(report.data[0]!).at(-1)).toBe('displays');
    });
  });
});

describe('fault option syntax', () => {
  it('parses the --error and body fault specs', () => {
    expect(parseErrorFault('503,endpoint=download-reporting,first=2')).toEqual({ status: 503, endpoint: 'download', first: 2 });
    expect(parseErrorFault('429,rate=0.5,retry-after=2,html')).toEqual({ status: 429, endpoint: '*', rate: 0.5, retryAfter: 2, html: true });
    expect(parseBodyFault('4096,times=1', '--reset-download')).toEqual({ afterBytes: 4096, times: 1 });
    expect(() => parseErrorFault('200')).toThrow(/400 to 599/);
    expect(() => parseErrorFault('500,endpoint=nope')).toThrow(/unknown endpoint/);
    expect(() => parseErrorFault('500,rate=2')).toThrow(/fraction/);
  });
});
