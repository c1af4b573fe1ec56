// The one place shared dependencies are built (STYLE lesson 6). The process hands in a Context
// (streams, environment, clock, cancellation); the factory adds the typed global flags and, built
// lazily on first use, the token store, the active profile, the base URL and the API client.
// Commands receive it whole and never reach for process.* themselves, so tests run them
// in-process with fakes. It imports the HTTP client and the token store, so the program loads it
// only when a command runs (src/cli/program.ts), never for --help.

import { ReportingClient } from './api/client.js';
import { Connections, Http } from './api/http.js';
import { Secrets } from './api/redact.js';
import { environmentLogin, environmentSecrets, environmentToken, profileVariable, resolveBaseUrl, resolveToken, unknownProfile, type BaseUrlSource } from './auth/resolve.js';
import { calendarFrom, movedWarning, offsetText, type Calendar } from './clock.js';
import { StoreError, TokenStore, configDir, type Profile } from './auth/store.js';
import type { Context, Output } from './context.js';
import { sinkSecrets } from './destinations/sinks.js';
import type { EngineDeps } from './engine/deps.js';
import { jsonLine, safeText } from './io/safe-text.js';
import { shellCommand } from './io/shell.js';
import { sleepFor } from './retry.js';

/** The program's global flags, parsed and typed at the edge (src/cli/program.ts). */
export interface GlobalFlags {
  profile: string;
  baseUrl?: string;
  json: boolean;
  quiet: boolean;
  verbose: boolean;
  timeoutMs: number;
  retries: number;
  /** false with --no-color, NO_COLOR or TERM=dumb */
  color: boolean;
  body: 'form' | 'json';
  /** the log is JSON lines (--log-format json, REPORTING_LOG_FORMAT=json): so are -v's traces */
  jsonLog?: boolean;
}

export const DEFAULT_GLOBALS: GlobalFlags = {
  profile: 'default', json: false, quiet: false, verbose: false, timeoutMs: 60_000, retries: 4, color: true, body: 'form',
};

export interface Factory extends Context {
  readonly globals: GlobalFlags;
  /** the calendar's clock: `now` moved by REPORTING_NOW (src/clock.ts); timers keep `now` */
  readonly calendar: Calendar;
  /** the secrets this command knows (tokens, passwords): masked in every trace and message */
  readonly secrets: Secrets;
  readonly profileName: string;
  store(): TokenStore;
  /** the active profile, read once per command (forgotten when a token is saved) */
  profile(): Profile | undefined;
  /** the active profile's base URL, found once per command (forgotten when a token is saved);
   * `creating` (login): a profile not stored yet is no mistake */
  baseUrl(creating?: boolean): { url: string; source: BaseUrlSource };
  /** an HTTP helper for this base URL (validated: HTTPS, or HTTP to loopback), not yet connected */
  http(baseUrl: string): Http;
  /** the client of the active profile: its token, and re-login from REPORTING_EMAIL and
   * REPORTING_PASSWORD once a token is rejected */
  client(): ReportingClient;
  saveToken(token: string, source: 'console' | 'login', baseUrl: string | undefined, email?: string): Promise<void>;
  /** a line of -v trace on stderr, or undefined without -v */
  trace: ((line: string) => void) | undefined;
  /** a factory for one job of `jobs`: the job's profile, --json off (the fleet's result is the
   * one JSON document); `stderr`: the job's own lines */
  forProfile(profile: string, stderr?: Output): Factory;
  /** closes what was opened (connections) */
  close(): Promise<void>;
}

/** What a job's factory shares with the factory it is made from (forProfile). */
interface Shared {
  /** A fleet's jobs share one set: the environment's secrets are every profile's, so each job's own
   * copy of them (and its own pattern of them) cost 3,000 jobs of 1,000 profiles 3 million strings. */
  secrets: Secrets;
  /** the process's keep-alive agent, closed by the first factory */
  connections: Connections;
}

