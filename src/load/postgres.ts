// Loading into Postgres through `COPY ... FROM STDIN` (pg + pg-copy-streams, loaded only when
// --load names a Postgres URL), text format (postgres-copy.ts), streamed with back-pressure: memory
// holds a few batches of rows. The password comes from the URL, PGPASSWORD or ~/.pgpass (the client
// library reads the last two) and is never shown: errors name the target without it.

import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client } from 'pg';
import { UsageError } from '../errors.js';
import { AuthError, CliError, EXIT, NetworkError } from '../errors.js';
import { loadPg, loadPgCopy } from '../lazy.js';
import type { Column } from '../report/schema.js';
import type { LoadConnection, LoadEngine, StateHolder, TableAppender } from './load.js';
import { COPY_STREAM_OPTIONS, CopyAppender, type CopyStream } from './postgres-copy.js';
import { LOAD_HINT, qualified, quoteIdent, type LoadTarget } from './target.js';

const CONNECT_TIMEOUT_MS = 10_000;

/** `holder`: the process, named in the session's application_name (`reporting PID@HOST`): what
 * another run is told holds a state's lock (stateHolder) */
export async function openPostgres(target: LoadTarget, env: Record<string, string | undefined>, holder?: { pid: number; host: string }): Promise<LoadConnection> {
  const pg = await loadPg();
  // bigint, timestamps and dates come back as text: nothing is rounded or shifted on the way
  const text = (value: string) => value;
  let client: InstanceType<typeof pg.Client> | undefined;
  try {
    // built inside: the client reads the URL's certificate files as it is made
    client = new pg.Client({
      connectionString: target.location,
      ...(target.password === undefined && env.PGPASSWORD === undefined ? {} : { password: target.password ?? env.PGPASSWORD }),
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...(holder ? { application_name: `reporting ${holder.pid}@${holder.host}`.slice(0, 63) } : {}),
      types: { getTypeParser: () => text },
    });
    // an error after connecting (the server went away) is the query's error, not a crash
    client.on('error', () => undefined);
    passwordAsked(client);
    await client.connect();
  } catch (error) {
    await client?.end().catch(() => undefined);
    throw connectError(error, target.shown, client && asked.get(client) === true && !(client as { password?: unknown }).password);
  }
  return new PostgresConnection(client, target.shown);
}


/** Postgres, as the engines' table (engines.ts) knows it: `postgres://` or `postgresql://` URLs. */
export const POSTGRES: LoadEngine = {
  name: 'postgres',
  matches: (text) => /^postgres(ql)?:\/\//i.test(text.trim()),
  parse: (text, cwd) => parsePostgresTarget(text.trim(), cwd),
  identity: (target) => postgresIdentity(target),
  tableIdentity: (parts) => JSON.stringify(parts.length === 2 && parts[0] === 'public' ? parts.slice(1) : parts),
  tableHint: (parts) => (parts.length > 2 ? 'give NAME or SCHEMA.NAME' : undefined),
  connect: (target, deps) => openPostgres(target, deps.env, deps.holder),
  // the client reads PGPASSWORD (and ~/.pgpass) itself: masked wherever text leaves the process
  secrets: (target, env) => [target.password, ...target.hidden ?? [], env.PGPASSWORD],
  gone: () => false,
  inFolder: (text) => text,
};

/** `postgres://USER:PASSWORD@HOST:PORT/DB?...`: the password and password-like parameters kept out
 * of `shown`, the parameters the client reads checked. */
function parsePostgresTarget(value: string, cwd: string): LoadTarget {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('--load: the postgres URL cannot be read', LOAD_HINT).about('--load');
  }
  const password = url.password ? decoded(url.password) : undefined;
  const shown = new URL(value);
  shown.password = '';
  // any password-like query parameter goes too, and is masked wherever it would be shown
  const hidden: string[] = [];
  for (const key of [...shown.searchParams.keys()]) {
    if (!/pass/i.test(key)) continue;
    hidden.push(...shown.searchParams.getAll(key));
    shown.searchParams.delete(key);
  }
  checkPostgresParams(url, shown.toString(), cwd);
  return { engine: 'postgres', location: value, shown: shown.toString(), password, hidden };
}

const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];
const SSL_FILES = ['sslcert', 'sslkey', 'sslrootcert'];

/**
 * The URL's parameters that the Postgres client reads, checked before any report is requested: a
 * port that is not a port left the client waiting forever (the run ended with exit 0 and nothing
 * written), and a certificate file that cannot be read made it throw as it was built.
 */
