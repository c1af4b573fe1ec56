// `logout`: forget the profile's token (its base URL is kept).

import { environmentToken } from '../auth/resolve.js';
import type { Factory } from '../factory.js';

export type LogoutOptions = Record<string, never>;

export async function run(_opts: LogoutOptions, f: Factory): Promise<void> {
  const had = Boolean(f.profile()?.token);
  if (had) {
    await f.store().update(f.profileName, (current) => {
      if (!current) return undefined;
      const { token: _token, source: _source, savedAt: _savedAt, email: _email, ...rest } = current;
      return rest;
    });
  }
  if (f.globals.json) f.stdout.write(`${JSON.stringify({ profile: f.profileName, loggedOut: had })}\n`);
  else if (!f.globals.quiet) {
    f.stderr.write(had
      ? `Logged out: the token of profile "${f.profileName}" is forgotten.\n`
      : `Profile "${f.profileName}" had no stored token.\n`);
  }
  const fromEnvironment = environmentToken(f.env, f.profileName);
  if (fromEnvironment && !f.globals.quiet) {
    f.stderr.write(`Note: ${fromEnvironment.source} is set in the environment and still applies.\n`);
  }
}
