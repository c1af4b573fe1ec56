// Reading secrets: all of stdin (for --token-stdin / --password-stdin), or a hidden prompt on a
// terminal. A prompt is never shown when stdin is not a terminal.

import type { Context } from './context.js';
import { InterruptedError, UsageError } from './errors.js';

export async function readAllStdin(ctx: Context): Promise<string> {
  let text = '';
  for await (const chunk of ctx.stdin) text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
  return text;
}

/** The first line of stdin, trimmed: a secret piped in with `echo` or from a file. */
export async function readSecretFromStdin(ctx: Context, what: string, flag: string): Promise<string> {
  if (ctx.stdin.isTTY) throw new UsageError(`${flag} reads the ${what} from standard input, which is a terminal`, `pipe it in: ... | reporting login ${flag}`);
  const secret = (await readAllStdin(ctx)).split(/\r?\n/)[0]?.trim() ?? '';
  if (!secret) throw new UsageError(`${flag}: standard input held no ${what}`);
  return secret;
}

/** Asks for a secret without echoing it. `alternatives` names the flags to use without a terminal. */
export async function promptSecret(ctx: Context, label: string, alternatives: string): Promise<string> {
  if (!ctx.stdin.isTTY || !ctx.stdin.setRawMode || !ctx.stdin.on) {
    throw new UsageError(`cannot prompt for the ${label}: standard input is not a terminal`, `use ${alternatives}`);
  }
  ctx.stderr.write(`${label[0]?.toUpperCase()}${label.slice(1)}: `);
  const stdin = ctx.stdin as Required<Pick<typeof ctx.stdin, 'setRawMode' | 'on'>> & typeof ctx.stdin & NodeJS.ReadStream;
  stdin.setRawMode(true);
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let value = '';
      const onData = (data: Buffer) => {
        for (const char of data.toString('utf8')) {
          if (char === '\r' || char === '\n') {
            stdin.off('data', onData);
            resolve(value.trim());
            return;
          }
          if (char === '\u0003') {
            stdin.off('data', onData);
            reject(new InterruptedError('SIGINT'));
            return;
          }
          if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
          else if (char >= ' ') value += char;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    ctx.stderr.write('\n');
  }
}
