// Where and how a report is written: the format (--format, else the output's extension, else CSV),
// the -o template and its placeholders, and the CSV options.

import { CliError, EXIT, UsageError } from '../errors.js';
import type { Output } from '../context.js';
import { metricField, type Side } from '../report/catalog.js';
import { snakeCase, type ColumnCase } from '../report/column-case.js';
import { exportColumns } from '../report/schema.js';
import { didYouMean } from '../suggest.js';
import type { CsvOptions } from './writers.js';

export const FORMATS = ['csv', 'json', 'ndjson', 'parquet', 'xlsx'] as const;
export type Format = (typeof FORMATS)[number];
/** formats that are bytes, not text: never written to a terminal */
const BINARY_FORMATS: readonly Format[] = ['parquet', 'xlsx'];

/** `campaigns` writes a table on a terminal besides JSON and CSV. */
export const CAMPAIGNS_FORMATS = ['table', 'json', 'csv'] as const;
export type CampaignsFormat = (typeof CAMPAIGNS_FORMATS)[number];

export interface OutputOptions {
  output?: string;
  /** run's -o repeated: the outputs after the first, written from the same report */
  more?: string[];
  format?: string;
  /** repeatable, each comma-separated */
  columns?: string[];
  delimiter?: string;
  bom?: boolean;
  excel?: boolean;
  /** --column-case (undefined: not given, camel) */
  columnCase?: ColumnCase;
  json?: boolean;
}

/** How the columns of a tabular output were chosen: not at all (`default`: the requested columns
 * when the request is known, else every field), `--columns requested`, `--columns all`, or names. */
export type ColumnsBy = 'default' | 'requested' | 'all' | 'named';

export interface OutputPlan {
  /** the -o template, or undefined for stdout */
  template?: string;
  format: Format;
  csv: CsvOptions;
  columnsBy: ColumnsBy;
}

/** The formats whose columns are chosen (JSON and NDJSON keep the rows as received). */
export const TABULAR_FORMATS: readonly Format[] = ['csv', 'parquet', 'xlsx'];
export const isTabular = (format: Format) => TABULAR_FORMATS.includes(format);

export const PLACEHOLDERS = ['side', 'since', 'until', 'reportId'] as const;
export type Placeholders = Partial<Record<(typeof PLACEHOLDERS)[number], string>>;

/** The extensions each format owns (.tsv is CSV with a tab). */
const EXTENSIONS: Record<Format, readonly string[]> = {
  csv: ['.csv', '.tsv'], json: ['.json'], ndjson: ['.ndjson', '.jsonl'], parquet: ['.parquet'], xlsx: ['.xlsx'],
};

/** Extensions meant for a format this tool writes under another name: a did-you-mean. */
const LIKELY_EXTENSIONS: Readonly<Record<string, string>> = {
  '.xls': '.xlsx', '.xlsm': '.xlsx', '.xlsb': '.xlsx', '.pq': '.parquet', '.parq': '.parquet', '.txt': '.csv', '.tab': '.tsv', '.ldjson': '.ndjson',
};

/** The extension of the file name, if it has one (`.csv`; not for `.hidden` or `dir.d/file`). */
function extensionOf(path: string): string | undefined {
  const name = path.split(/[/\\]/).pop() ?? '';
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot).toLowerCase() : undefined;
}

/**
 * The one rule of every command that writes data (`run`, `download`, `campaigns`): `--format`
 * wins; else the extension of `-o` (an extension no format owns is a usage error; no extension
 * means the default); else, on stdout, JSON with `--json` and the default without. `--json` with
 * `-o` leaves the file's format alone: stdout then gets a JSON line describing what was written.
 * `--json` and a non-JSON `--format` on stdout contradict each other.
 */
