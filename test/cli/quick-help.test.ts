// `--help` answered from the build's texts (src/cli/quick-help.ts, dist/help.json) must be what
// commander prints, byte for byte, for every command; and only where it is: anything that would
// change commander's output (a terminal's bold titles, a narrow terminal, an option's environment
// variable, another word on the line) leaves the answer to commander.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { helpCases, runCli } from '../../src/cli/program.js';
import { quickHelp, type HelpTexts } from '../../src/cli/quick-help.js';
import { BIN, NODE, baseEnv } from '../helpers/cli.js';
import { argv, fakeContext } from '../helpers/ctx.js';

const texts = JSON.parse(readFileSync(new URL('../../dist/help.json', import.meta.url), 'utf8')) as HelpTexts;
const read = () => texts;
const { paths, env } = helpCases(fakeContext().ctx);

async function commander(args: string[], options: Parameters<typeof fakeContext>[0] = {}, columns?: number) {
  const { ctx, stdout, stderr } = fakeContext(options);
  if (columns !== undefined) stdout.columns = columns;
  const code = await runCli(argv(...args), ctx);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('help from the build (dist/help.json)', () => {
  it('covers every command, the hidden ones and subcommands included', () => {
    expect(paths.length).toBeGreaterThan(20);
    expect(Object.keys(texts.texts).sort()).toEqual(paths.map((words) => words.join(' ')).sort());
    expect(texts.env).toEqual(env);
  });

  it.each(paths.flatMap((words) => [[...words, '--help'], [...words, '-h']]).map((args) => [args.join(' '), args]))('%s: byte for byte what commander prints', async (_name, args) => {
    const expected = await commander(args);
    expect(expected.code).toBe(0);
    expect(expected.stderr).toBe('');
    expect(quickHelp(args, read, { isTTY: false }, {})).toBe(expected.stdout);
  });

  it('also on a terminal of 100 columns or more when colour is off, as commander', async () => {
    for (const args of [['--help'], ['state', 'show', '--help']]) {
      for (const [envVars, columns] of [[{ NO_COLOR: '1' }, 100], [{ TERM: 'dumb' }, 160]] as const) {
        const expected = await commander(args, { tty: true, env: envVars }, columns);
        expect(quickHelp(args, read, { isTTY: true, columns }, envVars), `${args.join(' ')} ${JSON.stringify(envVars)} ${columns}`).toBe(expected.stdout);
      }
    }
  });

  it.each([true, false])('on a colour terminal (colours: %s), every command: what commander prints', async (hasColors) => {
    // commander decides by this process's stdout and environment: make them a terminal's
    const saved = { isTTY: process.stdout.isTTY, hasColors: process.stdout.hasColors, env: { ...process.env } };
    Object.assign(process.stdout, { isTTY: true, hasColors: () => hasColors });
    for (const name of ['NO_COLOR', 'FORCE_COLOR', 'CLICOLOR_FORCE']) delete process.env[name];
    try {
      for (const args of paths.map((words) => [...words, '--help'])) {
        const expected = await commander(args, { tty: true }, 100);
        expect(expected.stdout.includes('\u001b[1m'), args.join(' ')).toBe(hasColors);
        expect(quickHelp(args, read, { isTTY: true, columns: 100, hasColors: () => hasColors }, {}), args.join(' ')).toBe(expected.stdout);
      }
    } finally {
      Object.assign(process.stdout, { isTTY: saved.isTTY, hasColors: saved.hasColors });
      Object.assign(process.env, saved.env);
    }
  });

  it('leaves to commander what its texts would not match', async () => {
    // commander's own colour rule, when these variables set it
    expect(quickHelp(['--help'], read, { isTTY: true, columns: 120, hasColors: () => true }, { FORCE_COLOR: '0' })).toBeUndefined();
    expect(quickHelp(['--help'], read, { isTTY: true, columns: 120, hasColors: () => false }, { CLICOLOR_FORCE: '1' })).toBeUndefined();
    // a narrower terminal wraps the descriptions elsewhere
    expect(quickHelp(['--help'], read, { isTTY: true, columns: 80 }, { NO_COLOR: '1' })).toBeUndefined();
    expect((await commander(['--help'], { tty: true, env: { NO_COLOR: '1' } }, 80)).stdout).not.toBe(texts.texts['']);
    // the program reads REPORTING_PROFILE even for --help, and refuses an empty one
    expect(env).toContain('REPORTING_PROFILE');
    expect(quickHelp(['--help'], read, { isTTY: false }, { REPORTING_PROFILE: ' ' })).toBeUndefined();
    // (commander reads the process's environment, not the Context's)
    process.env.REPORTING_PROFILE = ' ';
    try {
      expect((await commander(['--help'])).code).toBe(2);
    } finally {
      delete process.env.REPORTING_PROFILE;
    }
    // other words, unknown commands, or help not last
    for (const args of [['--help', '--no-color'], ['buyer', '--no-color', '--help'], ['nope', '--help'], ['constructor', '--help'], ['help', 'buyer'], ['buyer', '--help', 'x'], ['--version'], []]) {
      expect(quickHelp(args, read, { isTTY: false }, {}), args.join(' ')).toBeUndefined();
    }
  });

  it('the built CLI answers help with no ES module of dist/ (dist/quick.cjs), and prints what commander prints', async () => {
    // a loader hook that names every ES module the process loads (bin/reporting.js and
    // dist/quick.cjs are CommonJS, which it does not see)
    const hook = `data:text/javascript,${encodeURIComponent("import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent('export async function load(url, context, next) { process._rawDebug(\"LOADED \" + url); return next(url, context); }'));")}`;
    const run = async (args: string[]) => {
      const child = spawnSync(NODE, ['--import', hook, BIN, ...args], { env: baseEnv(), encoding: 'utf8' });
      expect(child.status).toBe(0);
      expect(child.stdout).toBe((await commander(args)).stdout);
      return [...child.stderr.matchAll(/^LOADED (\S+)$/gm)].map((match) => match[1] as string).filter((url) => /\/dist\/.*\.js$/.test(url));
    };
    for (const args of [['--help'], ['buyer', '--help'], ['state', 'show', '-h']]) expect(await run(args), args.join(' ')).toEqual([]);
    // another word on the line: commander's, through the program's chunk
    expect((await run(['buyer', '--no-color', '--help'])).some((url) => /\/program-[^/]+\.js$/.test(url))).toBe(true);
  });
});
