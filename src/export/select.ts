// `--columns` for JSON and NDJSON: each row written as a JSON object of the chosen fields, in the
// chosen order (a field the row lacks is null, as an empty cell in CSV), instead of the row as
// received. Fields left out that held a value are noted, as the tabular writers do.

import { Kind, fromBytes, holdsValue, sameKeys, toBytes } from './scanner.js';

const jsonText = (value: string, kind: Kind) => (kind === Kind.String ? JSON.stringify(value) : kind === Kind.Null ? 'null' : value);

/** A row as a compact JSON object of its own fields, in their order: `names` are each field's
 * opening text (`{"date":`, then `,"clicks":`...), made once for rows of the same keys (in bytes
 * mode, bytes, which JSON.stringify keeps as they are). */
export function rowObject(names: readonly string[], values: readonly string[], kinds: readonly Kind[]): string {
  let text = '';
  for (let k = 0; k < names.length; k++) text += (names[k] as string) + jsonText(values[k] as string, kinds[k] as Kind);
  return names.length ? `${text}}` : '{}';
}

export class RowSelector {
  private readonly names: string[];
  private layoutKeys: string[] = [];
  /** per chosen column, where it is in the current layout's keys (-1: absent) */
  private at: number[] = [];
  /** the current layout's keys that are left out */
  private left: number[] = [];

  private readonly columns: readonly string[];
  /** the fields left out seen so far, as the rows have them */
  private readonly droppedSeen = new Set<string>();

  /** `bytes`: rows in the scanner's bytes mode (JSON.stringify keeps a byte's char as it is, so
   * the JSON made is bytes too) */
  constructor(columns: readonly string[], private readonly dropped?: Set<string>, private readonly bytes = false) {
    this.columns = bytes ? columns.map(toBytes) : columns;
    this.names = this.columns.map((column) => `${JSON.stringify(column)}:`);
  }

  /** The row as a JSON object of the chosen columns. */
  json(keys: string[], values: string[], kinds: Kind[]): string {
    if (!sameKeys(keys, this.layoutKeys)) {
      this.layoutKeys = keys; // never changed once handed on (RowHandler): compared by identity next
      this.at = this.columns.map((column) => keys.indexOf(column));
      this.left = keys.flatMap((key, k) => (this.columns.includes(key) ? [] : [k]));
    }
    if (this.dropped) {
      for (const k of this.left) {
        const key = keys[k] as string;
        // named once as text (bytes mode: converting it every row would cost a native call a cell)
        if (holdsValue(values[k] as string, kinds[k] as Kind) && !this.droppedSeen.has(key)) {
          this.droppedSeen.add(key);
          this.dropped.add(this.bytes ? fromBytes(key) : key);
        }
      }
    }
    let text = '{';
    for (let c = 0; c < this.names.length; c++) {
      const k = this.at[c] as number;
      text += `${c > 0 ? ',' : ''}${this.names[c]}${k < 0 ? 'null' : jsonText(values[k] as string, kinds[k] as Kind)}`;
    }
    return `${text}}`;
  }
}
