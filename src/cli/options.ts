// Option groups shared by several commands: their flags (data only, cheap at start-up: only the
// catalog is imported) and the typed values a command receives from them. `runFlags()` is the one
// table of run's flags: commander's options of `run` (and so its help and the completions), the
// keys of a job file (src/fleet/file.ts, through cli/run-words.ts) and its JSON Schema
// (src/fleet/schema.ts) are all made from it.

import { Argument, InvalidArgumentError, Option, type Command } from 'commander';
import { FILTERS, DEFAULT_METRICS, SIDES, dimensionsOf, type Side } from '../report/catalog.js';
import { FORMATS, PLACEHOLDERS, type OutputOptions } from '../export/output.js';
import { COLUMN_CASES, type ColumnCase } from '../report/column-case.js';
import type { WaitFlags } from '../report/poll.js';
import type { ReportFlags } from '../report/request.js';
import { BOUNDS } from '../duration.js';
import { UsageError } from '../errors.js';
import type { ChunkFlags, JobFlags } from '../engine/job.js';
import type { LoadFlags } from '../load/target.js';
import { DEFAULT_CONCURRENCY, LOG_FORMATS, MAX_CONCURRENCY, parseLookback, type LogFormat } from '../engine/limits.js';
import type { KeyRule } from '../fleet/file.js';
import { choiceOption, count, duration, list, path, paths, repeat } from './flags.js';

/** What commander hands over: flag name (camelCase) -> parsed value. Typed per group below. */
export type Parsed = Record<string, unknown>;

/** One flag of a command: commander's option, the help group it is listed under, and (run's
 * flags) what it is as a job file's key: `false`, not one; else a key of one value unless `many`. */
export interface Flag {
  group: string;
  option: Option;
  key?: KeyRule | false;
}

/** commander's `.option(flags, help, parse)`, as an Option */
const option = <T>(flags: string, help: string, parse?: (text: string, previous: T) => T) => {
  const made = new Option(flags, help);
  return parse ? made.argParser(parse) : made;
};
const LIST: KeyRule = { many: true };

/** A command's flags, group by group as listed (commander's current group, as `.optionsGroup`). */
export function addFlags(command: Command, flags: readonly Flag[]): Command {
  let group: string | undefined;
  for (const flag of flags) {
    if (flag.group !== group) command.optionsGroup((group = flag.group));
    command.addOption(flag.option);
  }
  return command;
}

/** `run`'s flags, in help's order: the one table (above). */
export function runFlags(): Flag[] {
  return [
    ...reportFlags(SIDES), ...outputFlags('run', PLACEHOLDERS), ...chunkFlags(), ...jobFlags(),
    { group: RECURRING, option: option('--plan', 'print the windows the run would fetch, resume or skip, and why; send no request, write nothing'), key: false },
    ...loadFlags(), ...waitFlags('the report'),
  ];
}

const camelCase = (option: string) => option.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
/** each filter's key in commander's options, computed once (a job file parses thousands of jobs) */
const FILTER_KEYS = new Map(FILTERS.map((filter) => [filter, camelCase(filter.option)]));

