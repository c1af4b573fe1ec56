// The commander program, built from the registry, with the typed global flags; `runCli` parses
// argv, runs the command through the factory, and returns the exit code (never throws).

import { Command, InvalidArgumentError, Option } from 'commander';
import { BOUNDS } from '../duration.js';
import { EXIT, UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import type { Context } from '../context.js';
import type { Factory, GlobalFlags } from '../factory.js';
import { wantsColor } from '../io/color.js';
import { flushed } from '../io/flush.js';
import { boundYoungGeneration } from '../io/young-generation.js';
import { exitCodeFor, type ExitOptions } from './exit.js';
import { choiceOption, count, duration, spacedList } from './flags.js';
import { GROUPS, GroupedHelp, LOCAL_COMMANDS, REFUSED_FLAGS } from './help.js';
import { HELP_WIDTH } from './quick-help.js';
import { REGISTRY, type AnyEntry, type Group } from './registry.js';
import type { Parsed } from './options.js';

/** Runs a command instead of loading its module: the seam for flags-only tests (gh's runF). */
export type RunF = (name: string, opts: unknown, f: Factory) => Promise<void>;

function buildProgram(ctx: Context, settings: { runF?: RunF; made?: (f: Factory) => void } = {}): Command {
  class ReportingCommand extends Command {
    override createCommand(name?: string): Command {
      return new ReportingCommand(name);
    }

    override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
      // `--breakdowns DAILY COUNTRY`: said as a list cut by a space, not as an argument too many
      const spaced = errorOptions?.code === 'commander.excessArguments' ? spacedList(this) : undefined;
      if (spaced) throw spaced;
      return super.error(message, errorOptions);
    }

    override createHelp() {
      // help is drawn once the command line is parsed: --no-color anywhere in it holds
      return Object.assign(new GroupedHelp(wantsColor(ctx.env, ctx.stdout, parsedFlags(program, ctx.env).noColor)), this.configureHelp());
    }
  }
  const output = {
    writeOut: (text: string) => { ctx.stdout.write(text); },
    writeErr: (text: string) => { ctx.stderr.write(text); },
    outputError: () => { /* runCli prints errors in one format */ },
    getOutHelpWidth: () => Math.min(ctx.stdout.columns ?? HELP_WIDTH, HELP_WIDTH),
    getErrHelpWidth: () => Math.min(ctx.stderr.columns ?? HELP_WIDTH, HELP_WIDTH),
  };
  const program: Command = new ReportingCommand('reporting')
    .description('Request and export advertising performance reports from the Reporting API.')
    .version(ctx.version, '-V, --version', 'print the version')
    .addHelpOption(new Option('-h, --help', 'show help').helpGroup(GROUPS.messages))
    // `reporting help run` is `reporting run --help`, as in git and gh
    .helpCommand('help [command]', 'show help for a command')
    .showSuggestionAfterError(true)
    // the program's options are read before the command's name only; after it, the command reads
    // them itself (hidden copies, below), in order with its own options, so that `--param -v`
    // gives -v to --param and does not turn the trace on
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput(output);
  for (const option of globalOptions()) program.addOption(option);

  for (const entry of REGISTRY) addCommand(program, entry, ctx, settings.runF, '', settings.made);
  program.addHelpText('after', '\nEvery command has its own --help. The README and docs/ (shipped with the package) cover\ntime expressions, output formats, exit codes, state files and recipes for cron and Kubernetes.\n');
  return program;
}

/**
 * Every command's words (`[]` for the program itself, `['state', 'show']`) and the environment
 * variables the options read: what the build answers `--help` for ahead of time
 * (scripts/help-texts.mjs, src/cli/quick-help.ts).
 */
export function helpCases(ctx: Context): { paths: string[][]; env: string[] } {
  const paths: string[][] = [];
  const env = new Set<string>();
  const walk = (command: Command, words: string[]) => {
    paths.push(words);
    for (const option of command.options) if (option.envVar) env.add(option.envVar);
    for (const sub of command.commands) walk(sub, [...words, sub.name()]);
  };
  walk(buildProgram(ctx), []);
  return { paths, env: [...env].sort() };
}

