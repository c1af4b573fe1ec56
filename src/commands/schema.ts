// `schema <buyer|seller>`: the columns an export will have, their types and the row key, as a
// table, a JSON Schema for the rows, or the CREATE TABLE of a SQL dialect.

import type { Factory } from '../factory.js';
import type { Side } from '../report/catalog.js';
import { resolveBreakdowns, resolveMetrics } from '../report/request.js';
import { DIALECTS, createTable, exportColumns, jsonSchema, type SchemaFormat } from '../report/schema.js';

export interface SchemaOptions {
  side: Side;
  metrics: string[];
  breakdowns: string[];
  /** every field of a row, or only the requested ones (as `run --columns requested`) */
  columns: 'all' | 'requested';
  as: SchemaFormat;
  table?: string;
}

export async function run(opts: SchemaOptions, f: Factory): Promise<void> {
  const { side, as } = opts;
  const metrics = resolveMetrics(side, opts.metrics);
  const breakdowns = resolveBreakdowns(side, opts.breakdowns);
  const columns = exportColumns({ side, metrics, breakdowns, requestedOnly: opts.columns === 'requested' });
  const title = `${side} report row${breakdowns.length ? ` (${breakdowns.join(',')})` : ''}`;

  let text: string;
  if (as === 'json-schema') text = `${JSON.stringify(jsonSchema(columns, title), null, 2)}\n`;
  else if ((DIALECTS as readonly string[]).includes(as)) text = createTable(columns, as as (typeof DIALECTS)[number], opts.table ?? `${side}_report`);
  else if (f.globals.json) text = `${JSON.stringify({ side, metrics, breakdowns, key: columns.filter((c) => c.key).map((c) => c.name), columns })}\n`;
  else {
    const width = Math.max(6, ...columns.map((c) => c.name.length));
    text = `${'column'.padEnd(width)}  ${'type'.padEnd(9)}  null  key\n` +
      columns.map((c) => `${c.name.padEnd(width)}  ${c.type.padEnd(9)}  ${(c.nullable ? 'yes' : '').padEnd(4)}  ${c.key ? 'key' : ''}`.trimEnd()).join('\n') + '\n';
  }
  f.stdout.write(text);
}
