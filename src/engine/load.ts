// run --load: the table destination's spec from the job (engine, table, columns, scope, the state's
// record of what each window loaded). The database clients load when the connection opens.

import { environmentToken } from '../auth/resolve.js';
import type { TableSpec } from '../destinations/table.js';
import type { EngineDeps } from './deps.js';
import { exportedColumns, legacyScopeOf, scopeOf } from '../load/load.js';
import { connectTo } from '../load/engines.js';
import { timeDimensionOf } from '../report/catalog.js';
import { casedColumns } from '../report/schema.js';
import type { Window } from '../report/windows.js';
import type { Job, LoadPlan } from './job.js';
import type { RunState } from './state.js';
import { databaseOf, stateStoreOf, storeDeps } from './stores/kinds.js';
import type { StateStore, StoreDeps } from './stores/store.js';
import { TableStore } from './stores/table.js';

const recordIn = (state: RunState, store: TableStore): NonNullable<TableSpec['recordWindow']> => async (connection, loaded) =>
  store.recordInTransaction(connection, state.loadedRecord(loaded.window, { table: loaded.table, rows: loaded.rows, sha256: loaded.sha256, reportIds: [...loaded.reportIds] }));

/** The state's key in the database (`--state table`): the load table and the scope, so that each
 * set of rows a run replaces has its own state. */
export const tableStateKey = (job: Job, load: LoadPlan, f: EngineDeps) => `${load.table.join('.')} ${scopeOf(job.request, f.baseUrl().url, accountOf(load, f))}`;

/** The store of a job's --state: a file, an object, or (`table`) the --load database. */
export function jobStateStore(job: Job & { flags: { state: string } }, f: EngineDeps, onWait?: StoreDeps['onWait']): StateStore {
  const deps = { ...storeDeps(f), onWait };
  const table = job.load && { ...databaseOf(job.load.target, deps, '--lock-wait'), key: tableStateKey(job, job.load, f) };
  return stateStoreOf(job.flags.state, { ...deps, ...(table ? { table } : {}) });
}

/** The account part of the scope: --scope, `env` when the token comes from REPORTING_TOKEN (which
 * stands for any account), else the profile's name (its own REPORTING_TOKEN_<PROFILE> included). */
export const accountOf = (load: LoadPlan, f: Pick<EngineDeps, 'env' | 'profileName'>) =>
  load.account ?? (environmentToken(f.env, f.profileName)?.source === 'REPORTING_TOKEN' ? 'env' : f.profileName);

/** `alone`: the table is the run's only destination (no -o, no stdout) */
export function tableSpecOf(job: Job, load: LoadPlan, f: EngineDeps, period: Window, windows: readonly Window[], state: RunState | undefined, alone: boolean, warn?: (message: string) => void): TableSpec {
  const { target } = load;
  const csv = load.columns;
  return {
    connect: () => connectTo(target, { cwd: f.cwd, env: f.env, waitMs: job.wait.maxWaitMs, sleep: f.sleep, signal: f.signal, now: () => f.now(), host: f.host, onWait: warn }),
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
    // the state in this database, the table alone (with a file too, the window is done only once
    // both have it): the window's record commits with its rows
    ...(state && alone && state.where instanceof TableStore ? { recordWindow: recordIn(state, state.where) } : {}),
    now: f.now,
    warn,
  };
}