/** The program's options, grouped for help; built afresh for the program and for each command. */
function globalOptions(): Option[] {
  const group = (heading: string, ...options: Option[]) => options.map((option) => option.helpGroup(heading));
  return [
    ...group(GROUPS.credentials,
      new Option('--profile <name>', 'credentials profile').env('REPORTING_PROFILE').default('default')
        .argParser((name: string) => {
          // an unset shell variable must not quietly mean (and overwrite) the default profile
          if (name.trim() === '') throw new InvalidArgumentError('a profile name, not an empty one (omit --profile for "default")');
          return name;
        }),
      new Option('--base-url <url>', 'API base URL (else REPORTING_BASE_URL, else the profile\'s)')),
    ...group(GROUPS.network,
      new Option('--timeout <duration>', 'per request: connect, headers, longest silence in a body')
        .argParser(duration('--timeout', BOUNDS.timeout)).default(60_000, '60s'),
      new Option('--retries <n>', 'retries after the first attempt').argParser(count('--retries', 0, 100)).default(4),
      choiceOption('--body <encoding>', 'request body encoding', ['form', 'json'], 'encoding').default('form'),
      new Option('-v, --verbose', 'HTTP trace on stderr (secrets redacted)')),
    ...group(GROUPS.messages,
      new Option('--json', 'print the result as JSON on stdout'),
      new Option('-q, --quiet', 'no progress or summary on stderr'),
      new Option('--no-color', 'no colour (also NO_COLOR)')),
  ];
}

function addCommand(parent: Command, entry: AnyEntry | Group, ctx: Context, runF: RunF | undefined, path = '', made?: (f: Factory) => void, local = false): void {
  const command = parent.command(entry.name, { hidden: 'hidden' in entry ? entry.hidden : undefined }).description(entry.summary);
  if (local || entry.local) LOCAL_COMMANDS.add(command);
  if (entry.refuses) REFUSED_FLAGS.set(command, new Set(entry.refuses));
  command.exitOverride().configureOutput(parent.configureOutput());
  // the program's options after the command's name (help shows them once, from the program)
  const addGlobals = () => {
    for (const option of globalOptions()) command.addOption(option.hideHelp());
    command.version(parent.version() as string, '-V, --version');
    command.options.find((option) => option.long === '--version')?.hideHelp();
  };
  if ('subcommands' in entry) {
    // a group's own options only before its subcommand's name, as the program's
    command.enablePositionalOptions();
    entry.define?.(command);
    addGlobals();
    for (const sub of entry.subcommands) addCommand(command, sub, ctx, runF, `${path}${entry.name} `, made, local || entry.local);
    return;
  }
  entry.define(command);
  addGlobals();
  command.action(async () => {
    const opts = entry.options(command.processedArgs as string[], command.opts<Parsed>(), command);
    const bound = entry.youngGeneration?.(opts, ctx.env);
    const unbound = bound === undefined ? undefined : boundYoungGeneration(bound);
    try {
      await runEntry(entry, opts, command, ctx, runF, path, made);
    } finally {
      unbound?.();
    }
  });
}

/** The command's action: its modules loaded, its factory made, the command run. */
async function runEntry(entry: AnyEntry, opts: unknown, command: Command, ctx: Context, runF: RunF | undefined, path: string, made?: (f: Factory) => void): Promise<void> {
  // the lazy boundary: the factory (HTTP client, token store) and the command's module load
  // only now that a command runs
  const [{ createFactory, warnMovedCalendar }, module] = await Promise.all([import('../factory.js'), runF ? undefined : entry.load()]);
  const f = createFactory(ctx, globalsOf(command, ctx));
  made?.(f);
  // the sandbox has its own clock (--now): REPORTING_NOW moves the CLI's calendar only
  if (entry.name !== 'sandbox') warnMovedCalendar(f, parsedFlags(command, ctx.env).jsonLog);
  try {
    if (module) await module.run(opts, f);
    else await runF?.(`${path}${entry.name}`, opts, f);
  } finally {
    await f.close();
  }
}

/** A program option as given: after the command's name (the nearest command first: `state show
 * --json`), else before it (else its default). */
function globalValue(command: Command, key: string): unknown {
  let root = command;
  for (let at: Command | null = command; at; at = at.parent) {
    if (at.parent && at.getOptionValueSource(key) === 'cli') return at.getOptionValue(key);
    root = at;
  }
  return root.getOptionValue(key);
}

