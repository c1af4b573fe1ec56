// `--load TARGET` and `--table NAME`: where a run's rows are loaded. `duckdb:PATH` (an embedded
// DuckDB file) or `postgres://USER@HOST:PORT/DB` (`postgresql://` too, with the libpq-style
// parameters the client library reads). The password, from the URL, PGPASSWORD or ~/.pgpass, is
// never shown: `shown` is the target without it, which is what errors, logs, the state file and
// printed commands carry.

import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { realFilePath } from '../paths.js';
import { UsageError } from '../errors.js';
import type { Side } from '../report/catalog.js';

export type Engine = 'duckdb' | 'postgres';

export interface LoadTarget {
  engine: Engine;
  /** duckdb: the database file as given; postgres: the connection URL, password included */
  location: string;
  /** the target as it may be shown (no password) */
  shown: string;
  /** password-like query parameters' values (masked like the password) */
  hidden?: string[];
  /** the URL's password, if it has one (a secret: masked wherever text leaves the process) */
  password?: string;
}

const HINT = 'give --load duckdb:PATH (a DuckDB file, created if missing) or postgres://USER@HOST:PORT/DB';

export function parseLoadTarget(text: string, cwd: string): LoadTarget {
  const value = text.trim();
  if (/^duckdb:/i.test(value)) {
    const path = value.slice('duckdb:'.length);
    if (!path) throw new UsageError('--load duckdb: needs the path of a database file', 'e.g. --load duckdb:warehouse.duckdb');
    // shown (and recorded in a state file) as an absolute path: the same words run from another
    // folder name another database, which the state must not take for the one it loaded
    return { engine: 'duckdb', location: path, shown: `duckdb:${path === ':memory:' ? path : resolve(cwd, path)}` };
  }
  if (/^postgres(ql)?:\/\//i.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new UsageError('--load: the postgres URL cannot be read', HINT);
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
  throw new UsageError(`--load takes duckdb:PATH or postgres://..., not "${value.replace(/:[^@/]*@/, ':***@')}"`, HINT);
}

const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];
const SSL_FILES = ['sslcert', 'sslkey', 'sslrootcert'];

/**
 * The URL's parameters that the Postgres client reads, checked before any report is requested: a
 * port that is not a port left the client waiting forever (the run ended with exit 0 and nothing
 * written), and a certificate file that cannot be read made it throw as it was built.
 */
function checkPostgresParams(url: URL, shown: string, cwd: string): void {
  const refuse = (what: string, hint: string): never => { throw new UsageError(`--load ${shown}: ${what}`, hint); };
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

/** The words of a command line with --load's password taken out (for the printed retry commands). */
export function withoutPassword(argv: readonly string[], target: LoadTarget | undefined): string[] {
  if (!target || target.location === target.shown) return [...argv];
  return argv.map((word) => (word.includes(target.location) ? word.replace(target.location, target.shown) : word));
}

/** `--table` (default `{side}_report`): `{side}` expanded; a Postgres `schema.table` allowed. */
export function tableName(given: string | undefined, side: Side, engine: Engine): string[] {
  const name = (given ?? '{side}_report').replaceAll('{side}', side);
  const parts = name.split('.');
  if (parts.some((part) => part.length === 0) || parts.length > 2 || (engine === 'duckdb' && parts.length > 1 && parts[0] !== 'main')) {
    throw new UsageError(`--table "${name}" is not a table name`, engine === 'postgres' ? 'give NAME or SCHEMA.NAME' : 'give a table NAME');
  }
  return parts;
}

/** An identifier, always quoted: nothing reaches SQL text unquoted. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
export const qualified = (parts: readonly string[]) => parts.map(quoteIdent).join('.');

/** The flags of `run --load` as typed (the target may also come from REPORTING_LOAD). */
export interface LoadFlags {
  load?: string;
  table?: string;
  scope?: string;
  onSchemaChange: 'fail' | 'add-columns' | 'allow-missing';
  /** --concurrency and --no-split, for the windows --load chooses when --chunk is not given */
  concurrency?: number;
  split?: boolean;
}

const LOOPBACK = /^(localhost|localhost\.localdomain|127(\.\d{1,3}){3}|\[?::1\]?|\[?0*:0*:0*:0*:0*:0*:0*:0*1\]?)$/i;

/**
 * The database a target names, as one string, so that two spellings of one database are one: a
 * DuckDB file by its real path (symbolic links and `..` resolved, case folded where the file
 * system folds it); a Postgres database by its host (every loopback name and address as one, other
 * names lower-cased, a `host=` socket folder), port (5432 when none is given) and database (the
 * user's name when none is given, as libpq does).
 */
export function databaseIdentity(target: LoadTarget, cwd: string, platform: NodeJS.Platform): string {
  if (target.engine === 'duckdb') {
    if (target.location === ':memory:') return 'duckdb::memory:';
    // as the loader opens it: `..` resolved by the file system, after the symbolic link before it
    const real = realFilePath(isAbsolute(target.location) ? target.location : `${cwd}/${target.location}`);
    return `duckdb:${platform === 'darwin' || platform === 'win32' ? real.toLowerCase() : real}`;
  }
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

/** A table as the engine names it: DuckDB's names are case-insensitive (quoted or not); Postgres
 * keeps the case of the quoted names this tool writes. The default schema is no part of it. */
export function tableIdentity(parts: readonly string[], engine: Engine): string {
  const table = parts.length === 2 && (parts[0] === (engine === 'duckdb' ? 'main' : 'public')) ? parts.slice(1) : parts;
  return JSON.stringify(engine === 'duckdb' ? table.map((part) => part.toLowerCase()) : table);
}