export function chooseFormat<F extends string>(
  options: { format?: string; output?: string; json?: boolean },
  formats: readonly F[],
  extensions: Partial<Record<F, readonly string[]>>,
  fallback: F,
): F {
  const toFile = Boolean(options.output && options.output !== '-');
  let format: F;
  if (options.format !== undefined) {
    const wanted = options.format.toLowerCase();
    if (!(formats as readonly string[]).includes(wanted)) {
      throw new UsageError(`unknown format "${options.format}"${didYouMean(options.format, formats)}`, `choose ${formats.join(', ')}`).about('--format');
    }
    format = wanted as F;
    if (options.json && !toFile && format !== 'json') {
      throw new UsageError(`--json prints the result as JSON on stdout, which contradicts --format ${format}`, 'drop one of them, or write a file with -o (then --json describes the file)').about('--format');
    }
    // Parquet in a .csv file: every loader that trusts the name would fail on it
    const extension = toFile ? extensionOf(options.output as string) : undefined;
    const owner = extension === undefined ? undefined : formats.find((f) => extensions[f]?.includes(extension));
    if (owner !== undefined && owner !== format) {
      throw new UsageError(`--format ${format} would write ${format} into a "${extension}" file (-o ${options.output})`, `name the file for its format (${(extensions[format] ?? []).map((e) => `*${e}`).join(', ')}), or drop --format`).about('--format');
    }
    return format;
  }
  if (toFile) {
    const extension = extensionOf(options.output as string);
    if (extension === undefined) return fallback;
    const owner = formats.find((f) => extensions[f]?.includes(extension));
    if (!owner) {
      const known = formats.flatMap((f) => extensions[f] ?? []);
      const near = LIKELY_EXTENSIONS[extension];
      throw new UsageError(`no format writes "${extension}" files (-o ${options.output})${near && known.includes(near) ? `; did you mean ${near}?` : ''}`, `name the file ${known.map((e) => `*${e}`).join(', ')}, or give --format ${formats.join('|')}`).about('-o');
    }
    return owner;
  }
  return options.json && (formats as readonly string[]).includes('json') ? ('json' as F) : fallback;
}

/** The warning of a run whose chosen columns left out fields that held values, if any did; `of`:
 * what alone left them out (a table, beside a file that keeps every field). */
export function droppedWarning(plan: OutputPlan, of?: string): string | undefined {
  const dropped = [...(plan.csv.dropped ?? [])];
  if (dropped.length === 0) return undefined;
  return `${dropped.length === 1 ? 'a field' : 'fields'} outside the columns written held values in some rows and ${dropped.length === 1 ? 'was' : 'were'} left out${of ? ` of ${of}` : ''}: ${dropped.join(', ')}; --columns all writes every field`;
}

/** The two words --columns takes besides field names. */
export const COLUMN_WORDS = ['requested', 'all'] as const;

/** --columns as given: undefined, a word (`['requested']`, `['all']`: every field of every row), or
 * the row fields named (checked against `fields`, those of the side, or of both sides for download). */
export function columnsOf(fields: readonly string[], given: readonly string[] | undefined, validate: boolean): string[] | undefined {
  if (given === undefined) return undefined;
  const columns = given.flatMap((value) => value.split(',')).map((column) => column.trim()).filter(Boolean);
  if (columns.length === 0) throw new UsageError('--columns wants a comma-separated list of field names').about('--columns');
  // `requested` is resolved once the request is known (resolveRequestedColumns)
  const words = columns.filter((column) => (COLUMN_WORDS as readonly string[]).includes(column.toLowerCase()));
  if (words.length > 0) {
    if (columns.length > 1) throw new UsageError('--columns takes `requested`, `all`, or field names, not a mix of them', 'for example --columns all, or --columns date,country,displays').about('--columns');
    return [(words[0] as string).toLowerCase()];
  }
  const named = !validate ? columns : columns.map((column) => {
    // a field by its name in any case, or by its snake-case name (--column-case snake's columns)
    const match = fields.find((field) => field.toLowerCase() === column.toLowerCase()) ?? fields.find((field) => snakeCase(field) === column.toLowerCase());
    if (match) return match;
    const renamed = metricField(column);
    const note = renamed !== column ? `; the metric ${column} arrives as the field ${renamed}` : didYouMean(column, fields);
    throw new UsageError(`--columns: no row has a field "${column}"${note}`, `fields: ${fields.join(', ')} (--no-validate lets any name through)`).about('--columns');
  });
  // a column named twice would be two columns of one name, the first one empty (and invalid DDL)
  const twice = named.find((column, i) => named.indexOf(column) !== i);
  if (twice !== undefined) throw new UsageError(`--columns names ${twice} twice`, 'name each column once').about('--columns');
  return named;
}

