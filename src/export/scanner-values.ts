// What the report scanner (scanner.ts) hands on, and its bytes mode: the kinds of values, the
// handler of rows, its error, text in bytes mode, and the helpers its row handlers share.

export const enum Kind {
  String = 0,
  Number = 1,
  Boolean = 2,
  Null = 3,
  /** a nested object or array, as compact JSON text */
  Json = 4,
}

export interface RowHandler {
  /** `kinds` is reused between rows: copy it to keep it. `keys` is never changed once handed on (a
   * handler may keep it), and rows with the same keys bring the same array, so that comparing the
   * keys by identity is the common case (sameKeys). `values` is the row's own. */
  row(keys: string[], values: string[], kinds: Kind[], raw: string): void;
}

export class ReportFormatError extends Error {}

/** Text in bytes mode (one char a byte of UTF-8) back to text, and text to bytes mode. */
export const fromBytes = (text: string): string => Buffer.from(text, 'latin1').toString('utf8');
export const toBytes = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

/** How much of `bytes` ends on a whole UTF-8 character: the bytes of one cut at the end wait. */
export function wholeLength(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const byte = bytes[i] as number;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look for its lead
    if (byte < 0xc0) return n;
    const needs = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return n - i < needs ? i : n;
  }
  return n;
}

/** The largest single row (or other member of the report) read: beyond it the body is refused
 * rather than held in memory. Documented in docs/security.md. */
export const ROW_CAP_CHARS = 64 * 1024 * 1024;

/**
 * Bytes decoded at a time. A 64 KiB chunk of the socket decodes to a string of up to 128 KB (text
 * with any character beyond Latin-1 takes two bytes a character), which V8 allocates among the
 * large objects of the old generation, freed only by a full collection: a 1M-row CSV export held a
 * 77 MB heap for a 13-20 MB live set. Pieces of 32 KiB stay in the young generation (heap at most
 * 48 MB, peak RSS 143 -> 127 MB; test/bench/RESULTS.md, "Served report body").
 */
export const PIECE_BYTES = 32 * 1024;

/** A value worth naming when its field is left out: not null, not the empty string. */
export function holdsValue(value: string, kind: Kind): boolean {
  return kind !== Kind.Null && !(kind === Kind.String && value === '');
}

/** The same field names in the same order. */
export function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A scanned value back as JSON text. */
export function jsonText(value: string, kind: Kind): string {
  if (kind === Kind.String) return JSON.stringify(value);
  if (kind === Kind.Null) return 'null';
  return value;
}