/** The command's factory; `shared`: what a job's factory takes of the fleet's (forProfile). */
export function createFactory(ctx: Context, globals: GlobalFlags, shared?: Shared): Factory {
  const profileName = globals.profile.trim() || 'default';
  // an unparsable REPORTING_NOW stops the command here, before it does anything (exit 2)
  const calendar = calendarFrom(ctx.env.REPORTING_NOW, ctx.now);
  const secrets = shared?.secrets ?? environmentSecretsOf(ctx);
  // one keep-alive agent for the process: a fleet's jobs reuse each other's sockets
  const connections = shared?.connections ?? new Connections(globals.timeoutMs);
  let store: TokenStore | undefined;
  let profileRead: { profile: Profile | undefined } | undefined;
  let baseUrlFound: ReturnType<Factory['baseUrl']> | undefined;
  let client: ReportingClient | undefined;
  const trace = traceOf(ctx, globals);
  // a token from the environment (REPORTING_TOKEN_<PROFILE>, REPORTING_TOKEN) and a base URL from
  // the flag or the environment need nothing stored
  const environmentSuffices = () => Boolean(environmentToken(ctx.env, profileName) && (globals.baseUrl?.trim() || ctx.env.REPORTING_BASE_URL?.trim()));

  const factory: Factory = {
    ...ctx,
    globals,
    calendar,
    secrets,
    profileName,
    trace,
    store() {
      store ??= new TokenStore(configDir(ctx.env, ctx.host.platform), ctx.host, undefined, { sleep: ctx.sleep, random: ctx.random });
      return store;
    },
    profile() {
      if (!profileRead) {
        let profile: Profile | undefined;
        try {
          profile = factory.store().get(profileName);
        } catch (error) {
          // an unreadable or corrupt store must not stop a job that needs nothing stored
          if (!(error instanceof StoreError) || !environmentSuffices()) throw error;
          trace?.(`note: ${error.message}; going on with ${environmentToken(ctx.env, profileName)?.source ?? 'REPORTING_TOKEN'} and the base URL given`);
        }
        secrets.add(profile?.token);
        profileRead = { profile };
      }
      return profileRead.profile;
    },
    baseUrl(creating) {
      // (every job of a job file's plan and status names it, and a run's every window; an error each time)
      // no base URL because the profile's name is mistyped: said so, with the names there are
      baseUrlFound ??= resolveBaseUrl(globals.baseUrl, ctx.env, factory.profile(), profileName, creating ? undefined : () => unknown(factory));
      return baseUrlFound;
    },
    http: (baseUrl) => httpOf(ctx, globals, baseUrl, trace, secrets, connections),
    client() {
      client ??= clientOf(factory);
      return client;
    },
    async saveToken(token, source, baseUrl, email) {
      profileRead = undefined;
      baseUrlFound = undefined;
      await factory.store().update(profileName, (current) => ({
        ...current,
        baseUrl: baseUrl ?? current?.baseUrl,
        token,
        source,
        savedAt: new Date(ctx.now()).toISOString(),
        email: source === 'login' ? email : undefined,
      }));
    },
    forProfile: (profile, stderr) => createFactory({ ...ctx, ...(stderr ? { stderr } : {}) }, { ...globals, profile, json: false }, { secrets, connections }),
    async close() {
      await client?.close();
      // a job's factory leaves the shared connections to the one it was made from
      if (!shared) await connections.close();
    },
  };
  return factory;
}

/** A profile named (not `default`) that neither the token store nor the environment (a token or
 * a login for it: its own variables, or REPORTING_TOKEN, REPORTING_EMAIL and REPORTING_PASSWORD,
 * which stand for every profile) knows: its error, else undefined. */
function unknown(factory: Factory): Error | undefined {
  const { profileName, env } = factory;
  if (profileName === 'default' || environmentToken(env, profileName) || environmentLogin(env, profileName) || factory.profile()) return undefined;
  let stored: string[] = [];
  try {
    stored = Object.keys(factory.store().profiles());
  } catch {
    // an unreadable store: the error names no profile
  }
  return unknownProfile(profileName, stored);
}

/** Every profile's token and password the environment holds (REPORTING_TOKEN, REPORTING_TOKEN_ACME,
 * ...), and the AWS secrets the SDK reads for -o s3://: none may ever show. */
function environmentSecretsOf(ctx: Context): Secrets {
  const secrets = new Secrets();
  for (const secret of environmentSecrets(ctx.env)) secrets.add(secret);
  // what the outputs' clients read (destinations/sinks.ts: -o s3://, the AWS SDK's)
  for (const secret of sinkSecrets(ctx.env)) secrets.add(secret);
  return secrets;
}

/** What the engine takes of the factory (src/engine/deps.ts): the Context and a few of its members. */
export function engineDeps(f: Factory): EngineDeps {
  const { stdout, stderr, stdin, env, cwd, now, random, signal, dispatcher, version, host, calendar, secrets, trace, profileName, globals } = f;
  return {
    stdout, stderr, stdin, env, cwd, now, random, signal, dispatcher, version, host, calendar, secrets, trace, profileName, globals,
    sleep: f.sleep ?? sleepFor, client: () => f.client(), baseUrl: () => f.baseUrl(),
  };
}

/** -v's trace: lines on stderr (JSON lines with --log-format json), quoting the server's answers
 * through the one sanitizer; undefined without -v. */
function traceOf(ctx: Context, globals: GlobalFlags): Factory['trace'] {
  if (!globals.verbose) return undefined;
  if (globals.jsonLog) return (line) => { ctx.stderr.write(`${jsonLine({ v: 1, ts: new Date(ctx.now()).toISOString(), event: 'trace', message: line.trim() })}\n`); };
  return (line) => { ctx.stderr.write(`${safeText(line)}\n`); };
}

