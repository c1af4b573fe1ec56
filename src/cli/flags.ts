// Flag values parsed at the edge (commander argParsers): what reaches a command is already a
// number of milliseconds, a count, a list or one of a set of values. A bad value is a usage error
// naming the flag, raised while commander parses, before any command runs.

import { Argument, InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration, type DurationBounds } from '../duration.js';
import { UsageError } from '../errors.js';
import { SIDES, dimensionsOf, metricsOf } from '../report/catalog.js';
import { didYouMean } from '../suggest.js';

/** A duration (`500ms`, `30s`, `5m`, `2h`, `3d`, plain seconds) within `bounds`, in milliseconds. */
export function duration(flag: string, bounds: DurationBounds): (text: string) => number {
  return (text) => parseDuration(text, flag, bounds);
}

/** A whole number within [min, max]. */
export function count(flag: string, min: number, max: number): (text: string) => number {
  return (text) => {
    if (!/^\s*\d+\s*$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new UsageError(`${flag} wants a whole number from ${min} to ${max}, not "${text}"`).about(flag);
    }
    return Number(text);
  };
}

/** Repeatable and comma-separated: `--metrics a,b --metrics c` is [a, b, c]. An empty value
 * (`--metrics ''`, an unset shell variable) is refused: taken as "no list" it would silently mean
 * the default (every metric), which is not what was typed. Commander's error names the flag. */
export function list(text: string, previous: string[] = []): string[] {
  const items = text.split(',').map((item) => item.trim()).filter(Boolean);
  if (items.length === 0) throw new InvalidArgumentError('an empty list: give at least one value (comma-separated), or leave the option out');
  return [...previous, ...items];
}

/** The lists whose values a space, not a comma, may have cut off: each option's key, and its values. */
const SPACED: [key: string, values: readonly string[]][] = [
  ['breakdowns', [...new Set(SIDES.flatMap(dimensionsOf))]],
  ['metrics', [...new Set(SIDES.flatMap(metricsOf))]],
];

/** `--breakdowns DAILY COUNTRY`: COUNTRY is a second argument of the command to commander ("too
 * many arguments"). When the extra words are values of a list given (breakdowns, metrics), the
 * error says to join them with commas; else undefined (commander's own error stands). */
export function spacedList(command: Command): UsageError | undefined {
  const extra = command.args.slice(command.registeredArguments.length);
  const opts = command.opts<Record<string, unknown>>();
  const fixes = SPACED.flatMap(([key, values]) => {
    const given = opts[key];
    const more = extra.filter((word) => values.some((value) => value.toLowerCase() === word.toLowerCase()));
    return Array.isArray(given) && given.length && more.length ? [`separate ${key} with commas: --${key} ${[...given, ...more].join(',')}`] : [];
  });
  return fixes.length ? new UsageError(`too many arguments for '${command.name()}': ${extra.join(' ')}`, fixes.join('; ')) : undefined;
}

/** A file path, never empty: `-o "$OUT"` with OUT unset must not quietly mean stdout. */
export function path(text: string, previous?: string): string {
  if (text.trim() === '') throw new InvalidArgumentError('a file name, not an empty one (- for stdout)');
  // commander would keep the last one given: a file the user named would silently not be written
  if (previous !== undefined) throw new InvalidArgumentError(`given twice (${previous}, then ${text}); give one (\`reporting run\` takes several, each written from the one report)`);
  return text;
}

/** `run`'s -o: a file path, never empty, repeatable (several outputs of one report). */
export function paths(text: string, previous: string[] = []): string[] {
  if (text.trim() === '') throw new InvalidArgumentError('a file name, not an empty one (- for stdout)');
  return [...previous, text];
}

/** Repeatable, never split (free text such as a carrier name may hold a comma). */
export function repeat(text: string, previous: string[] = []): string[] {
  return [...previous, text];
}

/**
 * An option whose value is one of `values`, matched case-insensitively, with a did-you-mean; `what`
 * names the value in the error ("unknown format ..."). The values stay on the option
 * (`argChoices`), so help and shell completion read the same list.
 */
export function choiceOption(flags: string, description: string, values: readonly string[], what = 'value'): Option {
  const option = new Option(flags, description).choices(values);
  const flag = option.long ?? flags;
  return option.argParser((text: string) => {
    const match = values.find((value) => value.toLowerCase() === text.toLowerCase());
    if (match) return match;
    throw new UsageError(`unknown ${what} "${text}": ${flag} is one of ${values.join(', ')}${didYouMean(text, values)}`).about(flag);
  });
}

/** A command argument whose value is one of `values`, matched case-insensitively, with a
 * did-you-mean; `unknown` words the error for a value that is not one of them. */
export function choiceArgument(name: string, description: string, values: readonly string[], unknown: (text: string) => string): Argument {
  return new Argument(name, description).choices(values).argParser((text: string) => {
    const match = values.find((value) => value.toLowerCase() === text.toLowerCase());
    if (match) return match;
    throw new UsageError(`${unknown(text)}${didYouMean(text, values)}`, `choose ${values.join(', ')}`);
  });
}

/** `jobs status --html FILE`: a file (stdout keeps the lines or the JSON). */
export function htmlFile(text: string, previous?: string): string {
  if (text.trim() === '-') throw new InvalidArgumentError('a file name: the page goes to a file, the lines (or --json) to stdout');
  return path(text, previous);
}