export function reportFlags(sides: readonly Side[]): Flag[] {
  const side = sides.length === 1 ? sides[0] : undefined;
  const metricsHelp = side
    ? `metrics, comma-separated, repeatable (default: all: ${DEFAULT_METRICS[side].join(', ')})`
    : 'metrics, comma-separated, repeatable (default: every metric of the side)';
  const breakdownsHelp = side
    ? `breakdowns, comma-separated, repeatable: ${dimensionsOf(side).join(', ')}`
    : 'breakdowns, comma-separated, repeatable: DAILY, HOURLY, MONTHLY or RANGE, and dimensions of the side';
  const group = 'Report options:';
  const flags: Flag[] = [
    { group, option: option('--since <time>', 'start of the period (Europe/Paris): 2026-11-01, yesterday, last-week, this-month, -7d, -2w, -3m, now, Unix seconds, ISO') },
    { group, option: option('--until <time>', 'end of the period; a date means its last second (23:59:59), a week or a month its last day') },
    { group, option: option('--metrics <list>', metricsHelp, list), key: LIST },
    { group, option: option('--breakdowns <list>', breakdownsHelp, list), key: LIST },
    { group, option: option('--param <name=value>', 'send a parameter the CLI does not model (repeatable)', repeat), key: LIST },
    { group, option: option('--no-validate', 'send metric and breakdown values as given') },
  ];
  for (const filter of FILTERS) {
    const flag = { group: 'Filters (repeatable, comma-separated):', key: LIST };
    const spelled = `--${filter.option} <${filter.text ? 'name' : 'ids'}>`;
    const parse = filter.text ? repeat : list;
    if (!filter.sides.some((s) => sides.includes(s))) {
      // the other side's filters are accepted, hidden, so the request check can say which side
      // they belong to rather than commander's "unknown option"
      flags.push({ ...flag, option: new Option(spelled).argParser(parse).hideHelp() });
      continue;
    }
    const only = sides.length > 1 && filter.sides.length === 1 ? `${filter.sides[0]} only` : '';
    // "(admin only, buyer only)", not "(admin only) (buyer only)"
    const noted = /^(.*) \((.*)\)$/.exec(filter.description);
    flags.push({ ...flag, option: option(spelled, !only ? filter.description : noted ? `${noted[1]} (${noted[2]}, ${only})` : `${filter.description} (${only})`, parse) });
  }
  return flags;
}

export function reportFlagsOf(parsed: Parsed): ReportFlags {
  const filters: Record<string, string[]> = {};
  for (const filter of FILTERS) {
    // (most filters are not given: no empty lists made for them, a job file's 20,000 jobs each
    // asked for every filter)
    const given = parsed[FILTER_KEYS.get(filter) as string] as string[] | undefined;
    if (!given?.length) continue;
    const values = filter.text ? given.map((value) => value.trim()).filter(Boolean) : given;
    if (values.length > 0) filters[filter.param] = values;
  }
  return {
    since: parsed.since as string | undefined,
    until: parsed.until as string | undefined,
    metrics: (parsed.metrics as string[] | undefined) ?? [],
    breakdowns: (parsed.breakdowns as string[] | undefined) ?? [],
    filters,
    params: (parsed.param as string[] | undefined) ?? [],
    validate: parsed.validate !== false,
  };
}

export function waitFlags(what: string): Flag[] {
  const group = 'Waiting:';
  return [
    { group, option: option('--poll-interval <duration>', 'poll at this fixed interval (default: 1s, doubling to 7.5s)', duration('--poll-interval', BOUNDS.pollInterval)) },
    { group, option: option('--max-wait <duration>', `give up waiting for ${what} after this long`, duration('--max-wait', BOUNDS.maxWait)).default(30 * 60_000, '30m') },
  ];
}

export function waitFlagsOf(parsed: Parsed): WaitFlags {
  return { pollIntervalMs: parsed.pollInterval as number | undefined, maxWaitMs: parsed.maxWait as number };
}

export function outputFlags(command: 'run' | 'download', placeholders: readonly string[]): Flag[] {
  const run = command === 'run';
  const filled = `placeholders ${placeholders.map((name) => `{${name}}`).join(' ')}`;
  const group = 'Output options:';
  return [
    run
      ? { group, option: option('-o, --output <file>', `write to FILE (- for stdout); repeatable: each FILE from the one report, its format from its extension; ${filled}`, paths),
        key: { many: true, place: 'path', about: '--output: a file, or a list of files written from the one report' } }
      : { group, option: option('-o, --output <file>', `write to FILE (- for stdout); ${filled}`, path) },
    { group, option: choiceOption('--format <format>', run ? 'default: from the file extension, else csv; with several -o, each file\'s extension' : 'default: from the file extension, else csv', FORMATS, 'format') },
    { group, option: option('--columns <list>', run
      ? '`requested` (the default of CSV, Parquet, XLSX: date, the breakdowns\' fields, the metrics, in that order), `all` (every field of every row; JSON and NDJSON\'s default: the rows as received), or field names (comma-separated, repeatable)'
      : '`requested` (the default of CSV, Parquet, XLSX when a journal or --state knows the report\'s request, else every field), `all` (every field of every row; JSON and NDJSON\'s default), or field names (comma-separated, repeatable)', list), key: LIST },
    { group, option: option('--delimiter <char>', 'CSV: field delimiter (default: ,)') },
    { group, option: option('--bom', 'CSV: start with a UTF-8 byte order mark') },
    { group, option: option('--excel', 'CSV for spreadsheets in France: BOM, ";", CRLF, decimal comma, formulas made inert') },
    { group, option: choiceOption('--column-case <case>', 'the columns\' names: camel, as the API sends them (revenueEuro, the default), or snake (revenue_euro), in files, JSON keys and --load\'s table', COLUMN_CASES, 'column case') },
  ];
}