function httpOf(ctx: Context, globals: GlobalFlags, baseUrl: string, trace: Factory['trace'], secrets: Secrets, connections: Connections): Http {
  const http = new Http({
    baseUrl,
    timeoutMs: globals.timeoutMs,
    retries: globals.retries,
    encoding: globals.body,
    userAgent: `reporting/${ctx.version} (node ${ctx.host.nodeVersion})`,
    signal: ctx.signal,
    dispatcher: ctx.dispatcher,
    connections,
    trace,
    now: ctx.now,
    random: ctx.random,
    sleep: ctx.sleep,
    secrets,
  });
  // retries are visible without -v (whose trace already says them); -q silences them. On a
  // terminal the line replaces a live progress line, which draws itself again below it.
  if (!globals.quiet && !globals.verbose) {
    http.onRetry = (line) => { ctx.stderr.write(`${ctx.stderr.isTTY ? '\r\u001b[K' : ''}${safeText(line)}\n`); };
  }
  return http;
}

/** The client of the factory's profile: its token, and re-login from REPORTING_EMAIL and
 * REPORTING_PASSWORD once a token is rejected. */
function clientOf(factory: Factory): ReportingClient {
  const { env, profileName, globals, trace } = factory;
  const { url } = factory.baseUrl();
  const stored = factory.profile();
  const login = environmentLogin(env, profileName);
  const resolved = resolveToken(env, stored, profileName);
  const fromEnvironment = resolved !== undefined && resolved.source !== 'profile';
  let current = resolved?.token;
  const created: ReportingClient = new ReportingClient(factory.http(url), {
    token: () => current,
    missingHint: `run \`${shellCommand(['reporting', 'login', '--profile', profileName])}\`, or set ${profileVariable('REPORTING_TOKEN', profileName)} (or REPORTING_TOKEN)`,
    // no token because the profile's name is mistyped: said so
    missingError: () => unknown(factory),
    // a token from the environment wins over the stored token: logging in again would not change a thing
    rejectedHint: fromEnvironment
      ? `the token comes from ${resolved.source}${stored?.token ? ', which overrides the stored one' : ''}: check that it is a valid token for ${url}, or unset it ${stored?.token ? 'to use the profile\'s stored token' : `and run \`${shellCommand(['reporting', 'login', '--profile', profileName])}\``}`
      : `run \`${shellCommand(['reporting', 'login', ...(profileName === 'default' ? [] : ['--profile', profileName])])}\` again (or set REPORTING_EMAIL and REPORTING_PASSWORD for unattended jobs)`,
    relogin: login
      ? async (tell) => {
        current = await created.login(login.email, login.password);
        if (resolved?.source === profileVariable('REPORTING_TOKEN', profileName)) {
          // the profile's credentials live in the environment (a pod's Secret): no token store
          // is made or touched (it may be read-only, or absent); the new token lasts this process
          // (once a process; the run's event when it has a log of its own, a text line otherwise)
          once(`${profileName}\0memory`, () => {
            const note = `logged in again for profile "${profileName}" (${resolved.source} was refused); the new token is kept in memory for this run, not stored`;
            if (tell) tell(note);
            else if (!globals.quiet) factory.stderr.write(`note: ${note}\n`);
          });
          return current;
        }
        // a token for a one-off base URL (--base-url, REPORTING_BASE_URL) other than the
        // profile's is kept for this command only: the profile's URL and token stay as they were
        if (stored?.baseUrl ? sameUrl(stored.baseUrl, url) : !stored?.token) {
          await factory.saveToken(current, 'login', url, login.email).catch((error: unknown) => {
            // the job has its token: a store it cannot write costs the next run a login, no more
            if (!(error instanceof StoreError)) throw error;
            once(`${profileName}\0unstored`, () => {
              const note = `the new token is kept in memory for this run, not stored: ${error.message}`;
              if (tell) tell(note);
              else factory.stderr.write(`warning: ${safeText(note)}\n`);
            });
          });
        } else {
          trace?.(`  the new token is for ${url}, not the profile's ${stored?.baseUrl ?? '(none)'}: kept for this command only`);
        }
        return current;
      }
      : undefined,
  });
  return created;
}

/** REPORTING_NOW moves the calendar: said on every command, -q included (left in a cron
 * environment, it would export the same day every night); a JSON line with --log-format json. */
export function warnMovedCalendar(f: Factory, jsonLog: boolean): void {
  const realNow = f.now();
  const warning = movedWarning(f.calendar, realNow);
  if (!warning || !f.calendar.moved) return;
  if (jsonLog) {
    f.stderr.write(`${jsonLine({ v: 1, ts: new Date(f.calendar.now()).toISOString(), event: 'warning', message: warning, now: f.calendar.moved.at })}\n`);
  } else {
    f.stderr.write(`warning: ${safeText(warning)}\n`);
  }
  f.trace?.(`clock: the calendar is the real clock ${offsetText(f.calendar.moved.offsetMs)} (REPORTING_NOW); --max-wait, --timeout and lock staleness keep the real clock`);
}

/** What a process says once however many of its jobs meet it (a re-login per job of one profile). */
const told = new Set<string>();
function once(key: string, say: () => void): void {
  if (told.has(key)) return;
  told.add(key);
  say();
}

/** The same base URL, whatever the spelling (a trailing slash, the case of the host, a default port). */
function sameUrl(a: string, b: string): boolean {
  const normal = (text: string) => {
    try {
      return new URL(text).toString().replace(/\/$/, '');
    } catch {
      return text;
    }
  };
  return normal(a) === normal(b);
}
