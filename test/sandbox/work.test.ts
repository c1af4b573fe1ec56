// The work model, --max-running, --fail-over-days, and what the sandbox records for tests.

import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { call, sleep, withSandbox } from '../helpers/http.js';

const paris = (iso: string) => DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toSeconds();
/** Whole Paris days from `first`, `count` of them: [since, until] with until inclusive. */
const days = (first: string, count: number) => {
  const start = DateTime.fromISO(first, { zone: 'Europe/Paris' });
  return { since: start.toSeconds(), until: start.plus({ days: count }).toSeconds() - 1 };
};

async function submit(sandbox: Sandbox, fields: Record<string, string | number | string[]>, token?: string) {
  return call(sandbox, '/buyer-reporting', { form: { metrics: 'displays', ...fields }, ...(token === undefined ? {} : { token }) });
}

async function idOf(sandbox: Sandbox, fields: Record<string, string | number | string[]>): Promise<string> {
  const answer = await submit(sandbox, fields);
  expect(answer.status).toBe(200);
  return answer.json.response.report_id as string;
}

const statusOf = async (sandbox: Sandbox, id: string) => (await call(sandbox, '/status-reporting', { form: { id } })).json.response;

/** A clock that stands still until the test moves it with sandbox.advance. */
const frozen = () => DateTime.fromISO('2026-11-20T06:00:00+01:00').toMillis();

describe('work model', () => {
  it('keeps a report in progress for --work per day of period, +10% per breakdown but RANGE, DAILY and MONTHLY', async () => {
    await withSandbox({ readyDelayMs: 100, workMsPerDay: 1000, now: frozen }, async (sandbox) => {
      await idOf(sandbox, { ...days('2026-06-01', 90), breakdowns: ['DAILY', 'CAMPAIGN', 'COUNTRY'] });
      await idOf(sandbox, { ...days('2026-08-01', 1), breakdowns: ['DAILY'] });
      await idOf(sandbox, { ...days('2026-10-25', 1), breakdowns: ['HOURLY'] }); // 25 hours
      await idOf(sandbox, { since: paris('2026-08-01T00:00:00'), until: paris('2026-08-01T00:00:59') }); // a minute
      const spent = sandbox.reports().map((report) => report.doneAt - report.submittedAt);
      expect(spent).toEqual([90 * 1000 * 1.2, 1000, Math.round((25 / 24) * 1000 * 1.1), 100]);
    });
  });

  it('one 90-day report is slow, ninety 1-day reports in parallel are fast', async () => {
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 100 }, async (sandbox) => {
      const big = await idOf(sandbox, { ...days('2026-08-01', 90), breakdowns: ['DAILY'] });
      const started = Date.now();
      const small = await Promise.all(Array.from({ length: 90 }, (_, i) => idOf(sandbox, { ...days('2026-08-01', 1), since: paris('2026-08-01') + i * 86_400, until: paris('2026-08-02') + i * 86_400 - 1 })));
      for (const id of small) {
        while ((await statusOf(sandbox, id)).status !== 'ready') await sleep(10);
      }
      // 9 s of work for the big one; the small ones, 0.1 s each, ran side by side
      expect(Date.now() - started).toBeLessThan(4500);
      expect((await statusOf(sandbox, big)).status).toBe('progress');
      expect(sandbox.stats().peakInProgress).toBeGreaterThanOrEqual(2);
      expect(sandbox.reports().every((report) => report.outcome === 'ready')).toBe(true);
    });
  });

  it('with --work, there is no minimum unless --delay is given', async () => {
    await withSandbox({ readyDelayMs: undefined, workMsPerDay: 1000, now: frozen }, async (sandbox) => {
      await idOf(sandbox, { since: paris('2026-08-01T00:00:00'), until: paris('2026-08-01T00:00:59') });
      expect(sandbox.reports()[0]!.doneAt - sandbox.reports()[0]!.submittedAt).toBe(Math.round(1000 / 1440));
    });
  });

  it('without --work, --delay alone decides, whatever the period', async () => {
    await withSandbox({ readyDelayMs: 250, now: frozen }, async (sandbox) => {
      await idOf(sandbox, days('2026-01-01', 300));
      await idOf(sandbox, days('2026-01-01', 1));
      expect(sandbox.reports().map((report) => report.doneAt - report.submittedAt)).toEqual([250, 250]);
    });
  });
});

describe('--max-running', () => {
  it('answers 429 with Retry-After beyond N reports in progress for a token, and accepts again once one is done', async () => {
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 1000, maxRunning: 2, now: frozen }, async (sandbox) => {
      await idOf(sandbox, days('2026-08-01', 3)); // done in 3 s
      await idOf(sandbox, days('2026-08-01', 10)); // done in 10 s
      const refused = await submit(sandbox, days('2026-08-01', 1));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('3');
      expect(refused.json.response).toEqual({ error_id: 'TOO_MANY_REPORTS', error: expect.stringMatching(/too many reports in progress: 2 of at most 2/) });

      // another token has its own allowance
      const login = await call(sandbox, '/auth-reporting', { json: { auth: { email: sandbox.email, password: sandbox.password } }, token: null });
      expect((await submit(sandbox, days('2026-08-01', 1), login.json.response.token as string)).status).toBe(200);

      sandbox.advance(3000);
      expect((await submit(sandbox, days('2026-08-01', 1))).status).toBe(200);
      expect((await submit(sandbox, days('2026-08-01', 1))).status).toBe(429);
      expect(sandbox.stats()).toMatchObject({ submitted: 4, refused: 2, peakInProgress: 2, peakInProgressAllTokens: 3, inProgress: 2 });
    });
  });
});