/** --delimiter's names (completion offers them); `\t` is understood too. */
export const DELIMITER_NAMES: Record<string, string> = { comma: ',', semicolon: ';', tab: '\t', pipe: '|' };

function delimiterOf(text: string | undefined): string {
  if (text === undefined) return ',';
  const delimiter = (text === '\\t' ? '\t' : DELIMITER_NAMES[text.toLowerCase()]) ?? text;
  if ([...delimiter].length !== 1 || delimiter === '"' || delimiter === '\n' || delimiter === '\r') {
    throw new UsageError(`--delimiter wants one character (not a quote or a line break), not ${JSON.stringify(text)}`, 'for example --delimiter ";" or --delimiter tab').about('--delimiter');
  }
  return delimiter;
}

/** Reads the output options; `available` are the placeholders this command can fill, `fields` the
 * row fields --columns may name. */
export function planOutput(options: OutputOptions & { validate?: boolean }, available: readonly string[], fields: readonly string[]): OutputPlan {
  const template = options.output && options.output !== '-' ? options.output : undefined;
  if (template) {
    for (const [, name] of template.matchAll(/\{([^}]*)\}/g)) {
      if (!(PLACEHOLDERS as readonly string[]).includes(name as string)) {
        throw new UsageError(`unknown placeholder {${name}} in -o${didYouMean(name as string, PLACEHOLDERS)}`, `placeholders: ${PLACEHOLDERS.map((p) => `{${p}}`).join(' ')}`).about('-o');
      }
      if (!available.includes(name as string)) {
        throw new UsageError(`{${name}} is not known to this command`, `here -o takes ${available.map((p) => `{${p}}`).join(' ')}; \`reporting run\` knows them all`).about('-o');
      }
    }
  }
  const format = chooseFormat(options, FORMATS, EXTENSIONS, 'csv');
  const named = columnsOf(fields, options.columns, options.validate !== false);
  const word = named?.length === 1 && (COLUMN_WORDS as readonly string[]).includes(named[0] as string) ? named[0] as 'requested' | 'all' : undefined;
  const columnsBy: ColumnsBy = named === undefined ? 'default' : word ?? 'named';
  const columns = columnsBy === 'named' ? named : undefined;
  // --columns chooses the fields of every format (JSON and NDJSON keep the rows as received
  // unless it is given); the rest is CSV's
  const csvOnly = ['delimiter', 'bom', 'excel'] as const;
  if (format !== 'csv') {
    const given = csvOnly.filter((name) => options[name] !== undefined && options[name] !== false);
    if (given.length) throw new UsageError(`--${given[0]} applies to CSV output, not ${format}`).about(`--${given[0]}`);
  }
  const tsv = format === 'csv' && options.format === undefined && template !== undefined && extensionOf(template) === '.tsv';
  const csv: CsvOptions = { delimiter: delimiterOf(options.delimiter ?? (tsv && !options.excel ? 'tab' : undefined)), bom: Boolean(options.bom), excel: Boolean(options.excel), columns, dropped: new Set(), columnCase: options.columnCase ?? 'camel' };
  if (csv.excel && options.delimiter !== undefined && csv.delimiter !== ';') {
    throw new UsageError('--excel writes ";" as the delimiter (a decimal comma needs it); drop --delimiter').about('--excel');
  }
  return { template, format, csv, columnsBy };
}

