// `run --help` ends with the exit codes (issue 21, item 4), and they are the codes the CLI uses
// (src/errors.ts EXIT) and the table of docs/exit-codes-and-logs.md lists.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { EXIT } from '../../src/errors.js';
import { argv, fakeContext } from '../helpers/ctx.js';

describe('exit codes in run --help', () => {
  it('lists every code the CLI exits with, as docs/exit-codes-and-logs.md does', async () => {
    const { ctx, stdout } = fakeContext();
    expect(await runCli(argv('run', '--help'), ctx)).toBe(0);
    const section = stdout.text.slice(stdout.text.indexOf('\nExit codes:\n'));
    const listed = [...section.matchAll(/^ {2}(\d+)\s/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual(Object.values(EXIT));
    const page = readFileSync(new URL('../../docs/exit-codes-and-logs.md', import.meta.url), 'utf8');
    const start = page.indexOf('\n## Exit codes\n');
    expect(start).toBeGreaterThan(0);
    const table = page.slice(start, page.indexOf('\n## ', start + 1));
    const documented = [...table.matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]));
    expect(documented).toEqual(Object.values(EXIT));
  });
});

describe('a mistyped side', () => {
  it('says the did-you-mean once, and the choices once (issue 21, item 8)', async () => {
    const { ctx, stderr } = fakeContext();
    expect(await runCli(argv('run', 'byer', '--since', 'today', '--until', 'today'), ctx)).toBe(2);
    expect(stderr.text).toBe('error: unknown side "byer"; did you mean buyer?\nhint: choose buyer, seller\n');
  });
});

describe('help lists what a command takes (issue 21, item 8)', () => {
  const help = async (...args: string[]) => {
    const { ctx, stdout } = fakeContext();
    expect(await runCli(argv(...args, '--help'), ctx)).toBe(0);
    return stdout.text;
  };

  it('buyer --help lists the metrics a buyer row carries, not requests; seller lists requests', async () => {
    const metrics = (text: string) => /--metrics <list>\s+metrics, comma-separated, repeatable \(default: all: ([^)]*)\)/.exec(text.replace(/\s+/g, ' '))?.[1];
    expect(metrics(await help('buyer'))).toBe('displays, clicks, downloads, leads, landings, revenueEuro, revenueDollar, eyesTrackings');
    expect(metrics(await help('seller'))).toMatch(/^requests, displays, /);
  });

  it('commands that send no request list no credentials or network options; the others do', async () => {
    for (const command of [['sandbox'], ['schema'], ['completion'], ['state'], ['state', 'show']]) {
      const text = await help(...command);
      expect(text, command.join(' ')).not.toMatch(/--profile|--base-url|--timeout|--retries|--body|Credentials:|Network options:/);
      expect(text, command.join(' ')).toMatch(/^ {2}-q, --quiet/m);
    }
    for (const command of [['run'], ['buyer'], ['download'], ['whoami']]) {
      expect(await help(...command), command.join(' ')).toMatch(/--base-url <url>[\s\S]*--timeout <duration>/);
    }
  });

  it('jobs does not offer --profile, which jobs run and plan refuse (each job names its profile); run does; jobs run offers --log-format', async () => {
    for (const command of [['jobs'], ['jobs', 'run'], ['jobs', 'plan'], ['jobs', 'list'], ['jobs', 'validate']]) {
      expect(await help(...command), command.join(' ')).not.toMatch(/--profile/);
    }
    expect(await help('jobs', 'run')).toMatch(/--base-url <url>[\s\S]*--timeout <duration>/);
    expect(await help('jobs', 'run')).toMatch(/^ {2}--log-format <format> /m);
    expect(await help('run')).toMatch(/^ {2}--profile <name> /m);
    const { ctx, stderr } = fakeContext();
    expect(await runCli(argv('jobs', 'run', '--profile', 'acme'), ctx)).toBe(2);
    expect(stderr.text).toMatch(/^error: --profile acme \(or REPORTING_PROFILE\) does not apply to jobs/);
  });
});
