// `--load TARGET` and `--table NAME`: where a run's rows are loaded. `duckdb:PATH` (an embedded
// DuckDB file) or `postgres://USER@HOST:PORT/DB` (`postgresql://` too, with the libpq-style
// parameters the client library reads). The password, from the URL, PGPASSWORD or ~/.pgpass, is
// never shown: `shown` is the target without it, which is what errors, logs, the state file and
// printed commands carry.


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

export const LOAD_HINT = 'give --load duckdb:PATH (a DuckDB file, created if missing) or postgres://USER@HOST:PORT/DB';

/** The words of a command line with --load's password taken out (for the printed retry commands). */
export function withoutPassword(argv: readonly string[], target: LoadTarget | undefined): string[] {
  if (!target || target.location === target.shown) return [...argv];
  return argv.map((word) => (word.includes(target.location) ? word.replace(target.location, target.shown) : word));
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

