// The one place an error becomes a message and an exit code (SPEC section 4; the table of codes
// is EXIT in src/errors.ts). Commander's own errors are usage errors; typed CliErrors carry their
// code; anything else is a bug, said so in one line (the stack only with REPORTING_DEBUG and -v).

import type { CommanderError } from 'commander';
import { CliError, EXIT } from '../errors.js';
import type { Context } from '../context.js';
import { wantsColor } from '../io/color.js';
import { jsonLine, safeText, withoutControls } from '../io/safe-text.js';

function isCommanderError(error: unknown): error is CommanderError {
  return error instanceof Error && typeof (error as CommanderError).code === 'string'
    && (error as CommanderError).code.startsWith('commander.');
}

/** Prints what the user needs to know about `error` on stderr and returns the exit code. */
/** The exit codes as `run --help` ends with them (a scheduler's table; docs/exit-codes-and-logs.md). */
export const EXIT_CODES_HELP = [
  '',
  '',
  'Exit codes:',
  `  ${EXIT.ok}    done (also when there was nothing to fetch)`,
  `  ${EXIT.internal}    a bug, or a write that failed once under way (a full disk, > /dev/full)`,
  `  ${EXIT.usage}    usage: fix the command (also -o or --state unusable, found before any request)`,
  `  ${EXIT.auth}    authentication: fix the token or the credentials`,
  `  ${EXIT.rejected}    the API rejected the request`,
  `  ${EXIT.network}    network or server failure after retries, or an unexpected answer: retry later`,
  `  ${EXIT.report}    the report failed, or was not ready within --max-wait: retry later`,
  `  ${EXIT.unfinished}   stopped without a result (something it waited for never answered): a bug, retry later`,
  `  ${EXIT.interrupted}  interrupted (Ctrl-C); 143 for SIGTERM: the next run resumes`,
].join('\n');

export function exitCodeFor(error: unknown, ctx: Context, options: ExitOptions): number {
  if (isCommanderError(error)) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
    // `help` and `help run` exit 0; help shown for a mistake (.help({ error: true })) does not
    if (error.code === 'commander.help') return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    writeError(ctx, options, error.message.replace(/^error: /, ''), 'see `reporting --help`, or `reporting <command> --help`');
    return EXIT.usage;
  }
  if (error instanceof CliError) {
    if (error.exitCode === EXIT.ok) return EXIT.ok; // a closed output pipe: nothing to say
    writeError(ctx, error.jsonLog ? { ...options, jsonLog: true } : options, error.message, error.hint, error.exitCode);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  writeError(ctx, options, `internal error: ${message}`, 'this is a bug in reporting; please report it with the command you ran', EXIT.internal);
  if (options.verbose && error instanceof Error && error.stack && ctx.env.REPORTING_DEBUG) ctx.stderr.write(`${error.stack}\n`);
  return EXIT.internal;
}

export interface ExitOptions {
  verbose: boolean;
  noColor: boolean;
  /** --log-format json: the error is the log's last line, a JSON object like the others */
  jsonLog?: boolean;
  /** the command's calendar (REPORTING_NOW moves it), once its factory was made: dates that line;
   * `at`, the instant REPORTING_NOW named */
  clock?: { now(): number; at?: string };
}

function writeError(ctx: Context, options: ExitOptions, message: string, hint?: string, exitCode: number = EXIT.usage): void {
  const { noColor } = options;
  if (options.jsonLog) {
    const plain = (text: string) => withoutControls(text).trim();
    ctx.stderr.write(`${jsonLine({ v: 1, ts: new Date((options.clock?.now ?? ctx.now)()).toISOString(), ...(options.clock?.at ? { now: options.clock.at } : {}), event: 'error', message: plain(message), ...(hint ? { hint: plain(hint) } : {}), exitCode })}\n`);
    return;
  }
  // messages carry server text (error envelopes, statuses): no control character reaches the terminal
  const oneLine = safeText(message.replace(/\s*\n\s*/g, ' ').trim());
  const color = wantsColor(ctx.env, ctx.stderr, noColor);
  ctx.stderr.write(`${color ? '\u001b[31merror:\u001b[39m' : 'error:'} ${oneLine}\n`);
  if (hint) ctx.stderr.write(`${color ? '\u001b[2mhint:\u001b[22m' : 'hint:'} ${safeText(hint)}\n`);
}
