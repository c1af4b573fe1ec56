// `reporting [command...] --help` answered from texts the build made ahead (scripts/help-texts.mjs
// runs the program for every command and keeps what commander printed: dist/help.json), so that
// help loads neither commander nor the registry. Only where those texts are what commander would
// print now: 100 columns wide (a narrower terminal wraps elsewhere), no option's environment
// variable set (the program reads it even for --help, and refuses an empty REPORTING_PROFILE), and
// on a colour terminal only where commander's own colour rule is its default one (no FORCE_COLOR,
// no CLICOLOR_FORCE): the titles bold where the terminal has colours. Anything else, and any other
// command line, is commander's. test/cli/quick-help.test.ts holds the texts to commander's.

import { wantsColor } from '../io/color.js';

/** How wide help is drawn at most (program.ts): the texts are drawn at this width. */
export const HELP_WIDTH = 100;

export interface HelpTexts {
  /** the environment variables the program's options read */
  env: string[];
  /** each command's help, by its words (`''` for the program, `'state show'`) */
  texts: Record<string, string>;
  /** each text's titles, bold on a colour terminal (help.ts styleTitle): [line, length], from the line's start */
  titles: Record<string, [number, number][]>;
}

const BOLD = ['\u001b[1m', '\u001b[22m'] as const;

/** The text with its titles bold, as GroupedHelp.styleTitle draws them. */
export function withBoldTitles(text: string, titles: readonly (readonly [number, number])[]): string {
  const lines = text.split('\n');
  for (const [at, length] of titles) {
    const line = lines[at] ?? '';
    lines[at] = `${BOLD[0]}${line.slice(0, length)}${BOLD[1]}${line.slice(length)}`;
  }
  return lines.join('\n');
}

/** The words before a final --help or -h (`'state show'`), when they are all a command's name could be. */
export function helpWords(args: readonly string[]): string | undefined {
  const last = args[args.length - 1];
  if (last !== '--help' && last !== '-h') return undefined;
  const words = args.slice(0, -1);
  return words.every((word) => /^[a-z_][a-z0-9_-]*$/.test(word)) ? words.join(' ') : undefined;
}

/** The text commander would print for `args` on `stdout` in `env`, when the build made it (`read`, called only if it may be); else undefined. */
export function quickHelp(args: readonly string[], read: () => HelpTexts | undefined, stdout: { isTTY?: boolean; columns?: number; hasColors?(): boolean }, env: Record<string, string | undefined>): string | undefined {
  const words = helpWords(args);
  if (words === undefined) return undefined;
  const color = wantsColor(env, stdout);
  // commander keeps the bold where the terminal has colours, unless these say otherwise
  if (color && (env.FORCE_COLOR !== undefined || env.CLICOLOR_FORCE !== undefined)) return undefined;
  if (stdout.columns !== undefined && stdout.columns < HELP_WIDTH) return undefined;
  const texts = read();
  if (texts === undefined || texts.env.some((name) => env[name] !== undefined)) return undefined;
  if (!Object.hasOwn(texts.texts, words) || !Object.hasOwn(texts.titles, words)) return undefined;
  const text = texts.texts[words] as string;
  return color && stdout.hasColors?.() === true ? withBoldTitles(text, texts.titles[words] as [number, number][]) : text;
}
