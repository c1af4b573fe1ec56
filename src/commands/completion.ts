import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { CommandSpec } from './index.js';
import { optionsOf } from './options.js';

export const completionCommand: CommandSpec = {
  name: 'completion',
  summary: 'print a shell completion script (bash, zsh or fish)',
  define(command: Command, ctx: Context) {
    command
      .argument('<shell>', 'bash, zsh or fish')
      .addHelpText('after', `
Examples:
  source <(reporting completion bash)                                  # in ~/.bashrc
  reporting completion zsh > "\${fpath[1]}/_reporting"                  # then restart zsh
  reporting completion fish > ~/.config/fish/completions/reporting.fish`)
      .action(async (shell: string, _options: object, cmd: Command) => {
        const { completionScript, specOf, SHELLS } = await import('../completion.js');
        const { UsageError } = await import('../errors.js');
        const { didYouMean } = await import('../suggest.js');
        const wanted = shell.toLowerCase();
        if (!(SHELLS as readonly string[]).includes(wanted)) {
          throw new UsageError(`no completion for the shell "${shell}"${didYouMean(shell, SHELLS)}`, `choose ${SHELLS.join(', ')}`);
        }
        optionsOf(cmd);
        ctx.stdout.write(completionScript(wanted as (typeof SHELLS)[number], specOf(cmd.parent as Command)));
      });
  },
};

/** Hidden: the profile names, one per line, for completion scripts. Never fails loudly. */
export const profilesCommand: CommandSpec = {
  name: '__profiles',
  summary: 'profile names, for completion scripts',
  hidden: true,
  define(command: Command, ctx: Context) {
    command.action(async () => {
      const { TokenStore, configDir } = await import('../auth/store.js');
      try {
        const names = Object.keys(new TokenStore(configDir(ctx.env)).profiles()).sort();
        if (names.length) ctx.stdout.write(`${names.join('\n')}\n`);
      } catch {
        // an unreadable store completes nothing
      }
    });
  },
};