function checkPostgresParams(url: URL, shown: string, cwd: string): void {
  const refuse = (what: string, hint: string): never => { throw new UsageError(`--load ${shown}: ${what}`, hint).about('--load'); };
  const params = url.searchParams;
  for (const key of ['port', 'connect_timeout']) {
    const value = params.get(key);
    if (value === null) continue;
    const number = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
    if (key === 'port' ? !(number >= 1 && number <= 65535) : Number.isNaN(number)) {
      refuse(`${key}=${value} is not ${key === 'port' ? 'a port (1 to 65535)' : 'a number of seconds'}`, key === 'port' ? 'give the port in the URL: postgres://USER@HOST:PORT/DB' : 'give connect_timeout=SECONDS');
    }
  }
  const mode = params.get('sslmode');
  if (mode !== null && !SSL_MODES.includes(mode)) refuse(`sslmode=${mode} is not one of ${SSL_MODES.join(', ')}`, 'e.g. ?sslmode=require');
  for (const key of SSL_FILES) {
    const value = params.get(key);
    if (value === null) continue;
    // the client reads the file from the current folder, as given
    const path = resolve(cwd, value);
    try {
      if (!statSync(path).isFile()) refuse(`${key}=${value} is not a file`, `give the path of a PEM file as ${key}`);
      accessSync(path, constants.R_OK);
    } catch (error) {
      if (error instanceof UsageError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      refuse(`${key}=${value} cannot be read: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code ?? 'unreadable'}`, `give the path of a PEM file as ${key}`);
    }
  }
}

/** A URL's password as written, its %-escapes undone where they can be (`50%` stays as it is). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}


const LOOPBACK = /^(localhost|localhost\.localdomain|127(\.\d{1,3}){3}|\[?::1\]?|\[?0*:0*:0*:0*:0*:0*:0*:0*1\]?)$/i;

/** A Postgres database as one string: its host (every loopback name and address as one, other
 * names lower-cased, a `host=` socket folder), port (5432 when none is given) and database (the
 * user's name when none is given, as libpq does). */
function postgresIdentity(target: LoadTarget): string {
  let url: URL;
  try {
    url = new URL(target.location);
  } catch {
    return target.shown;
  }
  const params = url.searchParams;
  const hostname = (params.get('host') ?? decoded(url.hostname)).toLowerCase();
  const host = !hostname || LOOPBACK.test(hostname) ? 'loopback' : hostname;
  const port = params.get('port') ?? (url.port || '5432');
  const user = decoded(url.username) || params.get('user') || '';
  const database = decoded(url.pathname.replace(/^\//, '')) || params.get('dbname') || user;
  return `postgres:${host}:${Number(port)}/${database}`;
}

/** An error of the database once connected: the server's message, as a one-line error. */
export function queryError(error: unknown, shown: string): unknown {
  if (error instanceof CliError) return error;
  const code = (error as { code?: string }).code;
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  if (code === undefined || code.startsWith('08') || code.startsWith('57P')) return new NetworkError(`the connection to Postgres at ${shown} failed: ${message}`, 'check that the server is up; the window being loaded was rolled back, run again');
  if (code.startsWith('28')) return new AuthError(`Postgres at ${shown} refused: ${message}`, 'check the user and the password');
  return new CliError(`Postgres at ${shown} refused: ${message}`, EXIT.usage, code === '3F000' ? 'create the schema first (CREATE SCHEMA ...), or name another --table' : 'check the table and the rights of the user on it');
}

/** The clients whose server asked for a password (any of its three ways) while connecting. */
const asked = new WeakMap<object, boolean>();

/** Notes when the server asks the client for a password: the client's own failure then (SCRAM's
 * "client password must be a string", which has no SQLSTATE) is known by what happened. */
function passwordAsked(client: object): void {
  const connection = (client as { connection?: { once?(event: string, listener: () => void): unknown } }).connection;
  for (const event of ['authenticationCleartextPassword', 'authenticationMD5Password', 'authenticationSASL']) {
    connection?.once?.(event, () => asked.set(client, true));
  }
}

/** A failed connection by its SQLSTATE (28P01 a wrong password, 28000 a refused login, 3D000 no
 * such database), or, with none, by what happened: the server asked for a password and the
 * client had none (`noPassword`: not in the URL, PGPASSWORD nor ~/.pgpass) */
function connectError(error: unknown, shown: string, noPassword = false): CliError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message.split('\n')[0] ?? '' : String(error);
  if (code === undefined && noPassword) {
    return new AuthError(`Postgres at ${shown} asks for a password, and none was given`, 'put it in the URL (postgres://USER:PASSWORD@HOST/DB; ${VAR} in a job file), in PGPASSWORD or in ~/.pgpass');
  }
  if (code === '28P01' || code === '28000') {
    return new AuthError(`Postgres refused the login to ${shown}: ${message}`, 'check the user and the password (in the URL, PGPASSWORD or ~/.pgpass)');
  }
  if (code === '3D000') return new CliError(`cannot load into ${shown}: ${message}`, EXIT.usage, 'create the database first, or name another one');
  return new NetworkError(`cannot connect to Postgres at ${shown}: ${message}`, 'check the host and port, and that the server is running');
}

class PostgresConnection implements LoadConnection {
  readonly engine = 'postgres' as const;
  readonly dialect = 'postgres' as const;

  constructor(private readonly client: Client, private readonly shown: string) {}

  async columns(table: readonly string[]): Promise<Map<string, string> | undefined> {
    const name = table[table.length - 1] as string;
    const rows = table.length > 1
      ? await this.query('SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position', [name, table[0] as string])
      : await this.query('SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position', [name]);
    return rows.length ? new Map(rows.map(([column, type]) => [column as string, (type as string).toLowerCase()])) : undefined;
  }

  async execute(sql: string, params: readonly (string | number)[] = []): Promise<void> {
    await this.client.query(sql, [...params]).catch((error: unknown) => { throw queryError(error, this.shown); });
  }

  async deleteRows(sql: string, params: readonly (string | number)[]): Promise<void> {
    await this.execute(sql, params);
  }

  async query(sql: string, params: readonly (string | number)[] = []): Promise<string[][]> {
    const result = await this.client.query({ text: sql, values: [...params], rowMode: 'array' }).catch((error: unknown) => { throw queryError(error, this.shown); });
    return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? '' : String(value))));
  }

  async appender(table: readonly string[], columns: readonly Column[], _order: readonly string[]): Promise<TableAppender> {
    // COPY names its columns: the table's order does not matter, and the others are NULL
    const { from } = await loadPgCopy();
    const names = [...columns.map((column) => column.name), '_report_id', '_window_since', '_window_until', '_scope', '_loaded_at'];
    const stream = this.client.query(from(`COPY ${qualified(table)} (${names.map(quoteIdent).join(', ')}) FROM STDIN`, COPY_STREAM_OPTIONS));
    return new CopyAppender(stream as unknown as CopyStream, columns, (error) => queryError(error, this.shown) as Error);
  }

  async lock(table: readonly string[], scope?: string): Promise<void> {
    // the key: the table as the server resolves it (an unqualified name is in current_schema()),
    // and the scope; a 64-bit hash of it, whose rare collision only makes two loads wait in turn
    const schema = table.length > 1 ? table[0] as string : null;
    const sql = `SELECT pg_advisory_xact_lock(hashtextextended('reporting ' || quote_ident(coalesce($1, current_schema())) || '.' || quote_ident($2) || chr(10) || $3, 0))`;
    await this.client.query(sql, [schema, table[table.length - 1] as string, scope === undefined ? '' : `scope ${scope}`])
      .catch((error: unknown) => { throw queryError(error, this.shown); });
  }

  async tryLockState(key: string): Promise<boolean> {
    const [[taken] = []] = await this.query(`SELECT pg_try_advisory_lock(${STATE_KEY})`, [key]);
    return taken === 't' || taken === 'true';
  }

  async unlockState(key: string): Promise<void> {
    await this.query(`SELECT pg_advisory_unlock(${STATE_KEY})`, [key]);
  }

  async stateHolder(key: string): Promise<StateHolder | undefined> {
    // a bigint advisory lock is shown in pg_locks as its two halves (classid, objid), objsubid 1
    const rows = await this.query(`SELECT a.application_name, to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.pid <> pg_backend_pid()
        AND ((l.classid::bigint << 32) | l.objid::bigint) = ${STATE_KEY}`, [key]);
    const [[name = '', since = ''] = []] = rows;
    if (!rows.length) return undefined;
    const match = /^reporting (\d+)@(.*)$/.exec(name);
    return { pid: match ? Number(match[1]) : 0, host: match ? match[2] as string : `a Postgres session (${name || 'no application_name'})`, since };
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

/** A state key's advisory lock: a 64-bit hash of it (a collision only makes two runs wait in turn). */
const STATE_KEY = `hashtextextended('reporting state ' || $1, 0)`;
