// The typed columns of an export, from the contract (catalog ROW_FIELDS): what `reporting schema`
// prints, and the types the Parquet and XLSX writers give each field.

import {
  AMOUNT_FIELDS, BREAKDOWN_FIELDS, ROW_FIELDS, requestedFieldNames, rowFieldNames, sideSets, timeDimensionOf,
  type Side, type TimeDimension,
} from './catalog.js';
import { columnName, fieldOfColumn, type ColumnCase } from './column-case.js';

/** `month` is the MONTHLY bucket `2026-11`: text, since no SQL or Parquet type holds a month. */
export type ColumnType = 'string' | 'int64' | 'double' | 'date' | 'timestamp' | 'month';

export interface Column {
  name: string;
  type: ColumnType;
  /** the contract allows null (dimension fields of the "string or null" kind) */
  nullable: boolean;
  /** part of the row key: the time bucket and the fields of the requested breakdowns */
  key: boolean;
}

const METRIC_FIELDS = new Set([...ROW_FIELDS.buyer, ...ROW_FIELDS.seller].filter((f) => f.type === 'number').map((f) => f.name));

/** The type of a row field (or of its column in snake case). Fields the contract does not list are
 * kept as text, never dropped. */
export function fieldType(column: string, time: TimeDimension | undefined): ColumnType {
  const name = fieldOfColumn(column);
  if (name === 'date') return time === 'DAILY' ? 'date' : time === 'HOURLY' ? 'timestamp' : time === 'MONTHLY' ? 'month' : 'string';
  if (METRIC_FIELDS.has(name)) return AMOUNT_FIELDS.includes(name) ? 'double' : 'int64';
  return 'string';
}

/** The time bucket a `date` value shows: what a writer uses when it does not know the request. */
export function timeOfDateValue(value: string | undefined): TimeDimension | undefined {
  if (value === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return 'DAILY';
  if (/^\d{4}-\d{2}$/.test(value)) return 'MONTHLY';
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(value)) return 'HOURLY';
  return undefined;
}

export interface SchemaRequest {
  side: Side;
  metrics: readonly string[];
  breakdowns: readonly string[];
  /** `--columns requested` */
  requestedOnly?: boolean;
  /** `--columns a,b,c`: these fields, in this order (checked by the caller) */
  columns?: readonly string[];
}

/** The columns an export of this request has, in order. */
export function exportColumns(request: SchemaRequest): Column[] {
  const { side, metrics, breakdowns } = request;
  const time = timeDimensionOf(breakdowns);
  const keyFields = new Set(['date']);
  for (const breakdown of breakdowns) for (const field of BREAKDOWN_FIELDS[side][breakdown] ?? []) keyFields.add(field);
  const names = request.columns ?? (request.requestedOnly ? requestedFieldNames(side, metrics, breakdowns) : rowFieldNames(side, metrics, breakdowns));
  const contract = sideSets(side).types;
  return names.map((name) => ({
    name,
    type: fieldType(name, time),
    nullable: name === 'date' ? false : contract.get(name) === 'nullable',
    key: keyFields.has(name),
  }));
}

/** The columns named in the case asked for (--column-case): types and the row key unchanged. */
export function casedColumns<C extends { name: string }>(columns: readonly C[], columnCase: ColumnCase | undefined): C[] {
  return columns.map((column) => ({ ...column, name: columnName(column.name, columnCase) }));
}

/** A JSON Schema (draft-07) that the rows of the downloaded JSON (and of NDJSON output) satisfy. */
export function jsonSchema(columns: Column[], title: string): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const column of columns) {
    const base = ((): Record<string, unknown> => {
      switch (column.type) {
        case 'int64': return { type: 'integer' };
        case 'double': return { type: 'number' };
        case 'date': return { type: 'string', format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' };
        case 'month': return { type: 'string', pattern: '^\\d{4}-\\d{2}$' };
        case 'timestamp': return { type: 'string', format: 'date-time' };
        default: return { type: 'string' };
      }
    })();
    if (column.nullable) base.type = [base.type as string, 'null'];
    properties[column.name] = base;
  }
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title,
    type: 'object',
    properties,
    required: columns.map((column) => column.name),
    // servers may add fields the contract does not list; the CLI keeps them (as text in Parquet and XLSX)
    additionalProperties: true,
  };
}

export const DIALECTS = ['postgres', 'bigquery', 'duckdb'] as const;
/** What `schema --as` prints: a table for people, a JSON Schema of the rows, or a dialect's DDL. */
export const SCHEMA_FORMATS = ['table', 'json-schema', ...DIALECTS] as const;
export type SchemaFormat = (typeof SCHEMA_FORMATS)[number];
export type Dialect = (typeof DIALECTS)[number];

const SQL_TYPES: Record<Dialect, Record<ColumnType, string>> = {
  postgres: { string: 'text', month: 'text', int64: 'bigint', double: 'double precision', date: 'date', timestamp: 'timestamptz' },
  bigquery: { string: 'STRING', month: 'STRING', int64: 'INT64', double: 'FLOAT64', date: 'DATE', timestamp: 'TIMESTAMP' },
  duckdb: { string: 'VARCHAR', month: 'VARCHAR', int64: 'BIGINT', double: 'DOUBLE', date: 'DATE', timestamp: 'TIMESTAMPTZ' },
};

/** The SQL type of a column in a dialect. */
export const sqlType = (dialect: Dialect, type: ColumnType): string => SQL_TYPES[dialect][type];

/** The five columns `run --load` adds to a table: the report, the window's period, the scope (what
 * tells this run's rows from another run's in the same table) and when the rows were loaded. */
export const LOAD_METADATA: readonly Column[] = [
  { name: '_report_id', type: 'string', nullable: false, key: false },
  { name: '_window_since', type: 'timestamp', nullable: false, key: false },
  { name: '_window_until', type: 'timestamp', nullable: false, key: false },
  { name: '_scope', type: 'string', nullable: false, key: false },
  { name: '_loaded_at', type: 'timestamp', nullable: false, key: false },
];

function quote(dialect: Dialect, name: string): string {
  return dialect === 'bigquery' ? `\`${name.replace(/`/g, '\\`')}\`` : `"${name.replace(/"/g, '""')}"`;
}

/**
 * CREATE TABLE for a dialect. Every column is nullable: CSV writes null and the empty string alike
 * (an empty field), so a NOT NULL text column would refuse a CSV load. The row key is a comment,
 * not a PRIMARY KEY, for the same reason (postal code and city are null for some rows).
 */
export function createTable(columns: readonly Column[], dialect: Dialect, table: string, options: { ifNotExists?: boolean } = {}): string {
  const width = Math.max(...columns.map((column) => quote(dialect, column.name).length));
  const lines = columns.map((column) => `  ${quote(dialect, column.name).padEnd(width)} ${SQL_TYPES[dialect][column.type]}`);
  const key = columns.filter((column) => column.key).map((column) => column.name);
  return `-- row key: ${key.length ? key.join(', ') : '(none: one row for the whole period)'}\n` +
    `CREATE TABLE ${options.ifNotExists ? 'IF NOT EXISTS ' : ''}${table.split('.').map((part) => quote(dialect, part)).join('.')} (\n${lines.join(',\n')}\n);\n`;
}
