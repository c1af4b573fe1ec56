// Where and how a report is written: the format (--format, else the output's extension, else CSV),
// the -o template and its placeholders, and the CSV options.

import { CliError, EXIT, UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import type { CsvOptions } from './writers.js';

export const FORMATS = ['csv', 'json', 'ndjson'] as const;
export type Format = (typeof FORMATS)[number];

/** The output flags of `run` and `download`, parsed at the edge. */
export interface OutputOptions {
  output?: string;
  format?: string;
  /** --columns, repeatable and comma-separated, already split */
  columns?: string[];
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
  return undefined;
}

/** --delimiter's names (completion offers them); `\t` is understood too. */
export const DELIMITER_NAMES: Record<string, string> = { comma: ',', semicolon: ';', tab: '\t', pipe: '|' };

function delimiterOf(text: string | undefined): string {
  if (text === undefined) return ',';
  const delimiter = (text === '\\t' ? '\t' : DELIMITER_NAMES[text.toLowerCase()]) ?? text;
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

  const columns = options.columns;
  if (columns !== undefined && columns.length === 0) throw new UsageError('--columns wants a comma-separated list of field names');
  const csvOnly = ['columns', 'delimiter', 'bom', 'excel'] as const;
  if (format !== 'csv') {
    const given = csvOnly.filter((name) => options[name] !== undefined && options[name] !== false);
    if (given.length) throw new UsageError(`--${given[0]} applies to CSV output, not ${format}`);
  }
  const csv: CsvOptions = { delimiter: delimiterOf(options.delimiter), bom: Boolean(options.bom), excel: Boolean(options.excel), columns };
  if (csv.excel && options.delimiter !== undefined && csv.delimiter !== ';') {
    throw new UsageError('--excel writes ";" as the delimiter (a decimal comma needs it); drop --delimiter');
  }
  return { template, format, csv };
}

/**
 * The -o template with its placeholders filled. A value can never take the path out of the folder
 * the template names: separators and control characters in a value become `_`, and a path segment
 * that a placeholder made empty, `.` or `..` is refused (exit 5; report IDs are checked before, so
 * only a broken value gets here).
 */
export function expandTemplate(template: string, values: Placeholders): string {
  // eslint-disable-next-line no-control-regex
  const fill = (text: string) => text.replace(/\{([^}]*)\}/g, (_, name: keyof Placeholders) => (values[name] ?? '').replace(/[/\\\u0000-\u001f\u007f]/g, '_'));
  return template.split(/([/\\])/).map((segment, i) => {
    if (i % 2 === 1 || !segment.includes('{')) return segment;
    const filled = fill(segment);
    if (filled === '' || filled === '.' || filled === '..') {
      throw new CliError(`refusing to write outside the folder -o names: ${JSON.stringify(segment)} would become ${JSON.stringify(filled)}`, EXIT.network);
    }
    return filled;
  }).join('');
}
