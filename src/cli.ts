// The commander program, built from the command table, and the one place where errors become
// exit codes. `runCli` is the only code that touches process.exit.

import { readFileSync } from 'node:fs';
import type { Command, CommanderError } from 'commander';
import { wantsColor, type Context, type Output } from './context.js';
import { CliError, EXIT } from './errors.js';

export interface GlobalOptions {
  profile?: string;
  baseUrl?: string;
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  timeout?: string;
  retries?: string;
  color?: boolean;
  body?: string;
}

export function readVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export async function buildProgram(ctx: Context, noColor = false): Promise<Command> {
  const { Command, Help, Option } = await import('commander');
  const { COMMANDS } = await import('./commands/index.js');
  const program = new Command('reporting')
    .description('Request and export advertising performance reports from the Reporting API.')
    .version(ctx.version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .addHelpCommand(false)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => { ctx.stdout.write(text); },
      writeErr: (text) => { ctx.stderr.write(text); },
      outputError: () => { /* main() prints errors in one format */ },
      getOutHelpWidth: () => Math.min(ctx.stdout.columns ?? 100, 100),
      getErrHelpWidth: () => Math.min(ctx.stderr.columns ?? 100, 100),
    })
    ;
  const group = (heading: string, ...options: InstanceType<typeof Option>[]) => {
    for (const option of options) program.addOption(option.helpGroup(heading));
  };
  group(GROUPS.credentials,
    new Option('--profile <name>', 'credentials profile').env('REPORTING_PROFILE').default('default'),
    new Option('--base-url <url>', 'API base URL (else REPORTING_BASE_URL, else the profile\'s)'));
  group(GROUPS.network,
    new Option('--timeout <duration>', 'per request: connect, headers, longest silence in a body').default('60s'),
    new Option('--retries <n>', 'retries after the first attempt').default('4'),
    new Option('--body <encoding>', 'request body encoding').choices(['form', 'json']).default('form'),
    new Option('-v, --verbose', 'HTTP trace on stderr (secrets redacted)'));
  group(GROUPS.messages,
    new Option('--json', 'print the result as JSON on stdout'),
    new Option('-q, --quiet', 'no progress or summary on stderr'),
    new Option('--no-color', 'no colour (also NO_COLOR)'));
  const color = wantsColor(ctx, ctx.stdout, noColor);
  program.configureHelp({
    showGlobalOptions: true,
    formatHelp: (cmd, helper) => regroupGlobalOptions(Help.prototype.formatHelp.call(helper, cmd, helper), program),
    styleTitle: (title) => (color ? `\u001b[1m${title}\u001b[22m` : title),
  });
  for (const spec of COMMANDS) {
    const command = program.command(spec.name, { hidden: spec.hidden }).description(spec.summary);
    command.exitOverride().configureOutput(program.configureOutput());
    spec.define(command, ctx);
  }
  program.addHelpText('after', '\nEvery command has its own --help. The README (shipped with the package) covers time\nexpressions, output formats, exit codes and cron recipes.\n');
  return program;
}

const GROUPS = {
  credentials: 'Credentials:',
  network: 'Network options:',
  messages: 'Messages and output:',
};

/**
 * Commander lists the program's options under one "Global Options:" heading in a command's help;
 * this splits that block by the options' help groups (credentials, network, messages), so every
 * command's help reads: its own groups (report, filters, output, waiting), then these.
 */
function regroupGlobalOptions(text: string, program: Command): string {
  const blocks = text.split('\n\n');
  const at = blocks.findIndex((block) => block.startsWith('Global Options:') || block.startsWith('\u001b[1mGlobal Options:'));
  if (at < 0) return text;
  const lines = (blocks[at] as string).split('\n').slice(1);
  const items: string[][] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    if (/^ {2}-/.test(line)) items.push([line]);
    else items[items.length - 1]?.push(line);
  }
  const headingOf = (item: string[]) => {
    const flags = (item[0] as string).trim().split(/\s{2,}/)[0] ?? '';
    const option = program.options.find((o) => flags.includes(o.long ?? '\u0000'));
    return option?.helpGroupHeading ?? 'Options:';
  };
  const grouped = new Map<string, string[]>();
  for (const item of items) {
    if (/^ {2}-V, --version/.test(item[0] as string)) continue; // the program's, not the command's
    grouped.set(headingOf(item), [...(grouped.get(headingOf(item)) ?? []), ...item]);
  }
  // the command's own "Options:" block holds only --help: it joins the messages group
  const own = blocks.findIndex((block, i) => i < at && /^(\u001b\[1m)?Options:/.test(block) && block.split('\n').length === 2);
  if (own >= 0) {
    const helpLine = (blocks[own] as string).split('\n')[1] as string;
    grouped.set(GROUPS.messages, [...(grouped.get(GROUPS.messages) ?? []), helpLine]);
  }
  const title = blocks[at]?.startsWith('\u001b') ? (heading: string) => `\u001b[1m${heading}\u001b[22m` : (heading: string) => heading;
  const rebuilt = [...grouped.entries()].map(([heading, body]) => [title(heading), ...body].join('\n'));
  blocks.splice(at, 1, ...rebuilt);
  if (own >= 0) blocks.splice(own, 1);
  const joined = blocks.join('\n\n');
  return text.endsWith('\n') && !joined.endsWith('\n') ? `${joined}\n` : joined;
}

