import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { optionsOf } from './options.js';

export const logoutCommand: CommandSpec = {
  name: 'logout',
  summary: "forget the profile's token (its base URL is kept)",
  define(command: Command, ctx: Context) {
    command
      .addHelpText('after', `
Examples:
  reporting logout
  reporting logout --profile staging`)
      .action(async (_options: object, cmd: Command) => run(optionsOf<object>(cmd), ctx));
  },
};

export async function run(options: GlobalOptions, ctx: Context): Promise<void> {
  const { Session } = await import('../session.js');
  const session = new Session(ctx, options);
  const had = Boolean(session.profile()?.token);
  if (had) {
    await session.store().update(session.profileName, (current) => {
      if (!current) return undefined;
      const { token: _token, source: _source, savedAt: _savedAt, email: _email, ...rest } = current;
      return rest;
    });
  }
  if (options.json) ctx.stdout.write(`${JSON.stringify({ profile: session.profileName, loggedOut: had })}\n`);
  else if (!options.quiet) {
    ctx.stderr.write(had
      ? `Logged out: the token of profile "${session.profileName}" is forgotten.\n`
      : `Profile "${session.profileName}" had no stored token.\n`);
  }
  if (ctx.env.REPORTING_TOKEN && !options.quiet) {
    ctx.stderr.write('Note: REPORTING_TOKEN is set in the environment and still applies.\n');
  }
}
