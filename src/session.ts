// The shared dependencies of the API commands, built in one place and only when first needed
// (STYLE lesson 4): the token store, the active profile, the base URL and the API client.

import type { GlobalOptions } from './cli.js';
import type { Context } from './context.js';
import { ReportingClient } from './api/client.js';
import { Http } from './api/http.js';
import { registerSecret } from './api/redact.js';
import { resolveBaseUrl, resolveToken } from './auth/resolve.js';
import { TokenStore, configDir, type Profile } from './auth/store.js';
import { BOUNDS, parseDuration } from './duration.js';
import { UsageError } from './errors.js';

export class Session {
  readonly profileName: string;
  private storeInstance?: TokenStore;
  private clientInstance?: ReportingClient;
  /** the active profile as last read from the store (read once per command, forgotten on write) */
  private profileRead?: { profile: Profile | undefined };

  constructor(readonly ctx: Context, readonly globals: GlobalOptions) {
    this.profileName = globals.profile?.trim() || 'default';
    registerSecret(ctx.env.REPORTING_TOKEN);
    registerSecret(ctx.env.REPORTING_PASSWORD);
  }

  store(): TokenStore {
    this.storeInstance ??= new TokenStore(configDir(this.ctx.env));
    return this.storeInstance;
  }

  profile(): Profile | undefined {
    if (!this.profileRead) {
      const profile = this.store().get(this.profileName);
      registerSecret(profile?.token);
      this.profileRead = { profile };
    }
    return this.profileRead.profile;
  }

  baseUrl() {
    return resolveBaseUrl(this.globals.baseUrl, this.ctx.env, this.profile(), this.profileName);
  }

  timeoutMs(): number {
    return parseDuration(this.globals.timeout ?? '60s', '--timeout', BOUNDS.timeout);
  }

  retries(): number {
    const text = this.globals.retries ?? '4';
    if (!/^\d+$/.test(text.trim()) || Number(text) > 100) {
      throw new UsageError(`--retries wants a whole number from 0 to 100, not "${text}"`);
    }
    return Number(text);
  }

  trace(): ((line: string) => void) | undefined {
    return this.globals.verbose ? (line) => { this.ctx.stderr.write(`${line}\n`); } : undefined;
  }

  /** A client for this base URL (validated: HTTPS, or HTTP to loopback), not yet connected. */
  http(baseUrl: string): Http {
    return new Http({
      baseUrl,
      timeoutMs: this.timeoutMs(),
      retries: this.retries(),
      encoding: this.globals.body === 'json' ? 'json' : 'form',
      userAgent: `reporting/${this.ctx.version} (node ${process.versions.node})`,
      signal: this.ctx.signal,
      dispatcher: this.ctx.dispatcher,
      trace: this.trace(),
      now: this.ctx.now,
    });
  }

  /** The client for the active profile, with its token and, when REPORTING_EMAIL and
   * REPORTING_PASSWORD are set, the means to log in again once a token is rejected. */
  client(): ReportingClient {
    if (this.clientInstance) return this.clientInstance;
    const { url } = this.baseUrl();
    const env = this.ctx.env;
    const email = env.REPORTING_EMAIL?.trim();
    const password = env.REPORTING_PASSWORD;
    let current = resolveToken(env, this.profile())?.token;
    const client = new ReportingClient(this.http(url), {
      token: () => current,
      missingHint: `run \`reporting login --profile ${this.profileName}\`, or set REPORTING_TOKEN`,
      relogin: email && password
        ? async () => {
          current = await client.login(email, password);
          await this.saveToken(current, 'login', url, email);
          return current;
        }
        : undefined,
    });
    this.clientInstance = client;
    return client;
  }

  async saveToken(token: string, source: 'console' | 'login', baseUrl: string | undefined, email?: string): Promise<void> {
    this.profileRead = undefined;
    await this.store().update(this.profileName, (current) => ({
      ...current,
      baseUrl: baseUrl ?? current?.baseUrl,
      token,
      source,
      savedAt: new Date(this.ctx.now()).toISOString(),
      email: source === 'login' ? email : undefined,
    }));
  }

  async close(): Promise<void> {
    await this.clientInstance?.close();
  }
}

/** Runs a command body with a session, and always closes its connections. */
export async function withSession<T>(ctx: Context, globals: GlobalOptions, body: (session: Session) => Promise<T>): Promise<T> {
  const session = new Session(ctx, globals);
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}