describe('--fail-over-days', () => {
  it('a report touching more than N Paris days ends in failed, "too much data"; N days, even a 25-hour day, are fine', async () => {
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 1000, failOverDays: 7, now: frozen }, async (sandbox) => {
      const tooLarge = await idOf(sandbox, days('2026-10-20', 8));
      const largest = await idOf(sandbox, days('2026-10-20', 7)); // holds the 25-hour 2026-10-25
      const crossing = await idOf(sandbox, { since: paris('2026-10-01T12:00:00'), until: paris('2026-10-08T11:59:59') }); // 7 × 24 h over 8 days
      expect((await statusOf(sandbox, tooLarge)).status).toBe('progress');
      sandbox.advance(8000);
      const failed = await statusOf(sandbox, tooLarge);
      expect(failed).toEqual({ status: 'failed', message: expect.stringMatching(/^too much data: the report covers 8 days, more than the limit of 7/), report_id: tooLarge });
      expect((await statusOf(sandbox, largest)).status).toBe('ready');
      expect((await statusOf(sandbox, crossing)).status).toBe('failed');
      const download = await call(sandbox, '/download-reporting', { form: { id: tooLarge } });
      expect(download.status).toBe(400);
      // the too-large report gives up after working as long as the largest allowed one
      expect(sandbox.reports().map((report) => [report.outcome, report.doneAt - report.submittedAt])).toEqual([
        ['failed', 7000], ['ready', Math.round(7000 + 1000 / 24)], ['failed', 7000],
      ]);
    });
  });
});

describe('what the sandbox records', () => {
  it('lists, per report ID, its submit, status and download requests in order, with the state answered', async () => {
    const lines: string[] = [];
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 1000, now: frozen, log: (line) => lines.push(line) }, async (sandbox) => {
      const id = await idOf(sandbox, { ...days('2026-11-01', 1), breakdowns: ['DAILY'] });
      await statusOf(sandbox, id);
      expect((await call(sandbox, '/download-reporting', { form: { id } })).status).toBe(400);
      sandbox.advance(1000);
      await statusOf(sandbox, id);
      expect((await call(sandbox, '/download-reporting', { form: { id } })).status).toBe(200);
      await call(sandbox, '/status-reporting', { form: { id: 'not-a-report' } });

      const [log, ...others] = sandbox.reports();
      expect(others).toEqual([]);
      expect(log).toMatchObject({ id, side: 'buyer', ...days('2026-11-01', 1), breakdowns: ['DAILY'], outcome: 'ready', revision: 1 });
      expect(log!.events.map(({ kind, httpStatus, state, complete }) => ({ kind, httpStatus, state, complete }))).toEqual([
        { kind: 'submit', httpStatus: 200, state: 'progress', complete: undefined },
        { kind: 'status', httpStatus: 200, state: 'progress', complete: undefined },
        { kind: 'download', httpStatus: 400, state: 'progress', complete: true },
        { kind: 'status', httpStatus: 200, state: 'ready', complete: undefined },
        { kind: 'download', httpStatus: 200, state: 'ready', complete: true },
      ]);
      expect(log!.events.map((event) => event.at - log!.submittedAt)).toEqual([0, 0, 0, 1000, 1000]);
      await sleep(0); // the log line is written when the answer is closed
      expect(lines.filter((line) => line.includes(`report=${id}`)).map((line) => line.replace(/ \d+ms/, ''))).toEqual([
        `POST /buyer-reporting 200 report=${id} progress`,
        `POST /status-reporting 200 report=${id} progress`,
        `POST /download-reporting 400 report=${id} progress`,
        `POST /status-reporting 200 report=${id} ready`,
        `POST /download-reporting 200 report=${id} ready`,
      ]);
    });
  });

  it('counts open reports, submitted and not yet downloaded whole or seen failed: what a client\'s concurrency bounds', async () => {
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 1000, failOverDays: 2, now: frozen }, async (sandbox) => {
      const ids = [await idOf(sandbox, days('2026-11-01', 1)), await idOf(sandbox, days('2026-11-01', 1)), await idOf(sandbox, days('2026-11-01', 3))];
      expect(sandbox.stats()).toMatchObject({ open: 3, peakOpen: 3 });
      sandbox.advance(2000);
      // ready is not done: the client still has to download
      expect((await statusOf(sandbox, ids[0]!)).status).toBe('ready');
      expect(sandbox.stats().open).toBe(3);
      expect((await call(sandbox, '/download-reporting', { form: { id: ids[0]! } })).status).toBe(200);
      expect((await statusOf(sandbox, ids[2]!)).status).toBe('failed');
      expect(sandbox.stats()).toMatchObject({ open: 1, peakOpen: 3, inProgress: 0 });
      await idOf(sandbox, days('2026-11-02', 1));
      expect(sandbox.stats()).toMatchObject({ open: 2, peakOpen: 3 });
    });
  });

  it('counts the peak of reports in progress at once, not the total submitted', async () => {
    await withSandbox({ readyDelayMs: 0, workMsPerDay: 1000, now: frozen }, async (sandbox) => {
      for (let i = 0; i < 3; i++) await idOf(sandbox, days('2026-11-01', 1));
      sandbox.advance(1000);
      for (let i = 0; i < 2; i++) await idOf(sandbox, days('2026-11-01', 1));
      expect(sandbox.stats()).toMatchObject({ submitted: 5, peakInProgress: 3, inProgress: 2 });
      // the clock stands still: the last two stay in progress however long the test waits
      const last = sandbox.reports().at(-1)!;
      await sleep(50);
      expect((await statusOf(sandbox, last.id)).status).toBe('progress');
    });
  });
});
