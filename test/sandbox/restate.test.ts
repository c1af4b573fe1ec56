// --restate (late conversions), --report-ttl, and the sandbox's settable clock.

import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/duration.js';
import { clockFrom } from '../../src/sandbox/options.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/server.js';
import { call, withSandbox } from '../helpers/http.js';

const NOW = DateTime.fromISO('2026-11-20T06:00:00+01:00').toMillis();
const NOV_10 = DateTime.fromISO('2026-11-10T00:00:00+01:00').toSeconds();
const NOV_20 = DateTime.fromISO('2026-11-20T00:00:00+01:00').toSeconds();
/** Nov 10 to Nov 19, by day and country, with late metrics (clicks, leads, revenue) and displays. */
const REPORT = { since: NOV_10, until: NOV_20 - 1, breakdowns: ['DAILY', 'COUNTRY'], metrics: 'displays,clicks,leads,revenueEuro' };

type Row = Record<string, string | number | null>;

/** Submits the report, lets the (test) clock run past its work, and downloads it. */
async function download(sandbox: Sandbox): Promise<Row[]> {
  const submitted = await call(sandbox, '/buyer-reporting', { form: REPORT });
  expect(submitted.status).toBe(200);
  sandbox.advance(1);
  const answer = await call(sandbox, '/download-reporting', { form: { id: submitted.json.response.report_id } });
  expect(answer.status).toBe(200);
  return answer.json.data as Row[];
}

const byDay = (rows: Row[]) => {
  const days = new Map<string, Row[]>();
  for (const row of rows) days.set(String(row.date), [...(days.get(String(row.date)) ?? []), row]);
  return days;
};
const withoutLate = (rows: Row[]) => rows.map(({ clicks: _c, leads: _l, revenueEuro: _r, ...rest }) => rest);

const RESTATING: SandboxOptions = { readyDelayMs: 1, restateMs: 3 * 86_400_000, now: () => NOW };

describe('--restate', () => {
  it('changes the numbers of the last N days between submissions, keeps the rows and the older days', async () => {
    await withSandbox(RESTATING, async (sandbox) => {
      const first = byDay(await download(sandbox));
      const second = byDay(await download(sandbox));
      expect([...first.keys()]).toHaveLength(10);
      for (const [day, rows] of first) {
        const again = second.get(day)!;
        // now - 3 days is Nov 17, 06:00: Nov 17, 18 and 19 are restated whole
        if (day >= '2026-11-17') {
          expect(again, day).not.toEqual(rows);
          expect(withoutLate(again), `${day}: same rows, same displays`).toEqual(withoutLate(rows));
        } else {
          expect(again, day).toEqual(rows);
        }
      }
    });
  });

  it('is deterministic for the same sequence of submissions, and days leave the window as the clock moves', async () => {
    const runs: Row[][][] = [];
    for (let run = 0; run < 2; run++) {
      await withSandbox(RESTATING, async (sandbox) => {
        const downloads = [await download(sandbox), await download(sandbox)];
        sandbox.advance(86_400_000);
        downloads.push(await download(sandbox), await download(sandbox));
        runs.push(downloads);
      });
    }
    expect(runs[1]).toEqual(runs[0]);
    const [, , third, fourth] = runs[0]!.map(byDay);
    // a day later, Nov 17 has settled; Nov 18 and 19 still move
    expect(fourth!.get('2026-11-17')).toEqual(third!.get('2026-11-17'));
    expect(fourth!.get('2026-11-18')).not.toEqual(third!.get('2026-11-18'));
  });

  it('without --restate, every submission gives the same numbers', async () => {
    await withSandbox({ readyDelayMs: 1, now: () => NOW }, async (sandbox) => {
      expect(await download(sandbox)).toEqual(await download(sandbox));
    });
  });
});

describe('--report-ttl', () => {
  it('forgets a report ID after the TTL: status and download answer 404 with the error envelope', async () => {
    await withSandbox({ readyDelayMs: 1, reportTtlMs: 3_600_000, now: () => NOW }, async (sandbox) => {
      const id = (await call(sandbox, '/buyer-reporting', { form: REPORT })).json.response.report_id as string;
      sandbox.advance(3_599_999);
      expect((await call(sandbox, '/status-reporting', { form: { id } })).json.response.status).toBe('ready');
      sandbox.advance(1);
      for (const path of ['/status-reporting', '/download-reporting']) {
        const answer = await call(sandbox, path, { form: { id } });
        expect(answer.status).toBe(404);
        expect(answer.json).toEqual({ response: { error_id: 'NOT_FOUND', error: `no report with id ${id}` } });
      }
      expect(sandbox.reports()[0]!.events.map((event) => `${event.kind} ${event.httpStatus}`)).toEqual(['submit 200', 'status 200', 'status 404', 'download 404']);
      expect(sandbox.stats().expired).toBe(1);
    });
  });
});

describe('the sandbox clock', () => {
  it('duration flags take days: --restate 3d, --report-ttl 1d', () => {
    expect(parseDuration('3d', '--restate')).toBe(3 * 86_400_000);
    expect(parseDuration('0.5d', '--report-ttl')).toBe(43_200_000);
  });

  it('--now starts the clock at an instant (Paris when no offset is given) and lets it run', async () => {
    const clock = clockFrom('2026-11-20T06:00:00');
    expect(Math.abs(clock() - NOW)).toBeLessThan(1000);
    expect(() => clockFrom('yesterday')).toThrow(/--now "yesterday": is not a time; give an ISO 8601 time/);
    await withSandbox({ now: clockFrom('2026-11-20T06:00:00+01:00') }, async (sandbox) => {
      const before = sandbox.now();
      sandbox.advance(60_000);
      expect(sandbox.now() - before).toBeGreaterThanOrEqual(60_000);
      expect(sandbox.now() - NOW).toBeLessThan(70_000);
    });
  });
});