export function outputFlagsOf(parsed: Parsed): OutputOptions {
  // run's -o is repeatable (a list), download's one value
  const given = parsed.output as string | string[] | undefined;
  const [output, ...more] = typeof given === 'string' ? [given] : given ?? [];
  return {
    output,
    ...(more.length ? { more } : {}),
    format: parsed.format as string | undefined,
    columns: parsed.columns as string[] | undefined,
    delimiter: parsed.delimiter as string | undefined,
    bom: parsed.bom as boolean | undefined,
    excel: parsed.excel as boolean | undefined,
    columnCase: parsed.columnCase as ColumnCase | undefined,
  };
}

function chunkFlags(): Flag[] {
  const group = 'Chunked runs (backfills):';
  return [
    { group, option: option('--chunk <size>', 'one report per window of day, week, month, Nd or Nh (Paris calendar), merged in order') },
    { group, option: option('--concurrency <n>', `with --chunk: reports in progress at once, 1-${MAX_CONCURRENCY}`, count('--concurrency', 1, MAX_CONCURRENCY)).default(DEFAULT_CONCURRENCY) },
    { group, option: option('--no-split', 'with --chunk: do not halve a window whose report fails or is too large') },
  ];
}

/** The chunk flags, or undefined for a run of one report (then --concurrency and --no-split are
 * refused, rather than silently ignored). */
export function chunkFlagsOf(parsed: Parsed, command: Command): ChunkFlags | undefined {
  const chunk = parsed.chunk as string | undefined;
  if (chunk === undefined) {
    // --load chooses its own windows (a day, a month) and takes these flags for them
    if (parsed.load !== undefined) return undefined;
    const given = ['concurrency', 'split'].filter((name) => command.getOptionValueSource(name) === 'cli');
    if (given.length > 0) throw new UsageError(`${given.map((name) => (name === 'split' ? '--no-split' : `--${name}`)).join(' and ')} only apply with --chunk`, 'add --chunk day (or week, month, Nd, Nh)').about(given[0] === 'split' ? '--no-split' : `--${given[0]}`);
    return undefined;
  }
  return { chunk, concurrency: parsed.concurrency as number, split: parsed.split !== false };
}

const RECURRING = 'Recurring runs (nightly exports):';

function jobFlags(): Flag[] {
  const group = RECURRING;
  return [
    { group, option: option('--state <file>', 'the run\'s manifest (a file, or s3://BUCKET/KEY): skip windows done, resume submitted reports by ID, retry failed ones'), key: { place: 'state' } },
    { group, option: option('--lookback <days>', 'with --state: Nd: fetch again the N days up to the end of the last run\'s period, its last day included (late numbers)', (text: string) => parseLookback(text)) },
    { group, option: option('--start <time>', 'with --since auto: where the first run starts, while the state file records no run; later runs go on from the state') },
    { group, option: option('--full-refresh', 'with --state: ignore what the state file says and start it over') },
    { group, option: option('--lock-wait <duration>', 'with --state: wait up to DURATION for the state\'s lock held by another run (default 0: exit 2 at once)', duration('--lock-wait', BOUNDS.lockWait)) },
    { group, option: option('--no-resume', 'submit a new report even if an interrupted run of the same request left one') },
    { group, option: logFormatOption() },
    // (a job file's jobs share `jobs run --metrics-file`: not a key of a job)
    { group, option: option('--metrics-file <path>', 'write what the run did in Prometheus\' text format (node_exporter\'s textfile collector), replaced whole at its end'), key: false },
  ];
}

