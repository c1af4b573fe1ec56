// Commands run in-process through main(), with fake streams, environment and clock.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli as main } from '../../src/cli/program.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { tempDir } from '../helpers/tmp.js';
import { startHostile } from '../hostile/server.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 30 });
});
afterAll(() => sandbox.close());

function envFor(extra: Record<string, string> = {}) {
  return { REPORTING_CONFIG_DIR: tempDir(), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, ...extra };
}

describe('parsing, apart from behaviour', () => {
  it('--version and --help print to stdout and exit 0', async () => {
    const version = fakeContext();
    expect(await main(argv('--version'), version.ctx)).toBe(0);
    expect(version.stdout.text).toBe('0.0.0-test\n');
    const help = fakeContext();
    expect(await main(argv('--help'), help.ctx)).toBe(0);
    expect(help.stdout.text).toMatch(/Usage: reporting/);
    for (const name of ['login', 'logout', 'whoami', 'buyer', 'seller', 'status', 'campaigns', 'sandbox']) {
      expect(help.stdout.text).toContain(`  ${name}`);
    }
    expect(help.stderr.text).toBe('');
  });

  it('every help fits 100 columns, says each note once, and offers only what the command takes', async () => {
    const helpOf = async (...args: string[]) => {
      const { ctx, stdout } = fakeContext();
      expect(await main(argv(...args, '--help'), ctx)).toBe(0);
      return stdout.text;
    };
    const names = ['', 'login', 'logout', 'whoami', 'buyer', 'seller', 'status', 'download', 'run', 'campaigns', 'schema', 'sandbox', 'completion'];
    for (const name of names) {
      const text = await helpOf(...(name ? [name] : []));
      for (const line of text.split('\n')) expect(`${name}: ${line.length > 100 ? line : 'ok'}`).toBe(`${name}: ok`);
      expect(text, name).not.toMatch(/\) \(/);
    }
    expect(await helpOf('run')).toMatch(/--advertiser-id <ids> +advertiser IDs \(admin only, buyer only\)/);
    // each command that writes columns names both words, and the default
    for (const name of ['run', 'download', 'schema']) {
      const help = (await helpOf(name)).replace(/\s+/g, ' ');
      expect(help, name).toMatch(/--columns <list> .*`requested` \(the default/);
      expect(help, name).toMatch(/`all` \(every field of/);
    }
  });

  it('`reporting help run` is `reporting run --help`; `help` alone the main help; `help rnu` a usage error', async () => {
    for (const [args, same] of [[['help', 'run'], ['run', '--help']], [['help'], ['--help']], [['help', 'download'], ['download', '-h']]]) {
      const asked = fakeContext();
      const usual = fakeContext();
      expect(await main(argv(...args!), asked.ctx)).toBe(0);
      expect(await main(argv(...same!), usual.ctx)).toBe(0);
      expect(asked.stdout.text).toBe(usual.stdout.text);
      expect(asked.stderr.text).toBe('');
    }
    const typo = fakeContext();
    expect(await main(argv('help', 'rnu'), typo.ctx)).toBe(2);
    expect(typo.stderr.text).toBe('error: unknown command \'rnu\'; did you mean run?\nhint: see `reporting --help`\n');
  });

  it('no command prints the help on stderr and exits 2', async () => {
    const { ctx, stderr, stdout } = fakeContext();
    expect(await main(argv(), ctx)).toBe(2);
    expect(stderr.text).toMatch(/Usage: reporting/);
    expect(stdout.text).toBe('');
  });

  it('an unknown command or option is a one-line usage error with a suggestion', async () => {
    const command = fakeContext();
    expect(await main(argv('campains'), command.ctx)).toBe(2);
    expect(command.stderr.text).toMatch(/^error: unknown command 'campains'/);
    expect(command.stderr.text).toMatch(/Did you mean campaigns\?/);
    const option = fakeContext();
    expect(await main(argv('buyer', '--sinse', 'today'), option.ctx)).toBe(2);
    expect(option.stderr.text).toMatch(/unknown option '--sinse'/);
    expect(option.stderr.text).toMatch(/Did you mean --since\?/);
    expect(option.stderr.text.trim().split('\n')).toHaveLength(2);
  });

  it('repeatable, comma-separated options accumulate; a usage error makes no request', async () => {
    const before = sandbox.requests.length;
    const { ctx, stderr } = fakeContext({ env: envFor() });
    const code = await main(argv('buyer', '--since', 'today', '--until', 'today', '--metrics', 'displays', '--metrics', 'clicks,nope'), ctx);
    expect(code).toBe(2);
    expect(stderr.text).toMatch(/unknown metric "nope"/);
    expect(sandbox.requests.length).toBe(before);
  });
});

describe('buyer and seller', () => {
  it('print the report ID, or {side, reportId, status} with --json', async () => {
    const plain = fakeContext({ env: envFor() });
    expect(await main(argv('buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'daily,country'), plain.ctx)).toBe(0);
    expect(plain.stdout.text).toMatch(/^[0-9a-f]{24}\n$/);
    const json = fakeContext({ env: envFor() });
    expect(await main(argv('seller', '--since', '-7d', '--until', 'today', '--json', '--app-id', '9001'), json.ctx)).toBe(0);
    const parsed = JSON.parse(json.stdout.text);
    expect(parsed).toEqual({ side: 'seller', reportId: expect.stringMatching(/^[0-9a-f]{24}$/), status: 'progress' });
  });

  it('sends the same report as JSON with --body json', async () => {
    const { ctx, stdout } = fakeContext({ env: envFor() });
    expect(await main(argv('buyer', '--since', 'yesterday', '--until', 'yesterday', '--body', 'json', '--breakdowns', 'HOURLY'), ctx)).toBe(0);
    expect(stdout.text).toMatch(/^[0-9a-f]{24}\n$/);
    // what went over the wire: a JSON object with the same names, not a form
    const server = await startHostile();
    try {
      const sent = fakeContext({ env: envFor({ REPORTING_BASE_URL: server.baseUrl }) });
      const args = ['buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'daily,country', '--campaign-id', '7'];
      expect(await main(argv(...args, '--body', 'json'), sent.ctx)).toBe(0);
      expect(await main(argv(...args), fakeContext({ env: envFor({ REPORTING_BASE_URL: server.baseUrl }) }).ctx)).toBe(0);
      const [json, form] = server.received.filter((request) => request.route === 'buyer');
      expect(json?.headers['content-type']).toBe('application/json');
      expect(JSON.parse(json?.body ?? '')).toMatchObject({ metrics: expect.stringContaining('displays,'), breakdowns: ['DAILY', 'COUNTRY'], campaignId: ['7'] });
      expect(form?.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(form?.body).toContain('breakdowns[0]=DAILY&breakdowns[1]=COUNTRY');
    } finally {
      await server.close();
    }
  });
});

describe('status', () => {
  it('prints progress, then ready with --wait, and --json gives {reportId, status, message}', async () => {
    const slow = await startSandbox({ port: 0, readyDelayMs: 800 });
    try {
      const env = { ...envFor(), REPORTING_BASE_URL: slow.baseUrl, REPORTING_TOKEN: slow.token };
      const submit = fakeContext({ env });
      await main(argv('buyer', '--since', 'yesterday', '--until', 'yesterday'), submit.ctx);
      const id = submit.stdout.text.trim();
      const now = fakeContext({ env });
      expect(await main(argv('status', id), now.ctx)).toBe(0);
      expect(now.stdout.text).toBe('progress\n');
      const waited = fakeContext({ env });
      expect(await main(argv('status', id, '--wait', '--json', '--poll-interval', '50ms'), waited.ctx)).toBe(0);
      expect(JSON.parse(waited.stdout.text)).toEqual({ reportId: id, status: 'ready', message: 'ready' });
    } finally {
      await slow.close();
    }
  });
});

describe('status of a failed report', () => {
  it('stdout is the status word alone; the server\'s message is in the error on stderr (exit 6)', async () => {
    const failing = await startSandbox({ port: 0, readyDelayMs: 0, failOverDays: 1 });
    try {
      const env = { ...envFor(), REPORTING_BASE_URL: failing.baseUrl, REPORTING_TOKEN: failing.token };
      const submit = fakeContext({ env });
      await main(argv('buyer', '--since', '2026-11-01', '--until', '2026-11-05'), submit.ctx);
      const id = submit.stdout.text.trim();
      for (const args of [[], ['--wait', '--poll-interval', '50ms']]) {
        const status = fakeContext({ env });
        expect(await main(argv('status', id, ...args), status.ctx)).toBe(6);
        if (args.length === 0) expect(status.stdout.text).toBe('failed\n');
        expect(status.stderr.text).toMatch(new RegExp(`^error: report ${id} ended in status "failed": too much data`));
        const json = fakeContext({ env });
        expect(await main(argv('status', id, '--json', ...args), json.ctx)).toBe(6);
        expect(JSON.parse(json.stdout.text)).toMatchObject({ reportId: id, status: 'failed', message: expect.stringMatching(/^too much data/) });
      }
    } finally {
      await failing.close();
    }
  });
});

describe('campaigns', () => {
  it('prints a table with campaign, advertiser, dates and ad unit count', async () => {
    const { ctx, stdout } = fakeContext({ env: envFor() });
    expect(await main(argv('campaigns'), ctx)).toBe(0);
    const [header, first] = stdout.text.split('\n');
    expect(header).toMatch(/^CAMPAIGN\s+NAME\s+ADVERTISER\s+START\s+END\s+AD UNITS$/);
    expect(first).toMatch(/^202401\s+Always-on "Marque", FR 2024\s+\S.*\s+2024-01-01\s+2024-12-31\s+\d$/);
  });

  it('--format csv -o writes one row per ad unit, to a path relative to the working directory', async () => {
    const cwd = tempDir();
    const { ctx, stderr } = fakeContext({ env: envFor(), cwd });
    expect(await main(argv('campaigns', '--format', 'csv', '-o', 'out/campaigns.csv'), ctx)).toBe(0);
    const rows = parse(readFileSync(join(cwd, 'out', 'campaigns.csv'), 'utf8')) as string[][];
    expect(rows[0]).toEqual(['advertiserId', 'advertiserName', 'campaignId', 'campaignName', 'campaignStartDate', 'campaignEndDate', 'adunitId', 'adunitName']);
    const json = fakeContext({ env: envFor() });
    await main(argv('campaigns', '--json'), json.ctx);
    const adunits = (JSON.parse(json.stdout.text) as { adunits: unknown[] }[]).reduce((sum, c) => sum + c.adunits.length, 0);
    expect(rows.length - 1).toBe(adunits);
    expect(stderr.text).toMatch(/^Wrote 40 campaigns to .*out\/campaigns\.csv\n$/);
  });

  it('--json prints the array as the API gave it', async () => {
    const { ctx, stdout } = fakeContext({ env: envFor() });
    expect(await main(argv('campaigns', '--json'), ctx)).toBe(0);
    const campaigns = JSON.parse(stdout.text);
    expect(campaigns.length).toBe(40);
    expect(campaigns[0].adunits[0]).toEqual({ adunitName: expect.any(String), adunitId: '20240101' });
  });
});

describe('whoami', () => {
  it('tells the profile, base URL and where the token comes from, never the token', async () => {
    const { ctx, stdout } = fakeContext({ env: envFor() });
    expect(await main(argv('whoami', '--json'), ctx)).toBe(0);
    const info = JSON.parse(stdout.text);
    expect(info).toMatchObject({ profile: 'default', baseUrl: sandbox.baseUrl, baseUrlFrom: 'REPORTING_BASE_URL', token: 'from REPORTING_TOKEN' });
    expect(stdout.text).not.toContain(sandbox.token);
  });
});
