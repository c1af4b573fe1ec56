// `run`'s own parser, handed to the commands that hold `run` command lines elsewhere than argv (a
// job file's jobs): the same flags, argParsers, did-you-mean and cross-flag checks as `reporting
// run ...`, so that a job is exactly the `run` command line it stands for. The commands receive it
// as a function (they never import cli/).

import { Command, CommanderError } from 'commander';
import { UsageError } from '../errors.js';
import type { RunOptions } from '../commands/run.js';
import type { RunFlagInfo } from '../fleet/file.js';
import { runFlags, type Flag } from './options.js';

export interface RunParser {
  /** run's flags that a job file's keys are (the table of cli/options.ts) */
  flags: readonly RunFlagInfo[];
  /** `run`'s typed options from its words (`buyer --since=...`); `check: false` parses the flags'
   * values only, without the checks that need several flags together. Throws the usage error
   * `reporting run` would print. */
  parse(words: readonly string[], check?: boolean): RunOptions;
}

/** `run`'s registry entry: its flags and how they become its options. */
export interface RunEntry {
  define(command: Command): void;
  options(args: string[], parsed: Record<string, unknown>, command: Command): unknown;
}

export function runCommand(runEntry: RunEntry): Command {
  const program = new Command('reporting').exitOverride().configureOutput({ writeOut() {}, writeErr() {}, outputError() {} });
  const command = program.command('run').exitOverride().configureOutput(program.configureOutput());
  runEntry.define(command);
  return command;
}

/** run's flags as a job file's keys: each row of the table that is one, by its long name */
export function jobKeys(flags: readonly Flag[] = runFlags()): RunFlagInfo[] {
  return flags.flatMap(({ option, key = {} }) => (key === false ? [] : [{
    name: (option.long as string).slice(2),
    value: option.required || option.optional,
    negate: option.negate,
    many: key.many ?? false,
    ...(option.short ? { short: option.short } : {}),
    ...(key.place ? { place: key.place } : {}),
    ...(key.about ? { about: key.about } : {}),
  }]));
}

/** `quick: false`: every parse is commander's (the tests compare the two) */
export function runParser(runEntry: RunEntry, { quick: useQuick = true }: { quick?: boolean } = {}): RunParser {
  const flags = jobKeys();
  // one command for every parse (commander restores its options' defaults before each): building
  // run's 60 options for each of a job file's thousands of words was most of `jobs validate`'s time
  const command = runCommand(runEntry);
  // commander computes each option's attribute name (camel case, from its flags) several times an
  // option a parse: 60 options, a third of each parse. The names never change: computed once
  for (const option of [...command.options, ...(command.parent as Command).options]) {
    const name = option.attributeName();
    option.attributeName = () => name;
  }
  let current: { check: boolean; options?: RunOptions } = { check: true };
  command.action(() => {
    if (current.check) current.options = runEntry.options(command.processedArgs as string[], command.opts(), command) as RunOptions;
  });
  const quick = quickParser(command, runEntry);
  return {
    flags,
    parse(words, check = true) {
      // a job's words as the job file writes them (`--name=value`), when commander's outcome is
      // certain: its result; anything else (and every error) is commander's own parse below
      const known = check && useQuick ? quick(words) : undefined;
      if (known) return known;
      current = { check };
      try {
        (command.parent as Command).parse(['node', 'reporting', 'run', ...words], { from: 'node' });
      } catch (error) {
        // commander's own errors ("unknown option", "missing argument") are usage errors
        if (error instanceof CommanderError) throw new UsageError(error.message.replace(/^error: /, ''));
        throw error;
      }
      return current.options as RunOptions;
    },
  };
}

/**
 * `run`'s words parsed as commander parses them, for the words a job file makes (the side, then
 * `--name=value` and `--name`), without commander's work around them: each parse walks run's 60
 * options some ten times (defaults, environment, implied values, conflicts, mandatory ones), which
 * was a third of checking a job file of 20,000 jobs (test/bench/RESULTS.md, "A job file of 20,000
 * jobs"). Each word does what commander's own handler does: the option's argParser with the value
 * so far, `false` for `--no-X`, `true` for a switch. Anything else — another form of word, an
 * option with a preset, an error of any kind — answers undefined, and commander parses the words
 * (its error is the one shown). test/cli/run-words.test.ts holds the two to the same result.
 */
export function quickParser(command: Command, runEntry: RunEntry): (words: readonly string[]) => RunOptions | undefined {
  const options = new Map(command.options.filter((option) => option.long).map((option) => [option.long as string, option]));
  // what commander does after the words, which the quick parse cannot: then it never answers
  const plain = command.options.every((option) => {
    const more = option as unknown as { conflictsWith: string[]; implied?: unknown };
    return !option.envVar && !option.mandatory && more.conflictsWith.length === 0 && more.implied === undefined && !option.variadic && option.presetArg === undefined;
  });
  const side = command.registeredArguments[0];
  // (not frozen: a value set on an object over a frozen one fails)
  const defaults: Record<string, unknown> = { ...command.opts() };
  const sources = new Map(Object.keys(defaults).map((key) => [key, command.getOptionValueSource(key)]));
  return (words) => {
    if (!plain || !side?.parseArg || command.registeredArguments.length !== 1) return undefined;
    const [first, ...rest] = words;
    if (first === undefined || first.startsWith('-')) return undefined;
    try {
      // the defaults, read through (a copy of 60 values per job was most of this parse's time)
      const values: Record<string, unknown> = Object.create(defaults) as Record<string, unknown>;
      const given = new Set<string>();
      for (const word of rest) {
        const equals = word.indexOf('=');
        const option = options.get(equals < 0 ? word : word.slice(0, equals));
        if (!option || !word.startsWith('--')) return undefined;
        const name = option.attributeName();
        let value: unknown;
        if (option.required || option.optional) {
          if (equals < 0) return undefined;
          const text = word.slice(equals + 1);
          value = option.parseArg ? option.parseArg(text, values[name]) : text;
          if (value === undefined || value === null) return undefined;
        } else {
          if (equals >= 0 || option.parseArg) return undefined;
          value = !option.negate;
        }
        values[name] = value;
        given.add(name);
      }
      const processed = side.parseArg(first, side.defaultValue as string) as string;
      // what run's options read of its command: where a value came from, and the words as typed
      const seen = { getOptionValueSource: (key: string) => (given.has(key) ? 'cli' : sources.get(key)), parent: { rawArgs: ['node', 'reporting', 'run', ...words] } } as unknown as Command;
      return runEntry.options([processed], values, seen) as RunOptions;
    } catch {
      return undefined;
    }
  };
}
