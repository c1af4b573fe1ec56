// The calendar's words through the CLI (issue 33, item 1): `--since last-week --until last-week`
// is last Monday to last Sunday on the Paris calendar, `last-month` the whole month, read back
// from the CSV the run wrote (csv-parse).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';

describe('calendar words', () => {
  it.each([
    ['last-week', '2026-11-09', '2026-11-15', 7],
    ['last-month', '2026-10-01', '2026-10-31', 31],
    ['this-month', '2026-11-01', '2026-11-30', 30],
    ['-2w', '2026-11-02', '2026-11-08', 7],
  ])('--since %s --until the same: one row a day from %s to %s', async (word, first, last, days) => {
    await withSandbox({}, async (sandbox, dir) => {
      // Saturday 21 November 2026, 12:00 in Paris
      const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: '2026-11-21T12:00' };
      const file = join(dir, 'out.csv');
      const result = await runCli(['run', 'buyer', '--since', word, '--until', word, '--breakdowns', 'DAILY', '-o', file, '-q'], { env });
      expect(result.code, result.stderr).toBe(0);
      const dates = (parse(readFileSync(file), { columns: true }) as { date: string }[]).map((row) => row.date);
      expect(dates).toHaveLength(days);
      expect(dates[0]).toBe(first);
      expect(dates.at(-1)).toBe(last);
    });
  });

  it('a misspelt word is refused with the word it meant', async () => {
    const result = await runCli(['run', 'buyer', '--since', 'last month', '--until', 'yesterday'], { env: { REPORTING_TOKEN: 'x'.repeat(40), REPORTING_BASE_URL: 'http://127.0.0.1:9' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: --since "last month": is not a time this tool understands; did you mean last-month\?$/m);
  });
});
