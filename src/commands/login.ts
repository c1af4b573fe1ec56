import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { optionsOf } from './options.js';

export interface LoginOptions {
  tokenStdin?: boolean;
  email?: string;
  passwordStdin?: boolean;
}

export const loginCommand: CommandSpec = {
  name: 'login',
  summary: 'store a token for a profile: a console token, or email and password',
  define(command: Command, ctx: Context) {
    command
      .option('--token-stdin', 'read a console token from standard input')
      .option('--email <email>', 'log in with email and password (POST /auth-reporting)')
      .option('--password-stdin', 'with --email: read the password from standard input (else REPORTING_PASSWORD, else a prompt)')
      .addHelpText('after', `
Examples:
  pbpaste | reporting login --token-stdin --base-url https://api.example.com
  reporting login --email me@example.com --base-url https://api.example.com
  reporting login --profile staging --email me@example.com --password-stdin < password.txt`)
      .action(async (_options: LoginOptions, cmd: Command) => run(optionsOf<LoginOptions>(cmd), ctx));
  },
};

export async function run(options: LoginOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { Session } = await import('../session.js');
  const { readSecretFromStdin, promptSecret } = await import('../prompt.js');
  const { UsageError } = await import('../errors.js');
  const session = new Session(ctx, options);
  try {
    if (options.tokenStdin && options.email) {
      throw new UsageError('--token-stdin and --email are two ways to log in: choose one');
    }
    if (options.passwordStdin && !options.email) throw new UsageError('--password-stdin goes with --email');
    const { url, source: urlSource } = session.baseUrl();
    let token: string;
    let email: string | undefined;
    if (options.email) {
      email = options.email.trim();
      let password: string;
      if (options.passwordStdin) password = await readSecretFromStdin(ctx, 'password', '--password-stdin');
      else if (ctx.env.REPORTING_PASSWORD) password = ctx.env.REPORTING_PASSWORD;
      else password = await promptSecret(ctx, 'password', '--password-stdin or REPORTING_PASSWORD');
      session.secrets.add(password);
      token = await session.client().login(email, password);
    } else {
      token = options.tokenStdin
        ? await readSecretFromStdin(ctx, 'token', '--token-stdin')
        : await promptSecret(ctx, 'paste your token', '--token-stdin (or --email with --password-stdin)');
      session.secrets.add(token);
      if (/\s/.test(token)) throw new UsageError('the token holds white space: paste only the token');
    }
    // a base URL given now (flag or environment) is stored with the token; else the stored one stays
    await session.saveToken(token, email ? 'login' : 'console', urlSource === 'profile' ? undefined : url, email);
    if (options.json) {
      ctx.stdout.write(`${JSON.stringify({ profile: session.profileName, baseUrl: url, source: email ? 'login' : 'console', email: email ?? null })}\n`);
    } else if (!options.quiet) {
      ctx.stderr.write(`Logged in: profile "${session.profileName}", ${url}${email ? `, as ${email}` : ''}. Token stored in ${session.store().path}\n`);
    }
  } finally {
    await session.close();
  }
}