// eslint-disable-next-line no-control-regex
const UNSAFE_IN_SEGMENT = /[/\\\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const UNSAFE_IN_SEGMENT_ALL = /[/\\\u0000-\u001f\u007f]/g;
/** A placeholder's value as one path segment: separators and controls made `_`. */
const safeSegment = (value: string) => (UNSAFE_IN_SEGMENT.test(value) ? value.replace(UNSAFE_IN_SEGMENT_ALL, '_') : value);

/**
 * The -o template with its placeholders filled. A value can never take the path out of the folder
 * the template names: separators and control characters in a value become `_`, and a path segment
 * that a placeholder made empty, `.` or `..` is refused (exit 5; report IDs are checked before, so
 * only a broken value gets here).
 */
export function expandTemplate(template: string, values: Placeholders): string {
  // each {name} filled, its value's separators and controls made `_` (as /\{([^}]*)\}/g would
  // find them; scanned by hand: `jobs plan` fills 12,500 names for 20,000 jobs' shard)
  const fill = (text: string) => {
    let filled = '';
    let at = 0;
    for (let open = text.indexOf('{'); open >= 0; open = text.indexOf('{', at)) {
      const close = text.indexOf('}', open + 1);
      if (close < 0) break;
      const value: unknown = values[text.slice(open + 1, close) as keyof Placeholders];
      filled += text.slice(at, open) + safeSegment(typeof value === 'string' ? value : '');
      at = close + 1;
    }
    return filled + text.slice(at);
  };
  // each segment between separators that holds a `{`, filled (the others as they are: a job
  // file's thousands of paths are mostly folders)
  let expanded = '';
  let done = 0;
  for (let brace = template.indexOf('{'); brace >= 0; brace = template.indexOf('{', done)) {
    const from = Math.max(template.lastIndexOf('/', brace), template.lastIndexOf('\\', brace)) + 1;
    const ends = [template.indexOf('/', brace), template.indexOf('\\', brace)].filter((at) => at >= 0);
    const to = ends.length ? Math.min(...ends) : template.length;
    const segment = template.slice(from, to);
    const filled = fill(segment);
    if (filled === '' || filled === '.' || filled === '..') {
      throw new CliError(`refusing to write outside the folder -o names: ${JSON.stringify(segment)} would become ${JSON.stringify(filled)}`, EXIT.network).about('-o');
    }
    expanded += template.slice(done, from) + filled;
    done = to;
  }
  return expanded + template.slice(done);
}

/** Parquet and XLSX are bytes: refused on a terminal, written to a pipe or a file. */
export function refuseBinaryOnTerminal(plan: OutputPlan, stdout: Output): void {
  if (!plan.template && BINARY_FORMATS.includes(plan.format) && stdout.isTTY) {
    throw new UsageError(`${plan.format} is binary and stdout is a terminal`, `write a file with -o report.${plan.format}, or pipe the output`);
  }
}

/** What the columns are once the request is known (or known to be unknown): by default, and with
 * `--columns requested`, the tabular formats get the time bucket, the requested breakdowns' fields
 * and the requested metrics (catalog `requestedFieldNames`); JSON and NDJSON keep the rows as they
 * are. Without the request (`download` of a report no journal or state describes), the default is
 * every field, and `requested` is an error. With the request, the plan also gets the typed columns
 * of its report (the schema), which an empty report is written with: the same columns and types as
 * a non-empty one. */
export function resolveRequestedColumns(plan: OutputPlan, request?: { side: Side; metrics: readonly string[]; breakdowns: readonly string[] }): OutputPlan {
  // JSON and NDJSON: the rows as received, unless --columns requested
  const requested = plan.columnsBy === 'requested' || (plan.columnsBy === 'default' && isTabular(plan.format));
  if (!request) {
    if (plan.columnsBy === 'requested') {
      throw new UsageError('--columns requested needs the request, and this report\'s is not known here (neither the journal of an interrupted run nor reporting buyer or seller on this machine in the last 7 days recorded it)',
        'give --state FILE of the run that submitted it, name the columns (--columns date,country,displays), or take every field: --columns all').about('--columns');
    }
    return plan;
  }
  const schema = exportColumns({ ...request, requestedOnly: requested });
  return { ...plan, csv: { ...plan.csv, schema, ...(requested ? { columns: schema.map((column) => column.name) } : {}) } };
}