function globalsOf(command: Command, ctx: Context): GlobalFlags {
  const parsed: Parsed = {};
  for (const key of ['profile', 'baseUrl', 'json', 'quiet', 'verbose', 'timeout', 'retries', 'color', 'body']) parsed[key] = globalValue(command, key);
  return {
    profile: String(parsed.profile ?? 'default'),
    baseUrl: parsed.baseUrl as string | undefined,
    json: Boolean(parsed.json),
    quiet: Boolean(parsed.quiet),
    verbose: Boolean(parsed.verbose),
    timeoutMs: parsed.timeout as number,
    retries: parsed.retries as number,
    color: parsed.color !== false && ctx.env.NO_COLOR === undefined && ctx.env.TERM !== 'dumb',
    body: parsed.body as GlobalFlags['body'],
    // --log-format json, else REPORTING_LOG_FORMAT=json: the -v trace lines are JSON too
    jsonLog: parsedFlags(command, ctx.env).jsonLog,
  };
}

/**
 * The flags that shape an error message, as commander parsed them so far: on the program, or on
 * the command it went on to (which alone has values from the command line). A flag after the word
 * that failed to parse was not read, and does not apply.
 */
function parsedFlags(program: Command | undefined, env: Record<string, string | undefined>): { verbose: boolean; noColor: boolean; jsonLog: boolean } {
  const all = (command: Command): Command[] => [command, ...command.commands.flatMap(all)];
  const given = (key: string) => (program ? all(program) : [])
    .filter((command) => command.getOptionValueSource(key) === 'cli')
    .map((command) => command.getOptionValue(key) as unknown);
  return {
    verbose: given('verbose').includes(true),
    noColor: given('color').includes(false),
    // with --log-format json (else REPORTING_LOG_FORMAT=json) even the last word, an error, is a
    // JSON line (docs/exit-codes-and-logs.md, "JSON logs")
    jsonLog: given('logFormat').length > 0 ? given('logFormat').includes('json') : env.REPORTING_LOG_FORMAT?.trim().toLowerCase() === 'json',
  };
}

/** Parses argv and runs the command; returns the exit code. Never throws. */
export async function runCli(argv: string[], ctx: Context, runF?: RunF): Promise<number> {
  // a result that could not be written (`> /dev/full`) is a failure, whichever command printed it
  let outputFailure: unknown;
  const onOutputError = (error: unknown) => {
    if ((error as NodeJS.ErrnoException)?.code !== 'EPIPE') outputFailure ??= error;
  };
  ctx.stdout.once('error', onOutputError);
  let program: Command | undefined;
  let code: number;
  // the command's calendar, once its factory is made: the error's JSON line is dated by it
  let clock: ExitOptions['clock'];
  const made = (f: Factory) => { clock = { now: f.calendar.now, at: f.calendar.moved?.at }; };
  try {
    program = buildProgram(ctx, { runF, made });
    if (argv.length <= 2) {
      program.outputHelp({ error: true });
      code = EXIT.usage;
    } else {
      // commander answers `help nope` with the whole help on stderr: say what is wrong instead
      const asked = argv[2] === 'help' ? argv[3] : undefined;
      const names = program.commands.map((command) => command.name());
      if (asked !== undefined && !asked.startsWith('-') && !names.includes(asked)) {
        throw new UsageError(`unknown command '${asked}'${didYouMean(asked, names)}`, 'see `reporting --help`');
      }
      // `help run --no-color` is `run --help --no-color`: run's own parse reads what follows
      const words = asked !== undefined && names.includes(asked) ? [...argv.slice(0, 2), asked, '--help', ...argv.slice(4)] : argv;
      await program.parseAsync(words);
      code = EXIT.ok;
    }
  } catch (error) {
    code = exitCodeFor(error, ctx, { ...parsedFlags(program, ctx.env), clock });
  }
  try {
    if (code === EXIT.ok) {
      await flushed(ctx.stdout);
      if (outputFailure) {
        const { stdoutWriteError } = await import('../export/sink.js');
        code = exitCodeFor(stdoutWriteError(outputFailure), ctx, { ...parsedFlags(program, ctx.env), clock });
      }
    }
  } finally {
    ctx.stdout.off?.('error', onOutputError);
  }
  return code;
}
