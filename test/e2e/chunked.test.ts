// `run --chunk` end to end (issue 13): the built CLI against the sandbox's work model. Merged output
// equals one report's (read back with csv-parse), never more than N reports at once, 429s slow the
// run instead of failing it, windows the platform refuses are halved down to a day, per-window
// files survive a partial failure and Ctrl-C.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { until } from '../helpers/wait.js';

const env = (sandbox: Sandbox, dir: string) => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
});
const files = (dir: string) => readdirSync(dir).filter((name) => name !== '.config').sort();
const csv = (path: string) => parse(readFileSync(path, 'utf8')) as string[][];
const FAST = ['--poll-interval', '20ms'];

/** One report and the same request chunked, both to CSV: the two files, parsed. */
async function mergedAndSingle(sandbox: Sandbox, dir: string, request: string[], chunk: string[], reference: Sandbox = sandbox) {
  const single = await runCli(['run', 'buyer', ...request, ...FAST, '-q', '-o', join(dir, 'single.csv')], { env: env(reference, dir) });
  expect(single.stderr).toBe('');
  const merged = await runCli(['run', 'buyer', ...request, ...chunk, ...FAST, '-o', join(dir, 'merged.csv')], { env: env(sandbox, dir) });
  expect(merged.code, merged.stderr).toBe(0);
  return { single: csv(join(dir, 'single.csv')), merged: csv(join(dir, 'merged.csv')), stderr: merged.stderr };
}

describe('run --chunk: the merged output equals one report', () => {
  it('DAILY by day, 10 days: row for row, in chronological order; off a terminal one line per window', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const { single, merged, stderr } = await mergedAndSingle(sandbox, dir,
        ['--since', '2026-11-01', '--until', '2026-11-10', '--breakdowns', 'DAILY,CAMPAIGN,COUNTRY'], ['--chunk', 'day', '--concurrency', '4']);
      expect(merged.length).toBeGreaterThan(20);
      expect(merged).toEqual(single);
      // a log, not a terminal: each window's download, the file, the closing line; the rest with -v
      const lines = stderr.trimEnd().split('\n');
      expect(lines.filter((line) => /^2026-11-\d\d: downloaded \d+ rows?, /.test(line))).toHaveLength(10);
      expect(lines.slice(10)).toEqual([expect.stringMatching(/^2026-11-01\.\.2026-11-10: wrote \d+ rows to .*merged\.csv$/), expect.stringMatching(/10 windows merged: \d+ rows → .*merged\.csv \(csv\)$/)]);
      expect(stderr).not.toMatch(/submitted|ready after|downloading report/);
      expect(files(dir)).toEqual(['merged.csv', 'single.csv']);
    });
  });

  it('HOURLY across both DST days (23 and 25 hours), chunked by day and by 5h', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      for (const [since, until] of [['2026-03-28', '2026-03-30'], ['2026-10-24', '2026-10-26']]) {
        for (const chunk of ['day', '5h']) {
          const { single, merged } = await mergedAndSingle(sandbox, dir,
            ['--since', since as string, '--until', until as string, '--breakdowns', 'HOURLY,COUNTRY', '--metrics', 'displays,clicks'], ['--chunk', chunk]);
          expect(merged).toEqual(single);
          const hours = new Set(merged.slice(1).map((row) => row[0]));
          expect(hours.size).toBe(since === '2026-03-28' ? 71 : 73);
        }
      }
    });
  });

  it('MONTHLY by month, clipped at both ends', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const { single, merged } = await mergedAndSingle(sandbox, dir,
        ['--since', '2026-06-10', '--until', '2026-09-05', '--breakdowns', 'MONTHLY,CAMPAIGN'], ['--chunk', 'month']);
      expect(merged).toEqual(single);
    });
  });

  it('RANGE by week: rows of each country summed, decimals exact, as the one report writes them', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const { single, merged } = await mergedAndSingle(sandbox, dir,
        ['--since', '2026-10-01', '--until', '2026-10-31', '--breakdowns', 'RANGE,COUNTRY'], ['--chunk', 'week', '--concurrency', '8']);
      expect(merged).toEqual(single); // the texts, so 0.1 + 0.2 written 0.30000000000000004 would fail
      expect(merged.flat().some((cell) => /^\d+\.\d{6,}$/.test(cell))).toBe(true);
    });
  });

  it('NDJSON and JSON merged: the rows of one report, in order; JSON on stdout with --json', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const request = ['--since', '2026-11-01', '--until', '2026-11-04', '--breakdowns', 'DAILY,COUNTRY'];
      const single = await runCli(['run', 'buyer', ...request, ...FAST, '--json', '-q'], { env: env(sandbox, dir) });
      const merged = await runCli(['run', 'buyer', ...request, ...FAST, '--json', '-q', '--chunk', 'day'], { env: env(sandbox, dir) });
      expect(merged.code, merged.stderr).toBe(0);
      const one = JSON.parse(single.stdout);
      const many = JSON.parse(merged.stdout);
      expect(many.data).toEqual(one.data);
      expect(many.summary).toEqual(one.summary);
      const nd = await runCli(['run', 'buyer', ...request, ...FAST, '-q', '--chunk', '2d', '-o', join(dir, 'rows.ndjson')], { env: env(sandbox, dir) });
      expect(nd.code, nd.stderr).toBe(0);
      const lines = readFileSync(join(dir, 'rows.ndjson'), 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line));
      expect(lines).toEqual(one.data);
    });
  });
});

