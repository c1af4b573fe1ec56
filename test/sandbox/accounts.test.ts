// The sandbox's accounts and clock (issue 33, item 5): `--accounts N` gives each account its own
// login, token, reports and seeded data, so that a job file over several profiles gets results
// that can be told apart; POST /sandbox/clock moves the clock while it runs, keeping its reports.

import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { call, sandboxEnv, withSandbox } from '../helpers/http.js';

const NOV_1 = 1793487600; // 2026-11-01T00:00:00+01:00
const NOV_1_END = 1793573999; // 2026-11-01T23:59:59+01:00
const report = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'COUNTRY', '--metrics', 'displays,clicks', '--poll-interval', '20ms', '-q'];
const rowsOf = (csv: string) => parse(csv, { columns: true }) as Record<string, string>[];

describe('sandbox --accounts', () => {
  it('each account its own login, token and numbers; account 1 keeps the numbers of a sandbox of one account', async () => {
    const single = await withSandbox({}, async (sandbox, dir) => {
      const out = await runCli(report, { env: sandboxEnv(sandbox, dir) });
      expect(out.code, out.stderr).toBe(0);
      return out.stdout;
    });
    await withSandbox({ accounts: 3 }, async (sandbox, dir) => {
      expect(sandbox.accounts.map((a) => a.email)).toEqual(['demo@sandbox.test', 'demo2@sandbox.test', 'demo3@sandbox.test']);
      const outputs: string[] = [];
      for (const account of sandbox.accounts) {
        const out = await runCli(report, { env: { ...sandboxEnv(sandbox, dir), REPORTING_TOKEN: account.token } });
        expect(out.code, out.stderr).toBe(0);
        outputs.push(out.stdout);
      }
      expect(outputs[0]).toBe(single);
      // three accounts, three sets of numbers (read by csv-parse)
      const totals = outputs.map((csv) => rowsOf(csv).reduce((sum, row) => sum + Number(row.displays), 0));
      expect(new Set(totals).size).toBe(3);
      // each account's reports are its own
      expect(sandbox.reports().map((r) => r.account)).toEqual([1, 2, 3]);

      // a login with account 2's email and password gives a token of account 2: the same numbers
      const home = `${dir}/login`;
      const login = await runCli(['login', '--base-url', sandbox.baseUrl, '--email', 'demo2@sandbox.test', '--password-stdin', '-q'], { env: { HOME: home, REPORTING_CONFIG_DIR: `${home}/.config` }, input: 'sandbox-password-2' });
      expect(login.code, login.stderr).toBe(0);
      const again = await runCli(report, { env: { HOME: home, REPORTING_CONFIG_DIR: `${home}/.config` } });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe(outputs[1]);
      // account 2's password does not open account 3
      const wrong = await call(sandbox, '/auth-reporting', { token: null, form: { email: 'demo3@sandbox.test', password: 'sandbox-password-2' } });
      expect(wrong.status).toBe(401);
    });
  });

  it("another account's report ID is unknown to a token: 404 on status and download", async () => {
    await withSandbox({ accounts: 2 }, async (sandbox) => {
      const [one, two] = sandbox.accounts;
      const submitted = await call(sandbox, '/buyer-reporting', { token: one?.token, form: { since: NOV_1, until: NOV_1_END, metrics: 'displays' } });
      const id = submitted.json.response.report_id as string;
      expect((await call(sandbox, '/status-reporting', { token: one?.token, form: { id } })).status).toBe(200);
      expect((await call(sandbox, '/status-reporting', { token: two?.token, form: { id } })).status).toBe(404);
      expect((await call(sandbox, '/download-reporting', { token: two?.token, form: { id } })).status).toBe(404);
    });
  });

  it('`reporting sandbox --accounts 3 --json` prints every account', async () => {
    const child = startCli(['sandbox', '--port', '0', '--accounts', '3', '--json']);
    const line = await new Promise<string>((resolve) => {
      let text = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('\n')) resolve(text.split('\n')[0] as string);
      });
    });
    child.kill('SIGINT');
    const info = JSON.parse(line) as { token: string; accounts: { email: string; password: string; token: string }[] };
    expect(info.accounts.map((a) => a.email)).toEqual(['demo@sandbox.test', 'demo2@sandbox.test', 'demo3@sandbox.test']);
    expect(info.accounts[0]?.token).toBe(info.token);
    expect(new Set(info.accounts.map((a) => a.token)).size).toBe(3);
  });
});

describe('POST /sandbox/clock', () => {
  it('sets the clock while the sandbox runs: reports submitted before are kept (resumable), today follows; a bad time is a 400', async () => {
    await withSandbox({ readyDelayMs: 60_000 }, async (sandbox) => {
      const submitted = await call(sandbox, '/buyer-reporting', { form: { since: NOV_1, until: NOV_1_END, metrics: 'displays' } });
      const id = submitted.json.response.report_id as string;
      expect((await call(sandbox, '/status-reporting', { form: { id } })).json.response.status).toBe('progress');
      // days later: the report (60 s of work) is ready, and still there
      const set = await fetch(`${sandbox.baseUrl}/sandbox/clock`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ now: '2026-12-02T05:15:00' }) });
      expect(set.status).toBe(200);
      expect((await set.json()) as { now: string }).toEqual({ now: expect.stringMatching(/^2026-12-02T04:15:0\d\.\d{3}Z$/) });
      expect(new Date(sandbox.now()).toISOString()).toMatch(/^2026-12-02T04:15:0\d/);
      expect((await call(sandbox, '/status-reporting', { form: { id } })).json.response.status).toBe('ready');
      const read = await fetch(`${sandbox.baseUrl}/sandbox/clock`);
      expect(((await read.json()) as { now: string }).now).toMatch(/^2026-12-02T04:15/);
      const bad = await fetch(`${sandbox.baseUrl}/sandbox/clock`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ now: 'next tuesday' }) });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { response: { error_id: string; error: string } }).response).toMatchObject({ error_id: 'INVALID_PARAMETER', error: expect.stringContaining('now "next tuesday"') });
      expect(new Date(sandbox.now()).toISOString(), 'a refused time leaves the clock').toMatch(/^2026-12-02T04:1/);
    });
  });
});
