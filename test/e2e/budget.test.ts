// A window waiting for the budget of `jobs run` records its intent to submit (`submitting`) as
// soon as the report holding the slot it will get is ready (fleet/budget.ts readying): that write
// is then off the path from one report's download to the next one's submit. Stopped while it
// waits, the run takes that intent back: nothing was submitted, and the next run must not warn of
// a report of unknown ID.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StateDoc } from '../../src/engine/state-doc.js';
import { collect, startCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { until } from '../helpers/wait.js';

const stateOf = (dir: string, job: string): StateDoc | undefined => {
  try {
    return JSON.parse(readFileSync(join(dir, 'state', `${job}.json`), 'utf8')) as StateDoc;
  } catch {
    return undefined;
  }
};

describe('jobs run: the intent of a window waiting for the budget', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`is recorded while the slot's report downloads, and taken back when the run stops first (${signal})`, async () => {
      // reports stay in progress until the test moves the sandbox's clock; each download is long
      let at = Date.now();
      await withSandbox({ now: () => at, accounts: 2, scaleRows: 1_500_000 }, async (sandbox, dir) => {
        writeFileSync(join(dir, 'reporting.yaml'), [
          'version: 1', 'concurrency: 1', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-01', '  chunk: day',
          '  poll-interval: 20ms', '  state: state/{job}.json', '  output: out/{job}/{since}.csv', 'jobs:',
          '  - name: first', '    side: buyer', '    profile: one', '    breakdowns: DAILY',
          '  - name: second', '    side: buyer', '    profile: two', '    breakdowns: DAILY', '',
        ].join('\n'));
        const env = {
          REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl,
          REPORTING_TOKEN_ONE: sandbox.accounts[0]?.token as string, REPORTING_TOKEN_TWO: sandbox.accounts[1]?.token as string,
        };
        const child = startCli(['jobs', 'run'], { env, cwd: dir });
        const done = collect(child, { timeoutMs: 60_000 });
        await until(() => stateOf(dir, 'first')?.windows[0]?.reportId !== null && stateOf(dir, 'first')?.windows[0]?.reportId !== undefined, 'the first report submitted');
        expect(stateOf(dir, 'second')?.windows[0]?.submitting ?? null, 'no intent before a slot is about to be freed').toBeNull();
        // the first report becomes ready: its long download holds the one slot, and the second
        // window records its intent meanwhile, submitting nothing yet
        at += 60_000;
        await until(() => typeof stateOf(dir, 'second')?.windows[0]?.submitting === 'string', 'the second window\'s intent recorded');
        expect(sandbox.stats().submitted, 'the second report not submitted yet').toBe(1);
        child.kill(signal);
        const result = await done;
        expect(result.code).toBe(signal === 'SIGINT' ? 130 : 143);
        expect(sandbox.stats().submitted).toBe(1);
        const second = stateOf(dir, 'second')?.windows[0];
        expect(second, 'the second window stays planned').toMatchObject({ status: 'pending', reportId: null, submitting: null });
        // the job with a report in progress says it is resumed; the one with none, that the rest is fetched
        expect(result.stderr).toMatch(/^first: hint: the next run with this --state resumes it \(or `reporting download ID --wait` picks it up\); report still in progress: [0-9a-f]+ \(2026-11-01\)$/m);
        expect(result.stderr).toMatch(/^second: hint: the next run with this --state fetches what is left$/m);
      });
    }, 90_000);
  }

  it('is recorded a little before the slot\'s report is expected ready, once reports of its kind were seen', async () => {
    // the sandbox's clock moves only when the test says: the first report is ready when the test
    // moves it, after about a second; the second is never ready until the end, yet the third
    // window, expecting it ready after about as long as the first took, records its intent
    let at = Date.now();
    let clock = () => at;
    await withSandbox({ now: () => clock(), accounts: 3 }, async (sandbox, dir) => {
      writeFileSync(join(dir, 'reporting.yaml'), [
        'version: 1', 'concurrency: 1', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-01', '  chunk: day',
        '  state: state/{job}.json', '  output: out/{job}/{since}.csv', 'jobs:',
        ...['first', 'second', 'third'].flatMap((name) => [`  - name: ${name}`, '    side: buyer', `    profile: ${name}`, '    breakdowns: DAILY']), '',
      ].join('\n'));
      const env = {
        REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl,
        ...Object.fromEntries(['FIRST', 'SECOND', 'THIRD'].map((name, i) => [`REPORTING_TOKEN_${name}`, sandbox.accounts[i]?.token as string])),
      };
      const child = startCli(['jobs', 'run'], { env, cwd: dir });
      const done = collect(child, { timeoutMs: 60_000 });
      try {
        await until(() => typeof stateOf(dir, 'first')?.windows[0]?.reportId === 'string', 'the first report submitted');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        at += 60_000;
        await until(() => typeof stateOf(dir, 'second')?.windows[0]?.reportId === 'string', 'the second report submitted');
        const second = Date.now();
        // the second report stays in progress: only the expectation can tell the third window
        await until(() => typeof stateOf(dir, 'third')?.windows[0]?.submitting === 'string', 'the third window\'s intent recorded', 10_000);
        expect(Date.now() - second, 'told about when the second report was expected ready, not at once').toBeGreaterThan(400);
        expect(sandbox.stats().submitted, 'the third report not submitted yet').toBe(2);
        expect(stateOf(dir, 'second')?.windows[0]?.status).not.toBe('done');
      } finally {
        // the clock runs again, a minute on: every report is ready
        const offset = at + 60_000 - Date.now();
        clock = () => Date.now() + offset;
      }
      const result = await done;
      expect(result.code, result.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(3);
      expect(stateOf(dir, 'third')?.windows[0]).toMatchObject({ status: 'done', submitting: null });
    });
  }, 90_000);
});
