// The commander program, built from the command table, and the one place where errors become
// exit codes. `runCli` is the only code that touches process.exit.

import { readFileSync } from 'node:fs';
import type { Command, CommanderError } from 'commander';
import type { Context } from './context.js';
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

export async function buildProgram(ctx: Context): Promise<Command> {
  const { Command, Option } = await import('commander');
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
    .configureHelp({ showGlobalOptions: true });
  program
    .addOption(new Option('--profile <name>', 'credentials profile').env('REPORTING_PROFILE').default('default'))
    .addOption(new Option('--base-url <url>', 'API base URL (else REPORTING_BASE_URL, else the profile\'s)'))
    .option('--json', 'print the result as JSON on stdout')
    .option('-q, --quiet', 'no progress or summary on stderr')
    .option('-v, --verbose', 'HTTP trace on stderr (secrets redacted)')
    .option('--timeout <duration>', 'per request: connect, headers, longest silence in a body', '60s')
    .option('--retries <n>', 'retries after the first attempt', '4')
    .addOption(new Option('--body <encoding>', 'request body encoding').choices(['form', 'json']).default('form'))
    .option('--no-color', 'no colour (also NO_COLOR)');
  for (const spec of COMMANDS) {
    const command = program.command(spec.name).description(spec.summary);
    command.exitOverride().configureOutput(program.configureOutput());
    spec.define(command, ctx);
  }
  program.addHelpText('after', '\nEvery command has its own --help. The README (shipped with the package) covers time\nexpressions, output formats, exit codes and cron recipes.\n');
  return program;
}

/** Parses argv and runs the command; returns the exit code. Never throws. */
export async function main(argv: string[], ctx: Context): Promise<number> {
  let verbose = argv.includes('-v') || argv.includes('--verbose');
  try {
    const program = await buildProgram(ctx);
    if (argv.length <= 2) {
      program.outputHelp({ error: true });
      return EXIT.usage;
    }
    await program.parseAsync(argv);
    verbose = Boolean(program.opts<GlobalOptions>().verbose);
    return EXIT.ok;
  } catch (error) {
    return report(error, ctx, verbose);
  }
}

function isCommanderError(error: unknown): error is CommanderError {
  return error instanceof Error && typeof (error as CommanderError).code === 'string'
    && (error as CommanderError).code.startsWith('commander.');
}

function report(error: unknown, ctx: Context, verbose: boolean): number {
  if (isCommanderError(error)) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
    if (error.code === 'commander.help') return EXIT.usage;
    const message = error.message.replace(/^error: /, '');
    writeError(ctx, message, 'see `reporting --help`, or `reporting <command> --help`');
    return EXIT.usage;
  }
  if (error instanceof CliError) {
    if (error.exitCode === EXIT.ok) return EXIT.ok; // a closed output pipe: nothing to say
    writeError(ctx, error.message, error.hint);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  writeError(ctx, `internal error: ${message}`, 'this is a bug in reporting; please report it with the command you ran');
  if (verbose && error instanceof Error && error.stack && ctx.env.REPORTING_DEBUG) ctx.stderr.write(`${error.stack}\n`);
  return EXIT.internal;
}

function writeError(ctx: Context, message: string, hint?: string): void {
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim();
  ctx.stderr.write(`error: ${oneLine}\n`);
  if (hint) ctx.stderr.write(`hint: ${hint}\n`);
}

/** The process entry point (bin/reporting.js). */
export function runCli(argv: string[]): void {
  const args = argv.slice(2);
  // `--version` is on every script's hot path: answer it before loading anything else
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
    process.stdout.write(`${readVersion()}\n`);
    return;
  }
  const controller = new AbortController();
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    // conf's atomic writer (through when-exit) re-raises the signals it intercepts: a repeat within
    // a second is that echo, not the user insisting. A later one forces the exit.
    if (firstSignalAt && Date.now() - firstSignalAt > 1000) process.exit(signal === 'SIGTERM' ? 143 : EXIT.interrupted);
    if (!firstSignalAt) firstSignalAt = Date.now();
    controller.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // a closed pipe (`reporting ... | head`) is not an error: stop quietly
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
  });
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
  main(argv, ctx).then((code) => {
    const finish = () => process.exit(code);
    // let stdout drain before leaving, so piped output is never cut short
    if (process.stdout.writableNeedDrain) process.stdout.once('drain', finish);
    else finish();
  });
}