/** --log-format, for `run` and `jobs run`: not given, REPORTING_LOG_FORMAT decides, else text. */
export function logFormatOption() {
  return choiceOption('--log-format <format>', 'text (the default, or REPORTING_LOG_FORMAT), or json: one JSON object per event on stderr, the last line included', LOG_FORMATS, 'log format');
}

/** --on-schema-change (load/load.ts's ON_SCHEMA_CHANGE, repeated here so that help loads nothing more) */
const ON_SCHEMA_CHANGE = ['fail', 'add-columns', 'allow-missing'] as const;

function loadFlags(): Flag[] {
  const group = 'Loading into a database:';
  return [
    { group, option: option('--load <target>', 'load the rows into a table: duckdb:PATH or postgres://USER@HOST:PORT/DB (or REPORTING_LOAD); each window replaces its own rows, in one transaction'), key: { place: 'load' } },
    { group, option: option('--table <name>', 'with --load: the table, {side}_report by default; {side} allowed; schema.table for Postgres') },
    { group, option: option('--scope <name>', 'with --load: the account part of the rows\' scope; by default the profile\'s name, or env with REPORTING_TOKEN') },
    { group, option: choiceOption('--on-schema-change <policy>', 'with --load, when the table\'s columns differ from the export\'s: fail; add-columns adds the new ones (nullable) and leaves missing ones NULL; allow-missing leaves missing ones NULL', ON_SCHEMA_CHANGE, 'policy').default('fail') },
  ];
}

export function loadFlagsOf(parsed: Parsed): LoadFlags {
  return {
    load: parsed.load as string | undefined,
    table: parsed.table as string | undefined,
    scope: parsed.scope as string | undefined,
    onSchemaChange: parsed.onSchemaChange as LoadFlags['onSchemaChange'],
    concurrency: parsed.concurrency as number,
    split: parsed.split !== false,
  };
}

export function jobFlagsOf(parsed: Parsed): JobFlags {
  const state = parsed.state as string | undefined;
  const sinceAuto = typeof parsed.since === 'string' && parsed.since.trim().toLowerCase() === 'auto';
  if (state === undefined) {
    const given = [
      ...(sinceAuto ? ['--since auto'] : []),
      ...(parsed.lookback !== undefined ? ['--lookback'] : []),
      ...(parsed.start !== undefined ? ['--start'] : []),
      ...(parsed.lockWait !== undefined ? ['--lock-wait'] : []),
      // --load replaces the period's rows whole with --full-refresh, with or without a state file
      ...(parsed.fullRefresh && parsed.load === undefined ? ['--full-refresh'] : []),
    ];
    if (given.length > 0) {
      throw new UsageError(`${given.join(' and ')} need${given.length === 1 ? 's' : ''} --state FILE (where the last window done is recorded)`, `add --state buyer.state.json, for example${sinceAuto ? '; the first run gives a date as --since (or --start DATE)' : ''}`).about(given[0]?.split(' ')[0]);
    }
  } else if (state.trim() === '') {
    throw new UsageError('--state wants a file name', 'for example --state buyer.state.json').about('--state');
  }
  if (parsed.start !== undefined && !sinceAuto) {
    throw new UsageError('--start only applies with --since auto (it is where the first run starts)', 'write --since auto --start DATE, or give the date as --since').about('--start');
  }
  return {
    state,
    sinceAuto,
    lookbackDays: (parsed.lookback as number | undefined) ?? 0,
    fullRefresh: Boolean(parsed.fullRefresh),
    resume: parsed.resume !== false,
    start: parsed.start as string | undefined,
    logFormat: parsed.logFormat as LogFormat | undefined,
    lockWaitMs: (parsed.lockWait as number | undefined) ?? 0,
    ...(parsed.metricsFile === undefined ? {} : { metricsFile: parsed.metricsFile as string }),
  };
}

/** The state file argument of `state` subcommands. */
export const stateFile = () => new Argument('<file>', 'the state file (as given to run --state), an s3:// URL, or the --load database of --state table').argParser((text: string) => {
  if (text.trim() === '') throw new InvalidArgumentError('a file name, not an empty one');
  return text;
});

/** `--key`: which state of a database's _reporting_state (`--state table`). */
export const stateKey = () => new Option('--key <key>', 'with a database: which of its states (the load table and the scope; needed when it holds several)');
