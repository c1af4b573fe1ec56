// The database engines of `--load`, by the prefix of their target: one line each. An engine is
// defined beside its connection (duckdb.ts, postgres.ts: a `LoadEngine`, load.ts): how its target
// is parsed and named, how a connection opens, which secrets it reads. Nothing outside load/ tests
// for `duckdb:` or `postgres://`: a new engine is its file and one line here.

import { UsageError } from '../errors.js';
import type { Side } from '../report/catalog.js';
import { DUCKDB } from './duckdb.js';
import type { ConnectDeps, LoadConnection, LoadEngine } from './load.js';
import { POSTGRES } from './postgres.js';
import { LOAD_HINT, type Engine, type LoadTarget } from './target.js';

const ENGINES: readonly LoadEngine[] = [DUCKDB, POSTGRES];

const engineOf = (target: Pick<LoadTarget, 'engine'>) => ENGINES.find((engine) => engine.name === target.engine) as LoadEngine;

/** --load's text names a database of an engine this tool loads into. */
export const isLoadTarget = (text: string) => ENGINES.some((engine) => engine.matches(text));

export function parseLoadTarget(text: string, cwd: string): LoadTarget {
  const engine = ENGINES.find((candidate) => candidate.matches(text));
  if (!engine) throw new UsageError(`--load takes duckdb:PATH or postgres://..., not "${text.trim().replace(/:[^@/]*@/, ':***@')}"`, LOAD_HINT).about('--load');
  return engine.parse(text, cwd);
}

/** A connection to the target's database. */
export const connectTo = (target: LoadTarget, deps: ConnectDeps): Promise<LoadConnection> => engineOf(target).connect(target, deps);

/** Every secret the target's connection may use (its password, PGPASSWORD...). */
export const loadSecrets = (target: LoadTarget, env: Readonly<Record<string, string | undefined>>) => engineOf(target).secrets(target, env);

/** The database a target names, as one string: two spellings of one database are one. */
export const databaseIdentity = (target: LoadTarget, cwd: string, platform: NodeJS.Platform) => engineOf(target).identity(target, cwd, platform);

/** A table as its engine names it (the default schema no part of it). */
export const tableIdentity = (parts: readonly string[], target: Pick<LoadTarget, 'engine'>) => engineOf(target).tableIdentity(parts);

/** Two `--load`s as a state records them (the target as shown, the table's parts joined by dots)
 * name one table of one database, however spelled: a link on the way to a DuckDB file, `..` (as
 * the shown target has it: resolved as text),
 * `localhost` for 127.0.0.1, `main.` before a DuckDB table. (A case-insensitive file system's
 * two cases of one name stay two: the check is on the state's side of caution.) */
export function sameLoad(a: { target: string; table: string }, b: { target: string; table: string }): boolean {
  if (a.target === b.target && a.table === b.table) return true;
  try {
    const [x, y] = [parseLoadTarget(a.target, '/'), parseLoadTarget(b.target, '/')];
    return x.engine === y.engine && databaseIdentity(x, '/', 'linux') === databaseIdentity(y, '/', 'linux')
      && tableIdentity(a.table.split('.'), x) === tableIdentity(b.table.split('.'), y);
  } catch {
    return false;
  }
}

/** The database was removed since it was loaded (a DuckDB file): every window is a fresh load. */
export const databaseGone = (target: LoadTarget, cwd: string) => engineOf(target).gone(target, cwd);

/** A job file's `load:` value with its path relative to the job file's folder. */
export const loadInFolder = (text: string, folder: string) => ENGINES.find((engine) => engine.matches(text))?.inFolder(text, folder) ?? text;

/** `--table` (default `{side}_report`): `{side}` expanded, the parts its engine takes. */
export function tableName(given: string | undefined, side: Side, engine: Engine): string[] {
  const target = { engine };
  const name = (given ?? '{side}_report').replaceAll('{side}', side);
  const parts = name.split('.');
  const hint = parts.some((part) => part.length === 0) ? (engineOf(target).tableHint(['', '', '']) ?? 'give a table NAME') : engineOf(target).tableHint(parts);
  if (hint) throw new UsageError(`--table "${name}" is not a table name`, hint).about('--table');
  return parts;
}
