// Option groups shared by several commands. Declaring options costs nothing at start-up: only
// the catalog (plain data) is imported here.

import { Option, type Command } from 'commander';
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
    const flags = `--${filter.option} <${filter.text ? 'name' : 'ids'}>`;
    if (!filter.sides.some((s) => sides.includes(s))) {
      // the other side's filters are accepted, hidden, so the request check can say which side
      // they belong to rather than commander's "unknown option"
      command.addOption(new Option(flags).argParser(collect).hideHelp());
      continue;
    }
    const only = sides.length > 1 && filter.sides.length === 1 ? ` (${filter.sides[0]} only)` : '';
    command.option(flags, `${filter.description}${only}`, collect);
  }
  return command;
}

export function addWaitOptions(command: Command, what: string): Command {
  return command
    .optionsGroup('Waiting:')
    .option('--poll-interval <duration>', 'poll at this fixed interval (default: 1s, doubling to 7.5s)')
    .option('--max-wait <duration>', `give up waiting for ${what} after this long`, '30m');
}

export function addOutputOptions(command: Command, placeholders: readonly string[]): Command {
  return command
    .optionsGroup('Output options:')
    .option('-o, --output <file>', `write to FILE (- for stdout); placeholders ${placeholders.map((name) => `{${name}}`).join(' ')}`)
    .option('--format <format>', 'csv, json or ndjson (default: from the file extension, else csv)')
    .option('--columns <list>', 'CSV: select and order columns (comma-separated, repeatable; row fields and date)', collect)
    .option('--delimiter <char>', 'CSV: field delimiter (default: ,)')
    .option('--bom', 'CSV: start with a UTF-8 byte order mark')
    .option('--excel', 'CSV for spreadsheets in France: BOM, ";", CRLF, decimal comma, formulas made inert');
}
