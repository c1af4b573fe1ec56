// One function decides the token, one the base URL (STYLE lesson 6).

import { UsageError } from '../errors.js';
import type { Profile } from './store.js';

export type TokenSource = 'REPORTING_TOKEN' | 'profile';

export function resolveToken(
  env: Record<string, string | undefined>,
  profile: Profile | undefined,
): { token: string; source: TokenSource } | undefined {
  const fromEnv = env.REPORTING_TOKEN?.trim();
  if (fromEnv) return { token: fromEnv, source: 'REPORTING_TOKEN' };
  if (profile?.token) return { token: profile.token, source: 'profile' };
  return undefined;
}

export type BaseUrlSource = '--base-url' | 'REPORTING_BASE_URL' | 'profile';

export function resolveBaseUrl(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  profile: Profile | undefined,
  profileName: string,
): { url: string; source: BaseUrlSource } {
  const candidates: [string | undefined, BaseUrlSource][] = [
    [flag, '--base-url'],
    [env.REPORTING_BASE_URL, 'REPORTING_BASE_URL'],
    [profile?.baseUrl, 'profile'],
  ];
  for (const [value, source] of candidates) {
    if (value && value.trim()) return { url: checkBaseUrl(value.trim(), source), source };
  }
  throw new UsageError(
    `no base URL for profile "${profileName}"`,
    'pass --base-url URL, set REPORTING_BASE_URL, or log in with --base-url to store one (try `reporting sandbox` for a local one)',
  );
}

export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** HTTPS only, except plain HTTP to a loopback host (the sandbox); refused before any connection. */
export function checkBaseUrl(text: string, source: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`the base URL from ${source} is not a URL: "${text}"`, 'for example https://api.example.com/v1');
  }
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    throw new UsageError(
      `refusing to send a token over plain HTTP to ${url.host} (from ${source})`,
      'use https://; plain http:// is allowed only to loopback hosts such as the sandbox',
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`the base URL from ${source} must be https://, not ${url.protocol}`);
  }
  if (url.username || url.password) throw new UsageError(`the base URL from ${source} must not carry credentials`);
  return url.toString().replace(/\/$/, '');
}
