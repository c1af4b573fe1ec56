// `reporting [command...] --help` answered from texts the build made ahead (scripts/help-texts.mjs
// runs the program for every command and keeps what commander printed: dist/help.json), so that
// help loads neither commander nor the registry. Only where those texts are what commander would
// print now: plain (no bold titles), 100 columns wide, no option's environment variable set (the
// program reads it even for --help, and refuses an empty REPORTING_PROFILE). Anything else, and
// any other command line, is commander's. test/cli/quick-help.test.ts holds the texts to commander's.

import { wantsColor } from '../io/color.js';

/** How wide help is drawn at most (program.ts): the texts are drawn at this width. */
export const HELP_WIDTH = 100;

export interface HelpTexts {
  /** the environment variables the program's options read */
  env: string[];
  /** each command's help, by its words (`''` for the program, `'state show'`) */
  texts: Record<string, string>;
}

/** The words before a final --help or -h (`'state show'`), when they are all a command's name could be. */
export function helpWords(args: readonly string[]): string | undefined {
  const last = args[args.length - 1];
  if (last !== '--help' && last !== '-h') return undefined;
  const words = args.slice(0, -1);
  return words.every((word) => /^[a-z_][a-z0-9_-]*$/.test(word)) ? words.join(' ') : undefined;
}

/** The text commander would print for `args` on `stdout` in `env`, when the build made it (`read`, called only if it may be); else undefined. */
export function quickHelp(args: readonly string[], read: () => HelpTexts | undefined, stdout: { isTTY?: boolean; columns?: number }, env: Record<string, string | undefined>): string | undefined {
  const words = helpWords(args);
  if (words === undefined) return undefined;
  if (wantsColor(env, stdout)) return undefined;
  if (stdout.columns !== undefined && stdout.columns < HELP_WIDTH) return undefined;
  const texts = read();
  if (texts === undefined || texts.env.some((name) => env[name] !== undefined)) return undefined;
  return Object.hasOwn(texts.texts, words) ? texts.texts[words] : undefined;
}