describe('run --chunk: concurrency, throttling, bisection', () => {
  it('never more than --concurrency reports at once (the sandbox counts)', async () => {
    await withSandbox({ workMsPerDay: 150 }, async (sandbox, dir) => {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-12', '--breakdowns', 'DAILY', '--chunk', 'day',
        '--concurrency', '3', ...FAST, '-q', '-o', join(dir, 'out.csv')], { env: env(sandbox, dir) });
      expect(result.code, result.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(12);
      expect(sandbox.stats().peakOpen).toBe(3);
    });
  });

  it('429 with Retry-After from --max-running: the run slows down and completes, output whole', async () => {
    await withSandbox({ workMsPerDay: 200, maxRunning: 2 }, async (sandbox, dir) => {
      const request = ['--since', '2026-11-01', '--until', '2026-11-08', '--breakdowns', 'DAILY,COUNTRY'];
      const result = await runCli(['run', 'buyer', ...request, '--chunk', 'day', '--concurrency', '6', ...FAST, '-v', '-o', join(dir, 'out.csv')],
        { env: env(sandbox, dir), timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
      expect(sandbox.stats().refused).toBeGreaterThan(0);
      expect(result.stderr).toMatch(/too many reports in progress; at most \d+ at once now/);
      expect(sandbox.stats().peakInProgress).toBeLessThanOrEqual(2);
      const single = await runCli(['run', 'buyer', ...request, ...FAST, '-q', '-o', join(dir, 'single.csv')], { env: env(sandbox, dir) });
      expect(single.code).toBe(0);
      expect(csv(join(dir, 'out.csv'))).toEqual(csv(join(dir, 'single.csv')));
    });
  }, 150_000);

  it('a window refused as too much data is halved down to what the platform accepts', async () => {
    // the same data (same seed) from a platform that accepts the whole period, for the reference
    await withSandbox({}, (reference) => withSandbox({ failOverDays: 2 }, async (sandbox, dir) => {
      const { single, merged, stderr } = await mergedAndSingle(sandbox, dir,
        ['--since', '2026-11-02', '--until', '2026-11-15', '--breakdowns', 'DAILY,COUNTRY'], ['--chunk', 'week'], reference);
      expect(merged).toEqual(single);
      expect(stderr).toMatch(/^2026-11-02\.\.2026-11-08: report [0-9a-f]+ failed \(.*too much data.*\); splitting into 2026-11-02\.\.2026-11-05 and 2026-11-06\.\.2026-11-08$/m);
      expect(sandbox.stats().submitted).toBe(2 + 4 + 8); // 2 weeks refused, their 4 halves refused, 8 pieces of 1 or 2 days
    }));
  });

  it('down to one day, then the run fails naming that day: exit 6, no file', async () => {
    await withSandbox({ failOverDays: 0 }, async (sandbox, dir) => {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-05', '--breakdowns', 'DAILY', '--chunk', '2d',
        ...FAST, '-o', join(dir, 'out.csv')], { env: env(sandbox, dir) });
      expect(result.code).toBe(6);
      expect(result.stderr).toMatch(/window 2026-11-0[2-5] \(split down from 2026-11-0\d\.\.2026-11-0\d\), report [0-9a-f]+: .*too much data/);
      expect(files(dir)).toEqual([]);
    });
  });

  it('--no-split: the first refusal is final', async () => {
    await withSandbox({ failOverDays: 2 }, async (sandbox, dir) => {
      const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-08', '--breakdowns', 'DAILY', '--chunk', 'week', '--no-split',
        ...FAST, '-o', join(dir, 'out.csv')], { env: env(sandbox, dir) });
      expect(result.code).toBe(6);
      expect(result.stderr).toMatch(/window 2026-11-02\.\.2026-11-08, report [0-9a-f]+: /);
      expect(sandbox.stats().submitted).toBe(1);
    });
  });
});

