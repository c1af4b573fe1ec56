// The process edge, and the only code that touches process.*: signals, a closed stdout pipe,
// flushing, and the exit code. Everything else receives a Context (src/factory.ts).

import { readFileSync } from 'node:fs';
import { EXIT, whyWriteFailed } from './errors.js';
import { flushed } from './io/flush.js';
import type { Context } from './context.js';
import { ExitCleanups, type Host } from './host.js';
import { quickHelp, type HelpTexts } from './cli/quick-help.js';

/** This process as the code below sees it (src/host.ts); `cleanups` are run by main() on exit. */
export function processHost(cleanups: ExitCleanups): Host {
  return {
    pid: process.pid,
    platform: process.platform,
    nodeVersion: process.versions.node,
    isAlive(pid) {
      if (!Number.isInteger(pid) || pid <= 0) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        // EPERM: it is alive, but belongs to someone else
        return (error as NodeJS.ErrnoException).code === 'EPERM';
      }
    },
    atExit: (cleanup) => cleanups.add(cleanup),
  };
}

function readVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The help texts the build made (scripts/help-texts.mjs), if it did. */
function readHelpTexts(): HelpTexts | undefined {
  try {
    return JSON.parse(readFileSync(new URL('./help.json', import.meta.url), 'utf8')) as HelpTexts;
  } catch {
    return undefined;
  }
}

/** Prints an answer known without the program (the version, help): a closed pipe is no error. */
function answer(text: string): void {
  process.stdout.on('error', () => {});
  process.stdout.write(text, (error) => {
    if (!error || (error as NodeJS.ErrnoException).code === 'EPIPE') return;
    // the same line as every other command's (src/export/sink.ts stdoutWriteError)
    process.stderr.write(`error: cannot write standard output: ${whyWriteFailed(error)}\n`);
    process.exitCode = EXIT.internal;
  });
}

/**
 * Answers what needs no program: `--version`, and `--help` from the texts the build made when they
 * are what commander would print. True when it answered. bin/reporting.js calls it first, from
 * dist/quick.cjs (this function built as CommonJS: no ES module loader to start for these).
 */
export function quick(argv: string[]): boolean {
  const args = argv.slice(2);
  // `--version` is on every script's hot path
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
    answer(`${readVersion()}\n`);
    return true;
  }
  const help = quickHelp(args, readHelpTexts, process.stdout, process.env);
  if (help === undefined) return false;
  answer(help);
  return true;
}

/** The process entry point (bin/reporting.js). */
export function main(argv: string[]): void {
  if (quick(argv)) return;
  // the AWS SDK (loaded for -o s3://) would print a notice about future Node versions on stderr
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
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
  // (`> /dev/full`) are reported by runCli with an exit code.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
  });
  // a closed stderr (`2>&1 | grep -m1 submitted`) loses the messages, never the job or its output
  process.stderr.on('error', () => {});
  // locks and temporary files are released even on an exit that skips `finally` (a forced exit
  // on a second Ctrl-C, EPIPE); SIGKILL cannot be helped, which is what stale detection is for
  const cleanups = new ExitCleanups();
  process.once('exit', () => cleanups.run());
  const ctx: Context = {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    now: () => Date.now(),
    random: Math.random,
    signal: controller.signal,
    version: readVersion(),
    host: processHost(cleanups),
  };
  // the event loop drained while the command had not settled: something it awaited can never
  // answer (a client that gave up without saying so). That is no success: exit 70, in one line.
  let settled = false;
  process.once('beforeExit', () => {
    if (settled) return;
    process.stderr.write('error: the command stopped before it finished: something it was waiting for will never answer\nhint: a client gave up without saying why: check the connection settings (the URL, PGPORT and the like); if they are right, please report it with the command you ran\n');
    process.exit(EXIT.unfinished);
  });
  void import('./cli/program.js').then(({ runCli }) => runCli(argv, ctx)).then(async (code) => {
    settled = true;
    // never leave with writes pending: piped output (or the last message) would be cut short
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    process.exit(code);
  });
}