/** Parses argv and runs the command; returns the exit code. Never throws. */
export async function main(argv: string[], ctx: Context): Promise<number> {
  let verbose = argv.includes('-v') || argv.includes('--verbose');
  // --no-color must hold for the help and errors printed before options are parsed
  const noColor = argv.includes('--no-color');
  // a result that could not be written (`> /dev/full`) is a failure, whichever command printed it
  let outputFailure: unknown;
  const onOutputError = (error: unknown) => {
    if ((error as NodeJS.ErrnoException)?.code !== 'EPIPE') outputFailure ??= error;
  };
  ctx.stdout.once('error', onOutputError);
  let code: number;
  try {
    const program = await buildProgram(ctx, noColor);
    if (argv.length <= 2) {
      program.outputHelp({ error: true });
      return EXIT.usage;
    }
    await program.parseAsync(argv);
    verbose = Boolean(program.opts<GlobalOptions>().verbose);
    code = EXIT.ok;
  } catch (error) {
    code = report(error, ctx, verbose, noColor);
  }
  try {
    if (code === EXIT.ok) {
      await flushed(ctx.stdout);
      if (outputFailure) {
        const { stdoutWriteError } = await import('./export/sink.js');
        code = report(stdoutWriteError(outputFailure), ctx, verbose, noColor);
      }
    }
  } finally {
    ctx.stdout.off?.('error', onOutputError);
  }
  return code;
}

/** Resolves once everything written so far left the process (or failed): an empty write calls
 * back after the writes before it. */
function flushed(stream: Output): Promise<void> {
  return new Promise((resolve) => {
    try {
      stream.write('', () => resolve());
    } catch {
      resolve();
    }
  });
}

function isCommanderError(error: unknown): error is CommanderError {
  return error instanceof Error && typeof (error as CommanderError).code === 'string'
    && (error as CommanderError).code.startsWith('commander.');
}

function report(error: unknown, ctx: Context, verbose: boolean, noColor: boolean): number {
  if (isCommanderError(error)) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
    if (error.code === 'commander.help') return EXIT.usage;
    const message = error.message.replace(/^error: /, '');
    writeError(ctx, noColor, message, 'see `reporting --help`, or `reporting <command> --help`');
    return EXIT.usage;
  }
  if (error instanceof CliError) {
    if (error.exitCode === EXIT.ok) return EXIT.ok; // a closed output pipe: nothing to say
    writeError(ctx, noColor, error.message, error.hint);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  writeError(ctx, noColor, `internal error: ${message}`, 'this is a bug in reporting; please report it with the command you ran');
  if (verbose && error instanceof Error && error.stack && ctx.env.REPORTING_DEBUG) ctx.stderr.write(`${error.stack}\n`);
  return EXIT.internal;
}

function writeError(ctx: Context, noColor: boolean, message: string, hint?: string): void {
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim();
  const color = wantsColor(ctx, ctx.stderr, noColor);
  ctx.stderr.write(`${color ? '\u001b[31merror:\u001b[39m' : 'error:'} ${oneLine}\n`);
  if (hint) ctx.stderr.write(`${color ? '\u001b[2mhint:\u001b[22m' : 'hint:'} ${hint}\n`);
}

/** The process entry point (bin/reporting.js). */
export function runCli(argv: string[]): void {
  const args = argv.slice(2);
  // `--version` is on every script's hot path: answer it before loading anything else
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
    process.stdout.on('error', () => {});
    process.stdout.write(`${readVersion()}\n`, (error) => {
      if (!error || (error as NodeJS.ErrnoException).code === 'EPIPE') return;
      process.stderr.write(`error: cannot write standard output: ${error.message}\n`);
      process.exitCode = EXIT.internal;
    });
    return;
  }
  const controller = new AbortController();
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    // conf's atomic writer (through when-exit) re-raises the signals it intercepts: a repeat within
    // a second is that echo, not the user insisting. A later one forces the exit.
    if (firstSignalAt && Date.now() - firstSignalAt > 1000) {
      // forced: give the terminal its cursor and line wrapping back, in case a progress line hid them
      if (process.stderr.isTTY) process.stderr.write('\u001b[?25h\u001b[?7h\n');
      process.exit(signal === 'SIGTERM' ? 143 : EXIT.interrupted);
    }
    if (!firstSignalAt) firstSignalAt = Date.now();
    controller.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // a closed pipe (`reporting ... | head`) is not an error: stop quietly. Other stdout errors
  // (`> /dev/full`) are reported by main() with an exit code.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
  });
  // a closed stderr (`2>&1 | grep -m1 submitted`) loses the messages, never the job or its output
  process.stderr.on('error', () => {});
  const ctx: Context = {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    now: () => Date.now(),
    signal: controller.signal,
    version: readVersion(),
  };
  main(argv, ctx).then(async (code) => {
    // never leave with writes pending: piped output (or the last message) would be cut short
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    process.exit(code);
  });
}