describe('run --chunk with one file per window', () => {
  it('partial failure: the windows done are written, exit 6 lists the failed ones and the command retrying only those', async () => {
    await withSandbox({ failOverDays: 1 }, async (sandbox, dir) => {
      // 2-day windows are refused, the clipped 1-day window at the end is not
      const result = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-05', '--breakdowns', 'DAILY,COUNTRY', '--chunk', '2d', '--no-split',
        ...FAST, '-o', join(dir, 'days', '{since}_{until}.csv')], { env: env(sandbox, dir) });
      expect(result.code).toBe(6);
      expect(readdirSync(join(dir, 'days'))).toEqual(['2026-11-05_2026-11-05.csv']);
      expect(csv(join(dir, 'days', '2026-11-05_2026-11-05.csv')).length).toBeGreaterThan(2);
      expect(result.stderr).toMatch(/^error: 2 windows failed, 1 written \(listed above\)$/m);
      expect(result.stderr).toMatch(/^failed: window 2026-11-01\.\.2026-11-02, report [0-9a-f]+: .*too much data/m);
      const retries = result.stderr.split('\n').filter((line) => line.startsWith('retry: '));
      expect(retries.map((line) => line.slice(7).replace(/'[^']*days[^']*'/, 'OUT'))).toEqual([
        // the two failed windows are adjacent: one command requests both, still by 2 days
        'reporting run buyer --breakdowns DAILY,COUNTRY --chunk 2d --no-split --poll-interval 20ms -o OUT --since 2026-11-01 --until 2026-11-04',
      ]);
    });
  });

  it('off a terminal, a window\'s line is its file written; -v adds every state change', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const args = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--chunk', 'day', ...FAST, '-o', join(dir, 'day-{since}.csv')];
      const first = await runCli(args, { env: env(sandbox, dir) });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr.trimEnd().split('\n').sort()).toEqual([
        expect.stringMatching(/^2026-11-01: wrote \d+ rows to .*day-2026-11-01\.csv$/),
        expect.stringMatching(/^2026-11-02: wrote \d+ rows to .*day-2026-11-02\.csv$/),
        expect.stringMatching(/^2026-11-03: wrote \d+ rows to .*day-2026-11-03\.csv$/),
        'buyer: 3 windows written (' + join(dir, 'day-{since}.csv') + ')',
      ]);
      const verbose = await runCli([...args, '-v'], { env: env(sandbox, dir) });
      expect(verbose.code, verbose.stderr).toBe(0);
      for (const day of ['01', '02', '03']) {
        expect(verbose.stderr).toMatch(new RegExp(`^2026-11-${day}: submitted buyer report [0-9a-f]+$`, 'm'));
        expect(verbose.stderr).toMatch(new RegExp(`^2026-11-${day}: downloaded \\d+ rows`, 'm'));
        expect(verbose.stderr).toMatch(new RegExp(`^2026-11-${day}: wrote \\d+ rows to .*day-2026-11-${day}\\.csv$`, 'm'));
      }
    });
  });

  it('every format, one file per day, each equal to that day alone', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      for (const format of ['csv', 'ndjson', 'json']) {
        const result = await runCli(['run', 'seller', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,APP', '--chunk', 'day',
          ...FAST, '-q', '-o', join(dir, format, `{side}-{since}.${format}`)], { env: env(sandbox, dir) });
        expect(result.code, result.stderr).toBe(0);
        expect(readdirSync(join(dir, format))).toEqual(['seller-2026-11-01', 'seller-2026-11-02', 'seller-2026-11-03'].map((name) => `${name}.${format}`));
      }
      const day = await runCli(['run', 'seller', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY,APP', ...FAST, '-q', '--json'], { env: env(sandbox, dir) });
      const report = JSON.parse(day.stdout);
      expect(JSON.parse(readFileSync(join(dir, 'json', 'seller-2026-11-02.json'), 'utf8'))).toEqual(report);
      expect(readFileSync(join(dir, 'ndjson', 'seller-2026-11-02.ndjson'), 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line))).toEqual(report.data);
      expect(csv(join(dir, 'csv', 'seller-2026-11-02.csv')).length).toBe(report.data.length + 1);
    });
  });

  it('Ctrl-C with windows in flight: their report IDs are listed, the finished file is whole, nothing else is left', async () => {
    await withSandbox({ workMsPerDay: 1500 }, async (sandbox, dir) => {
      // windows of 3, 3 and 1 days: the last is done long before the others
      const child = startCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-07', '--breakdowns', 'DAILY', '--chunk', '3d',
        ...FAST, '-o', join(dir, 'out', '{since}.csv')], { env: env(sandbox, dir) });
      const done = collect(child);
      await until(() => existsSync(join(dir, 'out', '2026-11-07.csv')), 'the 1-day window written', 30_000);
      child.kill('SIGINT');
      const result = await done;
      expect(result.code).toBe(130);
      const long = sandbox.reports().filter((report) => report.until - report.since > 86400).map((report) => report.id);
      expect(long).toHaveLength(2);
      expect(result.stderr).toMatch(/reports still in progress: [0-9a-f]+ \(2026-11-01\.\.2026-11-03\), [0-9a-f]+ \(2026-11-04\.\.2026-11-06\)/);
      for (const id of long) expect(result.stderr).toContain(id);
      expect(readdirSync(join(dir, 'out'))).toEqual(['2026-11-07.csv']);
      expect(csv(join(dir, 'out', '2026-11-07.csv'))[0]).toContain('date');
    });
  });
});
