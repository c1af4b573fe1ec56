// The two databases `run --load` tests load into: an embedded DuckDB file, and a database of a
// throwaway Postgres cluster (started for the test file, stopped after it; skipped where
// PostgreSQL is not installed). Each target reads its table back by the database's own client.

import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { duckdbRows } from './duckdb.js';
import { POSTGRES_AVAILABLE, startCluster, type Cluster } from './postgres.js';

export interface Target {
  /** --load's value */
  load: string;
  /** the query's rows, `|`-separated */
  select(sql: string): Promise<string[]>;
}

/** Registers the cluster's start and stop for the calling test file; `prefix` names its databases. */
export function loadTargets(prefix: string): { targets: [string, (dir: string) => Target, boolean][]; postgresTarget(): Target; cluster(): Cluster } {
  let cluster: Cluster | undefined;
  let databases = 0;
  beforeAll(async () => {
    if (POSTGRES_AVAILABLE) cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());
  const duckdbTarget = (dir: string): Target => {
    const file = join(dir, 'warehouse.duckdb');
    return { load: `duckdb:${file}`, select: (sql) => duckdbRows(file, sql) };
  };
  const postgresTarget = (): Target => {
    const c = cluster as Cluster;
    const db = `${prefix}${++databases}`;
    c.psql(`CREATE DATABASE ${db}`);
    return { load: c.url(db), select: async (sql) => c.psql(sql, db).split('\n').filter(Boolean) };
  };
  return {
    targets: [['duckdb', duckdbTarget, false], ['postgres', postgresTarget, !POSTGRES_AVAILABLE]],
    postgresTarget,
    cluster: () => cluster as Cluster,
  };
}
