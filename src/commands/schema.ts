// `schema <buyer|seller>`: the columns an export will have, their types and the row key, as a
// table, a JSON Schema for the rows, or the CREATE TABLE of a SQL dialect.

import { UsageError } from '../errors.js';
import { columnsOf } from '../export/output.js';
import type { Factory } from '../factory.js';
import { columnNames, type Side } from '../report/catalog.js';
import { resolveBreakdowns, resolveMetrics } from '../report/request.js';
import { exportedColumns, loadDdl } from '../load/load.js';
import { tableName } from '../load/engines.js';
import type { ColumnCase } from '../report/column-case.js';
import { DIALECTS, casedColumns, createTable, exportColumns, jsonSchema, type SchemaFormat } from '../report/schema.js';

export interface SchemaOptions {
  side: Side;
  metrics: string[];
  breakdowns: string[];
  /** as export's --columns (comma-separated, repeatable): absent or `requested`, the requested
   * columns (the tabular exports' default); `all`, every field of a row; or field names in their order */
  columns?: string[];
  as: SchemaFormat;
  table?: string;
  /** the CREATE TABLE of run --load: the export's columns and the metadata columns */
  forLoad?: boolean;
  /** --column-case: the columns' names as the export writes them (camel by default) */
  columnCase?: ColumnCase;
}

export async function run(opts: SchemaOptions, f: Factory): Promise<void> {
  const { side, as } = opts;
  const metrics = resolveMetrics(side, opts.metrics);
  const breakdowns = resolveBreakdowns(side, opts.breakdowns);
  // the same --columns as the export's, with its default (requested): checked against the side's
  // row fields, with a did-you-mean; `all` is every field of a row
  const named = columnsOf(columnNames([side]), opts.columns, true);
  const word = named?.length === 1 ? named[0] : undefined;
  const fields = word === 'all' ? exportColumns({ side, metrics, breakdowns })
    : named === undefined || word === 'requested' ? exportColumns({ side, metrics, breakdowns, requestedOnly: true })
    : exportColumns({ side, metrics, breakdowns, columns: named });
  // a field named like a metadata column is refused, as run --load refuses it (before renaming,
  // as run --load checks it)
  if (opts.forLoad) exportedColumns(fields, undefined, undefined);
  // named as the export names them (--column-case)
  const columns = casedColumns(fields, opts.columnCase);
  const title = `${side} report row${breakdowns.length ? ` (${breakdowns.join(',')})` : ''}`;

  let text: string;
  if (opts.forLoad) {
    if (as !== 'duckdb' && as !== 'postgres') throw new UsageError(`--for-load prints the CREATE TABLE that run --load runs, in DuckDB's or Postgres's SQL, not ${as}`, 'add --as duckdb or --as postgres');
    text = loadDdl(columns, as, tableName(opts.table, side, as), true);
  } else if (as === 'json-schema') text = `${JSON.stringify(jsonSchema(columns, title), null, 2)}\n`;
  // IF NOT EXISTS: a recipe that creates its table and loads it can run twice
  else if ((DIALECTS as readonly string[]).includes(as)) text = createTable(columns, as as (typeof DIALECTS)[number], opts.table ?? `${side}_report`, { ifNotExists: true });
  else if (f.globals.json) text = `${JSON.stringify({ side, metrics, breakdowns, key: columns.filter((c) => c.key).map((c) => c.name), columns })}\n`;
  else {
    const width = Math.max(6, ...columns.map((c) => c.name.length));
    text = `${'column'.padEnd(width)}  ${'type'.padEnd(9)}  null  key\n` +
      columns.map((c) => `${c.name.padEnd(width)}  ${c.type.padEnd(9)}  ${(c.nullable ? 'yes' : '').padEnd(4)}  ${c.key ? 'key' : ''}`.trimEnd()).join('\n') + '\n';
  }
  f.stdout.write(text);
}
