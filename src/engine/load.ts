// run --load: the table destination's spec from the job (engine, table, columns, scope, the state's
// record of what each window loaded). The database clients load when the connection opens.

import { environmentToken } from '../auth/resolve.js';
import { sleepFor } from '../api/http.js';
import type { TableSpec } from '../destinations/table.js';
import type { Factory } from '../factory.js';
import { openDuckDb } from '../load/duckdb.js';
import { exportedColumns, legacyScopeOf, scopeOf } from '../load/load.js';
import { openPostgres } from '../load/postgres.js';
import { timeDimensionOf } from '../report/catalog.js';
import { casedColumns } from '../report/schema.js';
import type { Window } from '../report/windows.js';
import type { Job, LoadPlan } from './job.js';
import type { RunState } from './state.js';
import { isAbsolute } from 'node:path';

/** The account part of the scope: --scope, `env` when the token comes from REPORTING_TOKEN (which
 * stands for any account), else the profile's name (its own REPORTING_TOKEN_<PROFILE> included). */
export const accountOf = (load: LoadPlan, f: Pick<Factory, 'env' | 'profileName'>) =>
  load.account ?? (environmentToken(f.env, f.profileName)?.source === 'REPORTING_TOKEN' ? 'env' : f.profileName);

export function tableSpecOf(job: Job, load: LoadPlan, f: Factory, period: Window, windows: readonly Window[], state: RunState | undefined, warn?: (message: string) => void): TableSpec {
  const { target } = load;
  const csv = load.columns;
  return {
    connect: () => target.engine === 'duckdb'
      // the path as written under the working folder: its `..` is the file system's (openDuckDb)
      ? openDuckDb(isAbsolute(target.location) ? target.location : `${f.cwd}/${target.location}`, target.shown, job.wait.maxWaitMs, sleepFor, f.signal, () => f.now())
      : openPostgres(target, f.env),
    table: load.table,
    // named as the files' columns are (--column-case)
    columns: casedColumns(exportedColumns(csv.schema, csv.columns, timeDimensionOf(job.request.breakdowns)), job.output.csv.columnCase),
    columnCase: job.output.csv.columnCase ?? 'camel',
    selected: csv.columns !== undefined,
    // the fields the chosen columns leave out that held a value: the run names them at its end
    dropped: job.output.csv.dropped,
    scope: scopeOf(job.request, f.baseUrl().url, accountOf(load, f)),
    legacyScope: legacyScopeOf(job.request, f.baseUrl().url, accountOf(load, f)),
    onSchemaChange: load.onSchemaChange,
    fullRefresh: job.flags.fullRefresh,
    atExit: (cleanup) => f.host.atExit(cleanup),
    period,
    windows,
    loadedBefore: state ? (window) => state.entry(window)?.loaded ?? undefined : undefined,
    now: f.now,
    warn,
  };
}
