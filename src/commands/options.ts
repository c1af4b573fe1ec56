// Option groups shared by several commands. Declaring options costs nothing at start-up: only
// the catalog (plain data) is imported here.

import type { Command } from 'commander';
import type { GlobalOptions } from '../cli.js';
import { DEFAULT_METRICS, FILTERS, dimensionsOf, type Side } from '../report/catalog.js';

export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Every option of the command and of the program, merged. */
export function optionsOf<T>(command: Command): T & GlobalOptions {
  return command.optsWithGlobals<T & GlobalOptions>();
}

export function addReportOptions(command: Command, sides: readonly Side[]): Command {
  const side = sides.length === 1 ? sides[0] : undefined;
  const metricsHelp = side
    ? `metrics, comma-separated, repeatable (default: all: ${DEFAULT_METRICS[side].join(', ')})`
    : 'metrics, comma-separated, repeatable (default: every metric of the side)';
  const breakdownsHelp = side
    ? `breakdowns, comma-separated, repeatable: ${dimensionsOf(side).join(', ')}`
    : 'breakdowns, comma-separated, repeatable: DAILY, HOURLY, MONTHLY or RANGE, and dimensions of the side';
  command
    .optionsGroup('Report options:')
    .option('--since <time>', 'start of the period (Europe/Paris): 2026-11-01, yesterday, -7d, now, Unix seconds, ISO')
    .option('--until <time>', 'end of the period; a date means its last second (23:59:59)')
    .option('--metrics <list>', metricsHelp, collect)
    .option('--breakdowns <list>', breakdownsHelp, collect)
    .option('--param <name=value>', 'send a parameter the CLI does not model (repeatable)', collect)
    .option('--no-validate', 'send metric and breakdown values as given');
  command.optionsGroup('Filters (repeatable, comma-separated):');
  for (const filter of FILTERS) {
    if (!filter.sides.some((s) => sides.includes(s))) continue;
    const only = sides.length > 1 && filter.sides.length === 1 ? ` (${filter.sides[0]} only)` : '';
    command.option(`--${filter.option} <${filter.text ? 'name' : 'ids'}>`, `${filter.description}${only}`, collect);
  }
  return command;
}

export function addWaitOptions(command: Command, what: string): Command {
  return command
    .optionsGroup('Waiting:')
    .option('--poll-interval <duration>', 'poll at this fixed interval (default: 1s, doubling to 7.5s)')
    .option('--max-wait <duration>', `give up waiting for ${what} after this long`, '30m');
}

export function addOutputOptions(command: Command): Command {
  return command
    .optionsGroup('Output options:')
    .option('-o, --output <file>', 'write to FILE (- for stdout); placeholders {side} {since} {until} {reportId}')
    .option('--format <format>', 'csv, json, ndjson, parquet or xlsx (default: from the file extension, else csv)')
    .option('--columns <list>', 'CSV, Parquet, XLSX: select and order columns (comma-separated), or `requested` (run only)')
    .option('--delimiter <char>', 'CSV: field delimiter (default: ,)')
    .option('--bom', 'CSV: start with a UTF-8 byte order mark')
    .option('--excel', 'CSV for spreadsheets in France: BOM, ";", CRLF, decimal comma, formulas made inert');
}
