// A job file's YAML: its values (js-yaml, fast) and, only when an error names one, the places
// (line:column) of its nodes (the `yaml` package, which keeps each node's range).

import { FAILSAFE_SCHEMA, Type, load as loadYaml } from 'js-yaml';
import type { Document, LineCounter, Node, Pair } from 'yaml';
import { UsageError } from '../errors.js';
import { requireYaml } from '../lazy.js';

/** A place in the file, as errors name it. */
export interface At {
  line: number;
  col: number;
}

/** A mistake in the job file: `FILE:LINE:COL: message`, exit 2. */
export class JobFileError extends UsageError {
  constructor(file: string, at: At | undefined, message: string, hint?: string) {
    super(`${file}${at ? `:${at.line}:${at.col}` : ''}: ${message}`, hint);
  }
}

/** Where a value is in the file: the keys and list indexes from the top. */
export type Path = readonly (string | number)[];

/**
 * Places in the file, found only when asked (an error names one): the file is read for its values
 * by js-yaml, and for places by the `yaml` package, which keeps each node's range. On a job file of
 * 20,000 jobs, js-yaml takes a tenth of `yaml`'s time and a third of its memory
 * (test/bench/RESULTS.md, "A job file of 20,000 jobs"); a valid file never pays for places.
 */
export class Places {
  private doc?: Document;
  private lines?: LineCounter;

  constructor(private readonly text: string) {}

  /** yaml's reading of the file: its first error, with its place, if it has one */
  parsed(): { doc: Document; atOf: (offset: number) => At } {
    if (!this.doc) {
      const { LineCounter: Lines, parseDocument } = requireYaml();
      this.lines = new Lines();
      this.doc = parseDocument(this.text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: true });
    }
    const lines = this.lines as LineCounter;
    return { doc: this.doc, atOf: (offset) => { const pos = lines.linePos(offset); return { line: pos.line, col: pos.col }; } };
  }

  /** where the value at `path` starts (`key`: where its key is); an alias is the node its anchor names */
  find(path: Path, part: 'key' | 'value'): At | undefined {
    const { doc, atOf } = this.parsed();
    const { isMap, isScalar, isSeq } = requireYaml();
    let node = resolved(doc.contents as Node | null, doc);
    let found: Node | null | undefined = node;
    for (const [index, step] of path.entries()) {
      if (isMap(node)) {
        const pair = node.items.find((item: Pair) => isScalar(item.key) && String(item.key.value) === String(step));
        if (!pair) return undefined;
        if (index === path.length - 1 && part === 'key') found = pair.key as Node;
        node = resolved(pair.value as Node | null, doc);
      } else if (isSeq(node) && typeof step === 'number') {
        node = resolved(node.items[step] as Node | null, doc);
      } else {
        return undefined;
      }
      if (index < path.length - 1 || part === 'value') found = node;
    }
    return found?.range ? atOf(found.range[0]) : undefined;
  }

  /** a place found when first read (`line`, `col`) */
  at(path: Path, part: 'key' | 'value'): At {
    return new Place(this, path, part);
  }
}

/** A place in the file, looked up when first read: 20,000 jobs' places, unread, are a few fields each. */
class Place implements At {
  private known?: At;

  constructor(private readonly places: Places, private readonly path: Path, private readonly part: 'key' | 'value') {}

  get line(): number {
    return this.found().line;
  }

  get col(): number {
    return this.found().col;
  }

  /** the node's place; a value with none is placed at its key, else at what holds it */
  private found(): At {
    if (!this.known) {
      let place = this.places.find(this.path, this.part) ?? (this.part === 'value' ? this.places.find(this.path, 'key') : undefined);
      for (let length = this.path.length - 1; !place && length >= 0; length--) place = this.places.find(this.path.slice(0, length), 'value');
      this.known = place ?? START;
    }
    return this.known;
  }
}

export const START: At = { line: 1, col: 1 };

/** A plain scalar of YAML 1.2's core schema, resolved as the `yaml` package resolves it (js-yaml's
 * own core schema also reads `0b101`, `-0x10` and `+0b1` as numbers, which `yaml` keeps as text). */
const plain = <T>(tag: string, pattern: RegExp, construct: (text: string) => T) =>
  new Type(`tag:yaml.org,2002:${tag}`, { kind: 'scalar', resolve: (text: string | null) => text !== null && pattern.test(text), construct });
const YAML_CORE = FAILSAFE_SCHEMA.extend({
  implicit: [
    new Type('tag:yaml.org,2002:null', { kind: 'scalar', resolve: (text: string | null) => text === null || /^(?:~|null|Null|NULL|)$/.test(text), construct: () => null }),
    plain('bool', /^(?:true|True|TRUE|false|False|FALSE)$/, (text) => /^t/i.test(text)),
    plain('int', /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/, (text) => (text.startsWith('0o') ? parseInt(text.slice(2), 8) : text.startsWith('0x') ? parseInt(text.slice(2), 16) : Number(text))),
    plain('float', /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
      (text) => (/\.(?:nan)$/i.test(text) ? Number.NaN : /inf$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text))),
  ],
});

/**
 * The file's values: js-yaml with YAML 1.2's core schema as `yaml` reads it (`2026-11-01` stays
 * text). What js-yaml does not take (a tag, a directive such as `%YAML 1.1`) is read by `yaml`,
 * as before; a file neither takes is described with yaml's words and place.
 */
export function valuesOf(text: string, file: string, places: Places): unknown {
  if (!/^%/m.test(text)) {
    try {
      return loadYaml(text, { schema: YAML_CORE, filename: file });
    } catch {
      // yaml's reading below: its value, or its words for the mistake
    }
  }
  const { doc, atOf } = places.parsed();
  const first = doc.errors[0];
  if (first) throw new JobFileError(file, atOf(first.pos[0]), `not valid YAML: ${first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`);
  return doc.toJS();
}

/** The node an alias names (an anchor defined earlier in the file), else the node itself. */
function resolved<N extends Node | null>(node: N, doc: Document): N | Node {
  return requireYaml().isAlias(node) ? (node.resolve(doc) as Node | undefined) ?? node : node;
}
