// A DuckDB file read back by DuckDB's own client (not this project's loader), for the tests of
// `run --load`: each row's values joined by `|`, NULL as `NULL`.

import { DuckDBInstance } from '@duckdb/node-api';

export async function duckdbRows(file: string, sql: string): Promise<string[]> {
  const instance = await DuckDBInstance.create(file);
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql);
    return reader.getRows().map((row) => row.map((v) => (v === null ? 'NULL' : String(v))).join('|'));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
