// Flags apart from behaviour (the gh runF seam): each command line is parsed exactly as the CLI
// parses it, and the test reads the typed options the command would receive. Nothing runs.

import { describe, expect, it } from 'vitest';
import type { CampaignsOptions } from '../../src/commands/campaigns.js';
import type { CompletionOptions } from '../../src/commands/completion.js';
import type { DownloadOptions } from '../../src/commands/download.js';
import type { LoginOptions } from '../../src/commands/login.js';
import type { ReportOptions } from '../../src/commands/report.js';
import type { RunOptions } from '../../src/commands/run.js';
import type { SchemaOptions } from '../../src/commands/schema.js';
import type { StatusOptions } from '../../src/commands/status.js';
import { parseOptions } from '../helpers/ctx.js';

describe('run', () => {
  it('receives its side, report, output and waiting options typed', async () => {
    const { name, opts, code } = await parseOptions<RunOptions>(
      'run', 'SELLER', '--since', 'yesterday', '--until', 'today', '--metrics', 'displays,clicks', '--breakdowns', 'daily',
      '--app-id', '1,2', '--carrier', 'AT&T, Inc.', '-o', 'out.csv', '--columns', 'date,appId', '--columns', 'displays',
      '--poll-interval', '2s', '--max-wait', '10m', '--no-validate',
    );
    expect(code).toBe(0);
    expect(name).toBe('run');
    expect(opts.side).toBe('seller');
    expect(opts.report).toEqual({
      since: 'yesterday', until: 'today', metrics: ['displays', 'clicks'], breakdowns: ['daily'],
      filters: { appId: ['1', '2'], carrier: ['AT&T, Inc.'] }, params: [], validate: false,
    });
    expect(opts.output).toMatchObject({ output: 'out.csv', columns: ['date', 'appId', 'displays'] });
    expect(opts.wait).toEqual({ pollIntervalMs: 2000, maxWaitMs: 600_000 });
  });

  it('defaults: every metric list empty (the side decides), validation on, 30 minutes of waiting', async () => {
    const { opts } = await parseOptions<RunOptions>('run', 'buyer');
    expect(opts.report).toMatchObject({ metrics: [], breakdowns: [], filters: {}, params: [], validate: true });
    expect(opts.wait).toEqual({ pollIntervalMs: undefined, maxWaitMs: 1_800_000 });
  });

  it('a duration out of bounds or an unknown format stops at parsing: usage error, nothing run', async () => {
    for (const args of [['--poll-interval', '0'], ['--max-wait', '597h'], ['--format', 'xslx']]) {
      const { name, code, stderr } = await parseOptions<RunOptions>('run', 'buyer', ...args);
      expect(code, args.join(' ')).toBe(2);
      expect(name).toBe('');
      expect(stderr.split('\n')[0]).toMatch(new RegExp(args[0] as string));
    }
  });
});

describe('--column-case', () => {
  it('run, download and schema take camel or snake in any case (not given: undefined, camel); another word is a usage error with a did-you-mean', async () => {
    expect((await parseOptions<RunOptions>('run', 'buyer', '--column-case', 'SNAKE')).opts.output.columnCase).toBe('snake');
    expect((await parseOptions<RunOptions>('run', 'buyer')).opts.output.columnCase).toBeUndefined();
    expect((await parseOptions<DownloadOptions>('download', 'abc', '--column-case', 'camel')).opts.output.columnCase).toBe('camel');
    expect((await parseOptions<SchemaOptions>('schema', 'buyer', '--column-case', 'snake')).opts.columnCase).toBe('snake');
    const wrong = await parseOptions<RunOptions>('run', 'buyer', '--column-case', 'snak');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown column case "snak": --column-case is one of camel, snake; did you mean snake?');
  });
});

