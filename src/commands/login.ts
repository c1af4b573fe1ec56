// `login`: store a token for a profile, pasted from the console or obtained with email and password.

import { UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { promptSecret, readSecretFromStdin } from '../io/prompt.js';

export interface LoginOptions {
  tokenStdin: boolean;
  email?: string;
  passwordStdin: boolean;
  /** false with --no-verify: a console token is stored without asking the API (offline) */
  verify?: boolean;
}

export async function run(opts: LoginOptions, f: Factory): Promise<void> {
  if (opts.passwordStdin && !opts.email) throw new UsageError('--password-stdin goes with --email');
  const { url, source: urlSource } = f.baseUrl(true);
  let token: string;
  let email: string | undefined;
  if (opts.email) {
    email = opts.email.trim();
    let password: string;
    if (opts.passwordStdin) password = await readSecretFromStdin(f, 'password', '--password-stdin');
    else if (f.env.REPORTING_PASSWORD) password = f.env.REPORTING_PASSWORD;
    else password = await promptSecret(f, 'password', '--password-stdin or REPORTING_PASSWORD');
    f.secrets.add(password);
    token = await f.client().login(email, password);
  } else {
    token = opts.tokenStdin
      ? await readSecretFromStdin(f, 'token', '--token-stdin')
      : await promptSecret(f, 'token', '--token-stdin (or --email with --password-stdin)', 'Paste your token');
    if (token === '') throw new UsageError('no token was pasted', 'paste the token from the web console, or use --token-stdin');
    f.secrets.add(token);
    if (/\s/.test(token)) throw new UsageError('the token holds white space: paste only the token');
    // as a login with email and password, a pasted token is checked before it is stored: a typo
    // or a token for another platform is found now, not by the next night's job
    if (opts.verify !== false) await f.client().checkToken(token, `paste the whole token from the web console of ${url}; --no-verify stores it without checking`);
  }
  // a base URL given now (flag or environment) is stored with the token; else the stored one stays
  await f.saveToken(token, email ? 'login' : 'console', urlSource === 'profile' ? undefined : url, email);
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify({ profile: f.profileName, baseUrl: url, source: email ? 'login' : 'console', email: email ?? null })}\n`);
  } else if (!f.globals.quiet) {
    f.stderr.write(`Logged in: profile "${f.profileName}", ${url}${email ? `, as ${email}` : ''}. Token stored in ${f.store().path}\n`);
  }
}
