// `schema <buyer|seller>`: the columns an export will have, their types and the row key, as a
// table, a JSON Schema for the rows, or the CREATE TABLE of a SQL dialect.

import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { collect, optionsOf } from './options.js';

export const SCHEMA_FORMATS = ['table', 'json-schema', 'postgres', 'bigquery', 'duckdb'] as const;

export interface SchemaOptions {
  metrics?: string[];
  breakdowns?: string[];
  columns?: string;
  as?: string;
  table?: string;
}

export const schemaCommand: CommandSpec = {
  name: 'schema',
  summary: 'print the typed columns of an export: a table, a JSON Schema or a CREATE TABLE',
  define(command: Command, ctx: Context) {
    command
      .argument('<side>', 'buyer or seller')
      .option('--metrics <list>', 'metrics, comma-separated, repeatable (default: every metric of the side)', collect)
      .option('--breakdowns <list>', 'breakdowns, comma-separated, repeatable', collect)
      .option('--columns <which>', 'all (every field of a row) or requested (as run --columns requested)', 'all')
      .option('--as <format>', `${SCHEMA_FORMATS.join(', ')}`, 'table')
      .option('--table <name>', 'table name for CREATE TABLE (default: <side>_report)')
      .addHelpText('after', `
Examples:
  reporting schema buyer --breakdowns DAILY,COUNTRY
  reporting schema buyer --breakdowns DAILY,COUNTRY --columns requested --as bigquery --table ads.daily
  reporting schema seller --breakdowns HOURLY,APP --as json-schema > row.schema.json`)
      .action(async (side: string, _options: SchemaOptions, cmd: Command) => run(side, optionsOf<SchemaOptions>(cmd), ctx));
  },
};

export async function run(sideText: string, options: SchemaOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { parseSide, resolveBreakdowns, resolveMetrics } = await import('../report/request.js');
  const { createTable, exportColumns, jsonSchema, DIALECTS } = await import('../report/schema.js');
  const { UsageError } = await import('../errors.js');
  const { didYouMean } = await import('../suggest.js');

  const side = parseSide(sideText);
  const as = (options.as ?? 'table').toLowerCase();
  if (!(SCHEMA_FORMATS as readonly string[]).includes(as)) {
    throw new UsageError(`unknown --as "${options.as}"${didYouMean(options.as ?? '', SCHEMA_FORMATS)}`, `choose ${SCHEMA_FORMATS.join(', ')}`);
  }
  const which = (options.columns ?? 'all').toLowerCase();
  if (which !== 'all' && which !== 'requested') throw new UsageError(`--columns here is all or requested, not "${options.columns}"`);
  const metrics = resolveMetrics(side, options.metrics);
  const breakdowns = resolveBreakdowns(side, options.breakdowns);
  const columns = exportColumns({ side, metrics, breakdowns, requestedOnly: which === 'requested' });
  const title = `${side} report row${breakdowns.length ? ` (${breakdowns.join(',')})` : ''}`;

  let text: string;
  if (as === 'json-schema') text = `${JSON.stringify(jsonSchema(columns, title), null, 2)}\n`;
  else if ((DIALECTS as readonly string[]).includes(as)) text = createTable(columns, as as (typeof DIALECTS)[number], options.table ?? `${side}_report`);
  else if (options.json) text = `${JSON.stringify({ side, metrics, breakdowns, key: columns.filter((c) => c.key).map((c) => c.name), columns })}\n`;
  else {
    const width = Math.max(6, ...columns.map((c) => c.name.length));
    text = `${'column'.padEnd(width)}  ${'type'.padEnd(9)}  null  key\n` +
      columns.map((c) => `${c.name.padEnd(width)}  ${c.type.padEnd(9)}  ${(c.nullable ? 'yes' : '').padEnd(4)}  ${c.key ? 'key' : ''}`.trimEnd()).join('\n') + '\n';
  }
  ctx.stdout.write(text);
}
