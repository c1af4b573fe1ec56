// The jobs modules composed as `run --chunk` will compose them: windows planned and checked, the
// pool running them against the sandbox's data with a platform that refuses long periods, the
// results delivered in order into the merger. The merged rows must equal one report's.

import { describe, expect, it } from 'vitest';
import { CsvWriter } from '../../src/export/writers.js';
import { DEFAULT_METRICS } from '../../src/report/catalog.js';
import { ReportFailedError } from '../../src/errors.js';
import { WindowMerger, mergePlan } from '../../src/destinations/merge.js';
import { runWindows, type PoolEvent } from '../../src/engine/pool.js';
import { checkChunk, parseChunk, planWindows, splitWindow, type Window } from '../../src/report/windows.js';
import type { RowHandler } from '../../src/export/scanner.js';
import { FakeClock } from '../helpers/clock.js';
import { byKey, collector, period, reportText, scan, type Query } from '../helpers/rows.js';

/**
 * A chunked run over a simulated platform: a report takes `secondsPerDay` of its period to be
 * ready, and a report longer than `maxDays` ends in a failure status. Returns what was written.
 */
async function chunkedRun(query: Query, whole: Window, chunkText: string, out: RowHandler, maxDays: number) {
  const chunk = parseChunk(chunkText);
  checkChunk(chunk, query.breakdowns);
  const windows = planWindows(whole.since, whole.until, chunk);
  const merger = new WindowMerger(mergePlan(query.side, query.metrics, query.breakdowns, { split: true }), out);
  const clock = new FakeClock();
  const events: PoolEvent[] = [];
  const outcome = await runWindows(windows, async (window, context) => {
    const days = (window.until - window.since + 1) / 86400;
    context.reportId(`r${window.since}`);
    await clock.sleep(days * 500, context.signal);
    if (days > maxDays) throw new ReportFailedError(`report r${window.since} ended in status "failed": too much data`, `r${window.since}`);
    return reportText(query, window); // stands for the downloaded body, spooled
  }, {
    concurrency: 8,
    split: (window) => splitWindow(window, query.breakdowns),
    delivery: 'merged',
    failFast: true,
    signal: new AbortController().signal,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0.5,
    deliver: (window, body, origin) => {
      merger.end(window, scan(body, merger.begin(window, origin)));
    },
    onEvent: (event) => events.push(event),
  });
  merger.finish();
  return { outcome, events, summary: merger.summary(), elapsedMs: clock.now() };
}

describe('a chunked run, windows to merged rows', () => {
  it('RANGE: weeks, some split by the platform, summed equal one report, exact decimals and all', async () => {
    const query: Query = { side: 'buyer', metrics: [...DEFAULT_METRICS.buyer], breakdowns: ['RANGE', 'CAMPAIGN', 'COUNTRY'] };
    const whole = period('2026-03-20', '2026-04-12');
    const single = collector();
    const singleSummary = scan(reportText(query, whole), single);
    const merged = collector();
    const { outcome, events, summary } = await chunkedRun(query, whole, 'week', merged, 3);
    expect(outcome.failures).toEqual([]);
    expect(events.filter((e) => e.type === 'split').length).toBeGreaterThan(3);
    expect(byKey(merged.rows)).toEqual(byKey(single.rows));
    expect(summary).toEqual(singleSummary);
  });

  it('MONTHLY: months, halved by the platform, summed back to one row per month and campaign', async () => {
    const query: Query = { side: 'buyer', metrics: ['displays', 'clicks', 'revenueEuro', 'revenueDollar'], breakdowns: ['MONTHLY', 'CAMPAIGN'] };
    const whole = period('2026-09-15', '2026-11-20');
    const single = collector();
    scan(reportText(query, whole), single);
    const merged = collector();
    const { outcome } = await chunkedRun(query, whole, 'month', merged, 10);
    expect(outcome.failures).toEqual([]);
    expect(byKey(merged.rows)).toEqual(byKey(single.rows));
  });

  it('HOURLY across the autumn change: days split into hours by the platform, CSV identical to one report', async () => {
    const query: Query = { side: 'seller', metrics: ['requests', 'revenueEuro'], breakdowns: ['HOURLY', 'OS'] };
    const whole = period('2026-10-24', '2026-10-26');
    const csv = () => new CsvWriter({ delimiter: ',', bom: false, excel: false }, false);
    const single = csv();
    scan(reportText(query, whole), single);
    const merged = csv();
    const { outcome, events } = await chunkedRun(query, whole, 'day', merged, 0.3); // at most 7 hours
    expect(outcome.failures).toEqual([]);
    expect(events.some((e) => e.type === 'split' && e.window.until - e.window.since < 86400)).toBe(true);
    expect(merged.finish()).toBe(single.finish());
  });

  it('runs windows side by side: 30 days at 0.5 s a day take a fraction of one 30-day report', async () => {
    const query: Query = { side: 'buyer', metrics: ['displays'], breakdowns: ['DAILY'] };
    const { elapsedMs } = await chunkedRun(query, period('2026-11-01', '2026-11-30'), 'day', collector(), 31);
    // one report: 15 s of simulated work; 30 windows, 8 at a time: 4 rounds of 0.5 s
    expect(elapsedMs).toBe(2000);
  });
});

describe('retryCommand: the command line that requests only a failed window', () => {
  it('keeps every other word, drops --since/--until in both spellings, and quotes for the shell', async () => {
    const { retryCommand } = await import('../../src/engine/outcome.js');
    const window = { since: 1793487600, until: 1793660399 }; // 2026-11-01..2026-11-02, Paris
    expect(retryCommand(['run', 'buyer', '--since=2026-10-01', '--chunk', 'day', '--until', 'yesterday', '-o', 'out/{since} x.csv'], window))
      .toBe("reporting run buyer --chunk day -o 'out/{since} x.csv' --since 2026-11-01 --until 2026-11-02");
  });
});
