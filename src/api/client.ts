// The Reporting API: one method per endpoint (reporting-api.md section 4), and the re-login of
// SPEC section 4 when a token is rejected.

import type { Side } from './sides.js';
import { AuthError } from '../errors.js';
import { Http, TokenRejectedError, type Answer, type HttpHooks } from './http.js';
import type { Params } from './encode.js';
import { authResponse, campaignsResponse, statusResponse, submitResponse, type Campaign, type StatusResponse } from './schemas.js';

export interface Credentials {
  /** the token to use now, if any */
  token(): string | undefined;
  /** logs in again with stored or environment credentials and returns the new token; absent when
   * there are none (then a rejected token is an error with a hint to log in) */
  relogin?: (tell?: (note: string) => void) => Promise<string>;
  /** what to tell a user who has no token at all */
  missingHint: string;
  /** the error to throw instead when there is no token, if any (a profile that does not exist) */
  missingError?: () => Error | undefined;
  /** what to tell a user whose token was rejected (without re-login): where that token came from
   * decides the remedy (a stored token: log in again; REPORTING_TOKEN: fix the variable) */
  rejectedHint?: string;
}

/** A client's listeners: its requests' retries and throttles, and what it says of a re-login
 * (a run's event; else the factory's own line). */
export interface ClientHooks extends HttpHooks {
  onNote?: (note: string) => void;
}

export class ReportingClient {
  constructor(readonly http: Http, private readonly credentials: Credentials, private readonly hooks?: ClientHooks) {}

  /** The same client, whose requests tell `hooks` of their retries and throttles instead of the
   * client-wide listeners (a window's task in a chunked run). */
  scoped(hooks: ClientHooks): ReportingClient {
    return new ReportingClient(this.http, this.credentials, hooks);
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  /** POST /auth-reporting with `{"auth":{"email","password"}}`; answers the token. */
  async login(email: string, password: string): Promise<string> {
    this.http.secrets.add(password);
    const answer = await this.http.json(
      { method: 'POST', path: '/auth-reporting', json: { auth: { email, password } } },
      authResponse,
    ).catch((error: unknown) => {
      if (error instanceof TokenRejectedError) throw new AuthError('login failed: the API refused the email or password', 'check the email and password');
      throw error;
    });
    this.http.secrets.add(answer.response.token);
    return answer.response.token;
  }

  /** Whether the API takes `token`: GET /campaigns, the one read-only endpoint, with it. Any 2xx
   * answer will do (its body is not read); a rejected token is an AuthError. */
  async checkToken(token: string, hint: string): Promise<void> {
    this.http.secrets.add(token);
    const answer = await this.http.send({ method: 'GET', path: '/campaigns', token }).catch((error: unknown) => {
      if (error instanceof TokenRejectedError) throw new AuthError(error.message.replace(/^the API rejected the token/, 'the API rejected this token'), hint);
      throw error;
    });
    await answer.body.dump().catch(() => undefined);
  }

  async submit(side: Side, params: Params): Promise<string> {
    return this.authed((token) => this.http.json({ method: 'POST', path: `/${side}-reporting`, params, token, hooks: this.hooks }, submitResponse));
  }

  /** `signal` ends the request and its retries early (a --max-wait): its reason is thrown. */
  async status(id: string, signal?: AbortSignal): Promise<StatusResponse> {
    return this.authed((token) => this.http.json({ method: 'POST', path: '/status-reporting', params: { id }, token, signal, hooks: this.hooks }, statusResponse));
  }

  /** POST /download-reporting: the answer's body is left unread, to be streamed. */
  async download(id: string): Promise<Answer> {
    return this.authed((token) => this.http.send({ method: 'POST', path: '/download-reporting', params: { id }, token, hooks: this.hooks }));
  }

  async campaigns(): Promise<Campaign[]> {
    return this.authed((token) => this.http.json({ method: 'GET', path: '/campaigns', token }, campaignsResponse));
  }

  /** Throws what a request would, with no request: no token, and no login to get one. A run
   * asks before it opens its state or plans a window, so that one line says so, not every window. */
  requireCredentials(): void {
    if (!this.credentials.token() && !this.credentials.relogin) throw this.credentials.missingError?.() ?? new AuthError('no token: not logged in', this.credentials.missingHint);
  }

  private async authed<T>(call: (token: string) => Promise<T>): Promise<T> {
    let token = this.credentials.token();
    if (!token) {
      this.requireCredentials();
      token = await this.relogin();
    }
    this.http.secrets.add(token);
    try {
      return await call(token);
    } catch (error) {
      if (!(error instanceof TokenRejectedError)) throw error;
      if (!this.credentials.relogin) {
        throw new AuthError(error.message, this.credentials.rejectedHint ?? 'run `reporting login` again (or set REPORTING_EMAIL and REPORTING_PASSWORD for unattended jobs)');
      }
    }
    // once per rejected request (SPEC section 4): the repeated request is not retried again
    const fresh = await this.relogin();
    try {
      return await call(fresh);
    } catch (error) {
      if (error instanceof TokenRejectedError) throw new AuthError(`${error.message}, even after logging in again`);
      throw error;
    }
  }

  private async relogin(): Promise<string> {
    this.http.trace('  token rejected or missing: logging in again with REPORTING_EMAIL/REPORTING_PASSWORD');
    return (this.credentials.relogin as (tell?: (note: string) => void) => Promise<string>)(this.hooks?.onNote);
  }
}
