// One function decides the token, one the base URL (STYLE lesson 6).

import { UsageError } from '../errors.js';
import { shellCommand } from '../io/shell.js';
import { closest } from '../suggest.js';
import type { Profile } from './store.js';

/** Where the token came from: an environment variable (its name), or the profile's store. */
export type TokenSource = string;

/** A profile's own variable: `REPORTING_TOKEN_ACME_FR` for profile "acme-fr" (the name
 * upper-cased, every character other than a letter or a digit written `_`). */
export function profileVariable(base: 'REPORTING_TOKEN' | 'REPORTING_EMAIL' | 'REPORTING_PASSWORD', profileName: string): string {
  return `${base}_${profileName.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** The token the environment gives the profile: its own variable, else REPORTING_TOKEN (which
 * stands for every profile). */
export function environmentToken(env: Record<string, string | undefined>, profileName: string): { token: string; source: TokenSource } | undefined {
  for (const name of [profileVariable('REPORTING_TOKEN', profileName), 'REPORTING_TOKEN']) {
    const token = env[name]?.trim();
    if (token) return { token, source: name };
  }
  return undefined;
}

/** The login the environment gives the profile for a new token: its own pair, else
 * REPORTING_EMAIL and REPORTING_PASSWORD. */
export function environmentLogin(env: Record<string, string | undefined>, profileName: string): { email: string; password: string } | undefined {
  const own = [profileVariable('REPORTING_EMAIL', profileName), profileVariable('REPORTING_PASSWORD', profileName)] as const;
  for (const [emailName, passwordName] of [own, ['REPORTING_EMAIL', 'REPORTING_PASSWORD'] as const]) {
    const email = env[emailName]?.trim();
    const password = env[passwordName];
    if (email && password) return { email, password };
  }
  return undefined;
}

/** Every secret the environment holds for any profile (tokens and passwords): masked everywhere. */
export function environmentSecrets(env: Record<string, string | undefined>): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value?.trim() && /^REPORTING_(TOKEN|PASSWORD)(_[A-Z0-9_]+)?$/.test(name))
    .flatMap(([, value]) => [value as string, (value as string).trim()]);
}

/** A profile that neither the token store (`stored`: the names it holds) nor the environment
 * knows: a mistyped name, said with the closest stored name and the list of them (`run --profile`,
 * a job file's `profile:`). */
export function unknownProfile(profileName: string, stored: readonly string[]): UsageError {
  // (or a stored name it begins with: acme-typo, acme)
  const near = closest(profileName, stored) ?? stored.find((name) => name.length >= 3 && profileName.toLowerCase().startsWith(name.toLowerCase()));
  return new UsageError(
    `profile "${profileName}" does not exist${near ? `; did you mean ${near}?` : ''}`,
    `log in with \`${shellCommand(['reporting', 'login', '--profile', profileName])}\`, set ${profileVariable('REPORTING_TOKEN', profileName)}, or fix the name (${stored.length ? `profiles: ${stored.join(', ')}` : 'no profile is stored yet'})`,
  );
}

export function resolveToken(
  env: Record<string, string | undefined>,
  profile: Profile | undefined,
  profileName = 'default',
): { token: string; source: TokenSource } | undefined {
  const fromEnv = environmentToken(env, profileName);
  if (fromEnv) return fromEnv;
  if (profile?.token) return { token: profile.token, source: 'profile' };
  return undefined;
}

export type BaseUrlSource = '--base-url' | 'REPORTING_BASE_URL' | 'profile';

export function resolveBaseUrl(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  profile: Profile | undefined,
  profileName: string,
  /** the error to throw instead of "no base URL", if any (a profile that does not exist) */
  missing?: () => Error | undefined,
): { url: string; source: BaseUrlSource } {
  const candidates: [string | undefined, BaseUrlSource][] = [
    [flag, '--base-url'],
    [env.REPORTING_BASE_URL, 'REPORTING_BASE_URL'],
    [profile?.baseUrl, 'profile'],
  ];
  for (const [value, source] of candidates) {
    if (value && value.trim()) return { url: checkBaseUrl(value.trim(), source), source };
  }
  throw missing?.() ?? new UsageError(
    `no base URL for profile "${profileName}"`,
    'pass --base-url URL, set REPORTING_BASE_URL, or log in with --base-url to store one (try `reporting sandbox` for a local one)',
  );
}

/** A loopback IP address (127.0.0.0/8, ::1, or 127.x mapped into IPv6). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const host = address.replace(/^\[|\]$/g, '').toLowerCase();
  return host === '::1' || /^(?:::ffff:)?127(\.\d{1,3}){3}$/.test(host);
}

/** A host that may be loopback: a loopback address, or a `localhost` name. Only a first check,
 * before any connection: a name resolves through /etc/hosts and DNS, so the HTTP client checks the
 * address it actually connected to (http.ts loopbackOnly). */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || isLoopbackAddress(host);
}

/** The text of a base URL fit to print: user info (which may hold a password) masked. */
function shown(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/*)[^/?#]*@/i, '$1***@');
}

/** HTTPS only, except plain HTTP to a loopback host (the sandbox); refused before any connection.
 * A URL with user info is refused without being echoed. */
export function checkBaseUrl(text: string, source: string): string {
  // a host and port without the scheme (`127.0.0.1:8787`, `localhost:8787`, `api.example.com/v1`;
  // `localhost:8787` parses as a URL of the scheme `localhost:`)
  const schemeless = !/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && URL.canParse(`https://${text}`);
  const host = schemeless ? new URL(`https://${text}`).hostname : '';
  const withScheme = `give its scheme: ${isLoopback(host) ? 'http' : 'https'}://${shown(text)}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`the base URL from ${source} is not a URL: "${shown(text)}"`, schemeless ? withScheme : 'for example https://api.example.com/v1');
  }
  if (url.username || url.password) {
    throw new UsageError(`the base URL from ${source} must not carry a user name or password`, 'give the address alone; log in with `reporting login`');
  }
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    throw new UsageError(
      `refusing to send a token over plain HTTP to ${url.host} (from ${source})`,
      'use https://; plain http:// is allowed only to loopback hosts such as the sandbox',
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`the base URL from ${source} must be https://, not ${url.protocol}`, schemeless ? withScheme : undefined);
  }
  return url.toString().replace(/\/$/, '');
}
