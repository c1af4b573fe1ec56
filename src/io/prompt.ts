// Reading secrets: all of stdin (for --token-stdin / --password-stdin), or a hidden prompt on a
// terminal. A prompt is never shown when stdin is not a terminal.

import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Context } from '../context.js';
import { InterruptedError, UsageError } from '../errors.js';

async function readAllStdin(ctx: Context): Promise<string> {
  let text = '';
  for await (const chunk of ctx.stdin) text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
  return text;
}

/** The first line of stdin, trimmed: a secret piped in with `echo` or from a file. */
export async function readSecretFromStdin(ctx: Context, what: string, flag: string): Promise<string> {
  if (ctx.stdin.isTTY) throw new UsageError(`${flag} reads the ${what} from standard input, which is a terminal`, `pipe it in: ... | reporting login ${flag}`);
  const lines = (await readAllStdin(ctx)).split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  const secret = lines[0] ?? '';
  if (!secret) throw new UsageError(`${flag}: standard input held no ${what}`);
  // two lines: a file of several tokens, or the wrong file; storing the first would be a guess
  if (lines.length > 1) throw new UsageError(`${flag}: standard input held ${lines.length} lines; give the ${what} alone, on one line`);
  return secret;
}

/** Asks for a secret without echoing it. `alternatives` names the flags to use without a terminal.
 * Node's readline does the line editing (backspace over any character, emoji included); what it
 * would echo goes nowhere. */
export async function promptSecret(ctx: Context, label: string, alternatives: string, question = `${label[0]?.toUpperCase()}${label.slice(1)}`): Promise<string> {
  if (!ctx.stdin.isTTY) {
    throw new UsageError(`cannot prompt for the ${label}: standard input is not a terminal`, `use ${alternatives}`);
  }
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const reader = createInterface({ input: ctx.stdin as NodeJS.ReadableStream, output: silent, terminal: true });
  // asked only once the terminal no longer echoes (readline set raw mode above)
  ctx.stderr.write(`${question}: `);
  try {
    return await new Promise<string>((resolve, reject) => {
      reader.once('line', (line) => resolve(line.trim()));
      reader.once('SIGINT', () => reject(new InterruptedError('SIGINT')));
      // Ctrl-D, or the terminal went away, before a line was typed
      reader.once('close', () => reject(new UsageError(`no ${label} was typed`, `use ${alternatives}`)));
    });
  } finally {
    reader.close();
    ctx.stderr.write('\n');
  }
}
