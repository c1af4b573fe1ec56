import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { optionsOf } from './options.js';

export const whoamiCommand: CommandSpec = {
  name: 'whoami',
  summary: 'show the active profile, base URL and whether a token is stored (never the token)',
  define(command: Command, ctx: Context) {
    command
      .addHelpText('after', `
Examples:
  reporting whoami
  reporting whoami --profile staging --json`)
      .action(async (_options: object, cmd: Command) => run(optionsOf<object>(cmd), ctx));
  },
};

export async function run(options: GlobalOptions, ctx: Context): Promise<void> {
  const { Session } = await import('../session.js');
  const { resolveToken } = await import('../auth/resolve.js');
  const session = new Session(ctx, options);
  const profiles = session.store().profiles();
  const profile = profiles[session.profileName];
  let baseUrl: { url: string; source: string } | undefined;
  try {
    baseUrl = session.baseUrl();
  } catch {
    baseUrl = undefined;
  }
  const token = resolveToken(ctx.env, profile);
  const info = {
    profile: session.profileName,
    baseUrl: baseUrl?.url ?? null,
    baseUrlFrom: baseUrl?.source ?? null,
    token: token ? (token.source === 'profile' ? `stored (${profile?.source ?? 'console'})` : 'from REPORTING_TOKEN') : 'none',
    savedAt: profile?.token ? (profile.savedAt ?? null) : null,
    email: profile?.email ?? null,
    relogin: Boolean(ctx.env.REPORTING_EMAIL && ctx.env.REPORTING_PASSWORD),
    store: session.store().path,
    profiles: Object.keys(profiles).sort(),
  };
  if (options.json) {
    ctx.stdout.write(`${JSON.stringify(info)}\n`);
    return;
  }
  const lines = [
    `profile:  ${info.profile}`,
    `base URL: ${info.baseUrl ? `${info.baseUrl} (from ${info.baseUrlFrom})` : 'none (set with --base-url, REPORTING_BASE_URL, or login --base-url)'}`,
    `token:    ${info.token}${info.savedAt ? `, saved ${info.savedAt}` : ''}`,
  ];
  if (info.email) lines.push(`email:    ${info.email}`);
  if (info.relogin) lines.push('re-login: REPORTING_EMAIL and REPORTING_PASSWORD are set');
  lines.push(`store:    ${info.store}`);
  if (info.profiles.length > 1) lines.push(`profiles: ${info.profiles.join(', ')}`);
  ctx.stdout.write(`${lines.join('\n')}\n`);
}
