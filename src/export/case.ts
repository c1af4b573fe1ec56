// --column-case snake for the files: the rows reach the writer with their keys renamed
// (`revenueEuro` -> `revenue_euro`), so that a CSV header, a Parquet or XLSX column and a JSON key
// all carry the same name. Rows are renamed after merging (the merger knows metrics by their
// fields' names) and before the writer, which compares keys by identity: the same keys array in
// gives the same renamed array out.

import { UsageError } from '../errors.js';
import { snakeCase } from '../report/column-case.js';
import type { RowWriter } from './row-writer.js';
import { fromBytes, type Kind } from './scanner.js';
import { rowObject } from './select.js';
import type { Sink } from './sink.js';

/** The keys of a row in snake case, the same array for the same keys; two fields that would be one
 * column (`fooBar` and `foo_bar`, which no field of the contract is) are refused, never merged. */
export class SnakeKeys {
  private readonly renamed = new WeakMap<string[], string[]>();
  /** the last keys and their names: most rows bring the same keys array as the row before */
  private lastKeys?: string[];
  private lastNamed: string[] = [];

  /** `bytes`: the keys are in the scanner's bytes mode (named as text in the error) */
  constructor(private readonly bytes = false) {}

  of(keys: string[]): string[] {
    if (keys === this.lastKeys) return this.lastNamed;
    let named = this.renamed.get(keys);
    if (named === undefined) {
      named = keys.map(snakeCase);
      const twice = named.findIndex((name, i) => named?.indexOf(name) !== i);
      if (twice >= 0) {
        const first = named.indexOf(named[twice] as string);
        const text = (key: string) => (this.bytes ? fromBytes(key) : key);
        throw new UsageError(`the fields ${text(keys[first] as string)} and ${text(keys[twice] as string)} of the report would both be the column ${text(named[twice] as string)} in snake case`,
          'write the names as received with --column-case camel, or leave one out with --columns');
      }
      this.renamed.set(keys, named);
    }
    this.lastKeys = keys;
    this.lastNamed = named;
    return named;
  }
}

/** A writer fed rows with snake-case keys. `json`: the writer copies each row's JSON as received
 * (NDJSON, JSON without --columns), which is then made anew from the renamed keys. */
export class SnakeCaseRows implements RowWriter {
  private readonly keys: SnakeKeys;

  constructor(private readonly inner: RowWriter, private readonly json: boolean) {
    this.keys = new SnakeKeys(inner.byteRows === true);
  }

  get byteRows(): boolean | undefined {
    return this.inner.byteRows;
  }

  /** JSON: the `"name":` texts of the last keys, made once per keys array */
  private namesOf?: string[];
  private names: string[] = [];

  row(keys: string[], values: string[], kinds: Kind[], raw: string): void {
    const named = this.keys.of(keys);
    if (!this.json) return this.inner.row(named, values, kinds, raw);
    if (named !== this.namesOf) {
      this.names = named.map((name, k) => `${k > 0 ? ',' : '{'}${JSON.stringify(name)}:`);
      this.namesOf = named;
    }
    this.inner.row(named, values, kinds, rowObject(this.names, values, kinds));
  }

  take(): string | Buffer | Promise<string | Buffer> {
    return this.inner.take();
  }

  finish(): string | Buffer | Promise<string | Buffer> {
    return this.inner.finish();
  }

  async complete(sink: Sink): Promise<void> {
    await this.inner.complete?.(sink);
  }

  release(): void {
    this.inner.release?.();
  }
}
