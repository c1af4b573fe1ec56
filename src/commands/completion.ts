// `completion <shell>`: print a shell completion script, generated from the program's commands
// and options (their value lists included) and the contract's vocabulary.

import type { Command } from 'commander';
import { completionScript, specOf, type Shell } from '../completion/scripts.js';
import type { Factory } from '../factory.js';

export interface CompletionOptions {
  shell: Shell;
  /** the program, whose commands and options the script completes */
  program: Command;
}

export async function run(opts: CompletionOptions, f: Factory): Promise<void> {
  f.stdout.write(completionScript(opts.shell, specOf(opts.program)));
}
