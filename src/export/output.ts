// Where and how a report is written: the format (--format, else the output's extension, else CSV),
// the -o template and its placeholders, and the CSV options.

import type { Output } from '../context.js';
import { UsageError } from '../errors.js';
import { requestedFieldNames, type Side } from '../report/catalog.js';
import { didYouMean } from '../suggest.js';
import type { CsvOptions } from './writers.js';

export const FORMATS = ['csv', 'json', 'ndjson', 'parquet', 'xlsx'] as const;
/** formats that are bytes, not text: never written to a terminal */
export const BINARY_FORMATS: readonly Format[] = ['parquet', 'xlsx'];
export type Format = (typeof FORMATS)[number];

export interface OutputOptions {
  output?: string;
  format?: string;
  columns?: string;
  delimiter?: string;
  bom?: boolean;
  excel?: boolean;
  json?: boolean;
}

export interface OutputPlan {
  /** the -o template, or undefined for stdout */
  template?: string;
  format: Format;
  csv: CsvOptions;
}

export const PLACEHOLDERS = ['side', 'since', 'until', 'reportId'] as const;
export type Placeholders = Partial<Record<(typeof PLACEHOLDERS)[number], string>>;

function formatFromName(path: string): Format | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson';
  if (lower.endsWith('.parquet')) return 'parquet';
  if (lower.endsWith('.xlsx')) return 'xlsx';
  return undefined;
}

function delimiterOf(text: string | undefined): string {
  if (text === undefined) return ',';
  const named: Record<string, string> = { tab: '\t', '\\t': '\t', semicolon: ';', comma: ',', pipe: '|' };
  const delimiter = named[text.toLowerCase()] ?? text;
  if ([...delimiter].length !== 1 || delimiter === '"' || delimiter === '\n' || delimiter === '\r') {
    throw new UsageError(`--delimiter wants one character (not a quote or a line break), not ${JSON.stringify(text)}`, 'for example --delimiter ";" or --delimiter tab');
  }
  return delimiter;
}

/** Reads the output options; `available` are the placeholders this command can fill. */
export function planOutput(options: OutputOptions, available: readonly string[]): OutputPlan {
  const template = options.output && options.output !== '-' ? options.output : undefined;
  if (template) {
    for (const [, name] of template.matchAll(/\{([^}]*)\}/g)) {
      if (!(PLACEHOLDERS as readonly string[]).includes(name as string)) {
        throw new UsageError(`unknown placeholder {${name}} in -o${didYouMean(name as string, PLACEHOLDERS)}`, `placeholders: ${PLACEHOLDERS.map((p) => `{${p}}`).join(' ')}`);
      }
      if (!available.includes(name as string)) {
        throw new UsageError(`{${name}} is not known to this command`, `here -o takes ${available.map((p) => `{${p}}`).join(' ')}; \`reporting run\` knows them all`);
      }
    }
  }
  let format: Format;
  if (options.format !== undefined) {
    const wanted = options.format.toLowerCase();
    if (!(FORMATS as readonly string[]).includes(wanted)) {
      throw new UsageError(`unknown format "${options.format}"${didYouMean(options.format, FORMATS)}`, `choose ${FORMATS.join(', ')}`);
    }
    format = wanted as Format;
    if (options.json && !template && format !== 'json') {
      throw new UsageError(`--json prints the report as JSON on stdout, which contradicts --format ${format}`, 'drop one of them, or write a file with -o');
    }
  } else if (template) format = formatFromName(template) ?? 'csv';
  else format = options.json ? 'json' : 'csv';

  const columns = options.columns?.split(',').map((column) => column.trim()).filter(Boolean);
  if (options.columns !== undefined && (!columns || columns.length === 0)) throw new UsageError('--columns wants a comma-separated list of field names');
  const csvOnly = ['columns', 'delimiter', 'bom', 'excel'] as const;
  if (format !== 'csv') {
    // --columns also chooses the columns of the other tabular formats
    const given = csvOnly.filter((name) => options[name] !== undefined && options[name] !== false && !(name === 'columns' && BINARY_FORMATS.includes(format)));
    if (given.length) throw new UsageError(`--${given[0]} applies to CSV output, not ${format}`);
  }
  const csv: CsvOptions = { delimiter: delimiterOf(options.delimiter), bom: Boolean(options.bom), excel: Boolean(options.excel), columns };
  if (csv.excel && options.delimiter !== undefined && csv.delimiter !== ';') {
    throw new UsageError('--excel writes ";" as the delimiter (a decimal comma needs it); drop --delimiter');
  }
  return { template, format, csv };
}

export function expandTemplate(template: string, values: Placeholders): string {
  return template.replace(/\{([^}]*)\}/g, (_, name: keyof Placeholders) => (values[name] ?? '').replace(/[/\\]/g, '_'));
}

/** Parquet and XLSX are bytes: refused on a terminal, written to a pipe or a file. */
export function refuseBinaryOnTerminal(plan: OutputPlan, stdout: Output): void {
  if (!plan.template && BINARY_FORMATS.includes(plan.format) && stdout.isTTY) {
    throw new UsageError(`${plan.format} is binary and stdout is a terminal`, `write a file with -o report.${plan.format}, or pipe the output`);
  }
}

/** `--columns requested`: the time bucket, the requested breakdowns' fields and the requested
 * metrics. Only `run` knows the request; elsewhere the columns must be named. */
export function resolveRequestedColumns(plan: OutputPlan, request?: { side: Side; metrics: string[]; breakdowns: string[] }): OutputPlan {
  if (plan.csv.columns?.length !== 1 || plan.csv.columns[0] !== 'requested') return plan;
  if (!request) throw new UsageError('--columns requested needs the request, which only `reporting run` knows', 'name the columns: --columns date,country,displays');
  return { ...plan, csv: { ...plan.csv, columns: requestedFieldNames(request.side, request.metrics, request.breakdowns) } };
}