describe('list flags', () => {
  it('an empty list (`--metrics \'\'`, an unset shell variable) is a usage error naming the flag, not the default', async () => {
    const lists: [string, string[]][] = [
      ['run', ['buyer', '--metrics', '']], ['run', ['buyer', '--breakdowns', ' , ']], ['run', ['buyer', '--campaign-id', ',']],
      ['run', ['buyer', '--metrics', 'clicks', '--metrics', '']], ['run', ['buyer', '--columns', '']], ['download', ['abc', '--columns', ',']],
      ['seller', ['--app-id', '']], ['schema', ['buyer', '--metrics', '']],
    ];
    for (const [command, args] of lists) {
      const { name, code, stderr } = await parseOptions<RunOptions>(command, ...args);
      const flag = args.findLast((arg) => arg.startsWith('--')) as string;
      expect(`${command} ${args.join(' ')}: ${code}`).toBe(`${command} ${args.join(' ')}: 2`);
      expect(name).toBe('');
      expect(stderr).toMatch(new RegExp(`^error: option '${flag} <[a-z]+>' argument '[ ,]*' is invalid\\. an empty list: give at least one value \\(comma-separated\\), or leave the option out\n`));
    }
  });
});

describe('buyer and seller', () => {
  it('take the side from the command, and accept the other side\'s filter for a clear error later', async () => {
    const { opts } = await parseOptions<ReportOptions>('buyer', '--app-id', '9', '--campaign-id', '7,8');
    expect(opts.side).toBe('buyer');
    expect(opts.report.filters).toEqual({ appId: ['9'], campaignId: ['7', '8'] });
  });
});

describe('status and download', () => {
  it('status: the ID, --wait and the waiting bounds', async () => {
    const { opts } = await parseOptions<StatusOptions>('status', 'abc', '--wait', '--poll-interval', '500ms');
    expect(opts).toEqual({ id: 'abc', waitForIt: true, wait: { pollIntervalMs: 500, maxWaitMs: 1_800_000 } });
  });
  it('download: output options and --no-validate', async () => {
    const { opts } = await parseOptions<DownloadOptions>('download', 'abc', '--format', 'NDJSON', '--no-validate');
    expect(opts).toMatchObject({ id: 'abc', waitForIt: false, validate: false, output: { format: 'ndjson' } });
  });
});

describe('the other commands', () => {
  it('login: its switches as booleans', async () => {
    const { opts } = await parseOptions<LoginOptions>('login', '--email', 'me@example.com', '--password-stdin');
    expect(opts).toEqual({ tokenStdin: false, email: 'me@example.com', passwordStdin: true, verify: true });
    const offline = await parseOptions<LoginOptions>('login', '--token-stdin', '--no-verify');
    expect(offline.opts).toEqual({ tokenStdin: true, email: undefined, passwordStdin: false, verify: false });
  });
  it('campaigns: the format among its own (a table too)', async () => {
    const { opts } = await parseOptions<CampaignsOptions>('campaigns', '--format', 'TABLE');
    expect(opts.format).toBe('table');
  });
  it('completion: the shell, matched case-insensitively', async () => {
    const { opts } = await parseOptions<CompletionOptions>('completion', 'Fish');
    expect(opts.shell).toBe('fish');
  });
});

describe('global flags', () => {
  it('reach the factory typed: timeout in milliseconds, retries as a count, body as a choice', async () => {
    const { runCli } = await import('../../src/cli/program.js');
    const { fakeContext, argv } = await import('../helpers/ctx.js');
    let globals: unknown;
    const code = await runCli(argv('--timeout', '5s', '--retries', '0', '--body', 'JSON', '-q', 'whoami'), fakeContext().ctx, async (_name, _opts, f) => {
      globals = f.globals;
    });
    expect(code).toBe(0);
    expect(globals).toMatchObject({ timeoutMs: 5000, retries: 0, body: 'json', quiet: true, json: false, profile: 'default' });
  });
});

describe('values that are empty because a shell variable was unset', () => {
  it('-o "" and --profile "" are usage errors, not stdout and the default profile', async () => {
    for (const args of [['run', 'buyer', '-o', ''], ['download', 'abc', '-o', ''], ['campaigns', '-o', ''], ['whoami', '--profile', ''], ['login', '--profile', ' ']]) {
      const { code, stderr } = await parseOptions(...args);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toMatch(/^error: option '(-o, --output <file>|--profile <name>)' argument '\s*' is invalid\. a (file|profile) name, not an empty one/m);
    }
  });
});

describe('login', () => {
  it('--token-stdin and --email are one or the other', async () => {
    const { code, stderr } = await parseOptions('login', '--token-stdin', '--email', 'a@b.example');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error: option '--token-stdin' cannot be used with option '--email <email>'/m);
  });
});

