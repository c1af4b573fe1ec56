// `whoami`: the active profile, its base URL and whether a token is stored (never the token).

import { environmentLogin, resolveToken } from '../auth/resolve.js';
import { parisTime } from '../clock.js';
import type { Factory } from '../factory.js';

export type WhoamiOptions = Record<string, never>;

export async function run(_opts: WhoamiOptions, f: Factory): Promise<void> {
  const profiles = f.store().profiles();
  const profile = profiles[f.profileName];
  let baseUrl: { url: string; source: string } | undefined;
  try {
    baseUrl = f.baseUrl();
  } catch {
    baseUrl = undefined;
  }
  const token = resolveToken(f.env, profile, f.profileName);
  // savedAt and email describe the token in use: none of them when REPORTING_TOKEN overrides it
  const stored = token?.source === 'profile';
  const info = {
    profile: f.profileName,
    baseUrl: baseUrl?.url ?? null,
    baseUrlFrom: baseUrl?.source ?? null,
    token: token ? (stored ? `stored (${profile?.source ?? 'console'})` : `from ${token.source}`) : 'none',
    savedAt: stored ? (profile?.savedAt ?? null) : null,
    email: stored ? (profile?.email ?? null) : null,
    /** a stored token that a token from the environment overrides */
    storedTokenUnused: !stored && Boolean(profile?.token),
    relogin: Boolean(environmentLogin(f.env, f.profileName)),
    store: f.store().path,
    profiles: Object.keys(profiles).sort(),
    /** REPORTING_NOW: the calendar's time and the real one (null: the calendar is the real clock) */
    now: f.calendar.moved ? { calendar: parisTime(f.calendar.now()), real: parisTime(f.now()), REPORTING_NOW: f.calendar.moved.setting } : null,
  };
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify(info)}\n`);
    return;
  }
  const lines = [
    `profile:  ${info.profile}`,
    `base URL: ${info.baseUrl ? `${info.baseUrl} (from ${info.baseUrlFrom})` : 'none (set with --base-url, REPORTING_BASE_URL, or login --base-url)'}`,
    `token:    ${info.token}${info.savedAt ? `, saved ${info.savedAt}` : ''}${info.storedTokenUnused ? ' (the profile\'s stored token is not used while it is set)' : ''}`,
  ];
  if (info.email) lines.push(`email:    ${info.email}`);
  if (info.relogin) lines.push('re-login: REPORTING_EMAIL and REPORTING_PASSWORD are set');
  lines.push(`store:    ${info.store}`);
  if (info.profiles.length > 1) lines.push(`profiles: ${info.profiles.join(', ')}`);
  if (info.now) lines.push(`now:      ${info.now.calendar} (moved by REPORTING_NOW=${info.now.REPORTING_NOW}; the real clock says ${info.now.real})`);
  f.stdout.write(`${lines.join('\n')}\n`);
}
