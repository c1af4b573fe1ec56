// The command line is parsed once, by commander: the global flags that shape messages (-v,
// --no-color, --log-format) are read from its parse, so an option's value that happens to look
// like one of them is that option's value, and the flags still work before or after the command.

import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import type { RunOptions } from '../../src/commands/run.js';
import type { Factory } from '../../src/factory.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { withSandbox } from '../helpers/http.js';

/** Parses a command line as the CLI does; what the command would receive, and what it printed. */
async function parse(args: string[], options: { tty?: boolean } = {}) {
  const { ctx, stderr } = fakeContext({ tty: options.tty });
  let seen: { opts: RunOptions; f: Factory } | undefined;
  const code = await runCli(argv(...args), ctx, async (_name, opts, f) => { seen = { opts: opts as RunOptions, f }; });
  return { code, stderr: stderr.text, opts: seen?.opts, f: seen?.f };
}

const RUN = ['run', 'buyer', '--since', 'today', '--until', 'today'];

describe('an option value that looks like a global flag', () => {
  it('-o -v writes a file named -v, and does not trace', async () => {
    const { code, stderr, opts, f } = await parse([...RUN, '-o', '-v']);
    expect(code, stderr).toBe(0);
    expect(opts?.output.output).toBe('-v');
    expect(f?.globals.verbose).toBe(false);
    expect(f?.trace).toBeUndefined();
  });

  it('--param -v and --param x=-v are --param values, not -v', async () => {
    const { code, stderr, opts, f } = await parse([...RUN, '--param', '-v', '--param', 'x=-v', '--param', 'y=--no-color']);
    expect(code, stderr).toBe(0);
    expect(opts?.report.params).toEqual(['-v', 'x=-v', 'y=--no-color']);
    expect(f?.globals).toMatchObject({ verbose: false, color: true });
    // and the command refuses the first, as any value that is not NAME=VALUE
    const refused = await runCli(argv(...RUN, '--param', '-v'), fakeContext().ctx);
    expect(refused).toBe(2);
  });

  it('-o --no-color is a file name: an error after it is still coloured on a terminal', async () => {
    const { code, stderr } = await parse(['run', 'byuer', '--since', 'today', '--until', 'today', '-o', '--no-color'], { tty: true });
    expect(code).toBe(2);
    expect(stderr).toContain('\u001b[31merror:');
    const plain = await parse(['run', 'byuer', '--since', 'today', '--until', 'today', '--no-color'], { tty: true });
    expect(plain.stderr).not.toContain('\u001b[');
  });

  it('-o --log-format=json is a file name: a usage error stays a text line', async () => {
    const { code, stderr } = await parse([...RUN, '--bogus', '-o', '--log-format=json']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error: unknown option '--bogus'/);
    const json = await parse([...RUN, '--log-format=json', '--bogus']);
    expect(JSON.parse(json.stderr)).toMatchObject({ event: 'error', message: "unknown option '--bogus'", exitCode: 2 });
  });
});

describe('the global flags themselves', () => {
  it('are read before the command and after it, later words winning', async () => {
    for (const args of [['-v', ...RUN], [...RUN, '-v'], ['--verbose', ...RUN, '-o', 'r.csv']]) {
      const { code, f } = await parse(args);
      expect(code).toBe(0);
      expect(f?.globals.verbose, args.join(' ')).toBe(true);
    }
    const { f } = await parse(['--profile', 'a', '--retries', '2', ...RUN, '--profile', 'b', '--json', '-q', '--no-color']);
    expect(f?.globals).toMatchObject({ profile: 'b', retries: 2, json: true, quiet: true, color: false, verbose: false });
  });

  it('-v traces the requests, before or after the command', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      for (const args of [['-v', 'campaigns', '--json'], ['campaigns', '--json', '-v']]) {
        const { ctx, stderr } = fakeContext({ env });
        expect(await runCli(argv(...args), ctx)).toBe(0);
        expect(stderr.text, args.join(' ')).toMatch(/^> (GET|POST) \S+ \(Authorization: \*\*\*\)$/m);
      }
      const { ctx, stderr } = fakeContext({ env });
      expect(await runCli(argv('campaigns', '--json'), ctx)).toBe(0);
      expect(stderr.text).not.toMatch(/^> /m);
    });
  });

  it('`help run` is run\'s help, whatever follows it', async () => {
    // (commander strips styles from help off a real terminal, so colour itself is not seen here)
    for (const args of [['help', 'run', '--no-color'], ['run', '--help', '--no-color'], ['help', 'run', '-v']]) {
      const { ctx, stdout } = fakeContext({ tty: true });
      expect(await runCli(argv(...args), ctx)).toBe(0);
      expect(stdout.text, args.join(' ')).toMatch(/^Usage: reporting run/);
    }
  });
});
