// `run`'s own parser, handed to the commands that hold `run` command lines elsewhere than argv (a
// job file's jobs): the same flags, argParsers, did-you-mean and cross-flag checks as `reporting
// run ...`, so that a job is exactly the `run` command line it stands for. The commands receive it
// as a function (they never import cli/).

import { Command, CommanderError, type Option } from 'commander';
import { UsageError } from '../errors.js';
import type { RunOptions } from '../commands/run.js';

/** One of run's long flags, as a job file's key: its name without `--`. */
export interface RunFlag {
  name: string;
  /** takes a value (`--since <time>`), else a switch (`--bom`, `--no-split`) */
  value: boolean;
  /** `--no-X`: the key may be `no-X: true` or `X: false` */
  negate: boolean;
  /** a list (comma-separated, repeatable) or a repeatable value */
  many: boolean;
}

export interface RunParser {
  flags: readonly RunFlag[];
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

function runCommand(runEntry: RunEntry): Command {
  const program = new Command('reporting').exitOverride().configureOutput({ writeOut() {}, writeErr() {}, outputError() {} });
  const command = program.command('run').exitOverride().configureOutput(program.configureOutput());
  runEntry.define(command);
  return command;
}

/** lists (`<list>`, `<ids>`) and repeatable values (`<name>`, `<name=value>`) take a YAML list */
const isMany = (option: Option) => /<(list|ids|name|name=value)>$/.test(option.flags);

export function runParser(runEntry: RunEntry): RunParser {
  const flags = runCommand(runEntry).options
    .filter((option) => option.long && option.long !== '--help' && option.long !== '--plan')
    .map((option) => ({ name: (option.long as string).slice(2), value: option.required || option.optional, negate: option.negate, many: isMany(option) }));
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
  return {
    flags,
    parse(words, check = true) {
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
