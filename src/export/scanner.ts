// A streaming reader of the download body `{"data":[row, ...],"summary":{...}}`, for bodies of any
// size (a 660 MB report is longer than V8's longest string). Rows are flat objects (contract 2.4):
// each is tokenised as it arrives, keeping every number's text exactly as sent ("numbers as the JSON
// text had them"); escaped strings and nested values are handed to the native JSON.parse. Measured
// on this machine, the general streaming parsers reach 8 to 18 MB/s, and they turn numbers into
// doubles; this reads rows at several times that (see test/bench).
//
// It survives what a hostile or broken server sends: braces, brackets, quotes and backslashes in
// strings, UTF-8 split across chunks, any whitespace, `summary` before or after `data`, other keys,
// and truncation (an error at the end rather than a short file).

import { isUtf8 } from 'node:buffer';
import { Kind, PIECE_BYTES, ROW_CAP_CHARS, ReportFormatError, fromBytes, jsonText, sameKeys, toBytes, wholeLength, type RowHandler } from './scanner-values.js';

export { Kind, ReportFormatError, fromBytes, holdsValue, sameKeys, toBytes, type RowHandler } from './scanner-values.js';

const enum State { Start, FirstKey, Key, Colon, Value, DataFirst, Row, DataAfter, AfterValue, Done }

const NEED_MORE = -1;

function isWs(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** `s[from, to)` is one JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (by hand: the
 * regular expression was 3% of a CSV export's time) */
export function isJsonNumber(s: string, from: number, to: number): boolean {
  let i = from;
  if (s.charCodeAt(i) === 45) i++;
  if (i >= to) return false;
  if (s.charCodeAt(i) === 48) i++;
  else if (isDigit(s.charCodeAt(i))) while (i < to && isDigit(s.charCodeAt(i))) i++;
  else return false;
  if (i < to && s.charCodeAt(i) === 46) {
    const digits = ++i;
    while (i < to && isDigit(s.charCodeAt(i))) i++;
    if (i === digits) return false;
  }
  if (i < to && (s.charCodeAt(i) === 101 || s.charCodeAt(i) === 69)) {
    i++;
    if (i < to && (s.charCodeAt(i) === 43 || s.charCodeAt(i) === 45)) i++;
    const digits = i;
    while (i < to && isDigit(s.charCodeAt(i))) i++;
    if (i === digits) return false;
  }
  return i === to;
}

function isNumberChar(code: number): boolean {
  return (code >= 48 && code <= 57) || code === 46 || code === 45 || code === 43 || code === 101 || code === 69;
}

/** Removes the whitespace between tokens (never inside strings). */
export function compactJson(text: string): string {
  let out = '';
  let inString = false;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 92) i++;
      else if (code === 34) inString = false;
    } else if (code === 34) inString = true;
    else if (isWs(code)) {
      out += text.slice(from, i);
      from = i + 1;
    }
  }
  return out + text.slice(from);
}

/**
 * Bytes mode (`bytes`): the body's UTF-8 is checked but not decoded; the text scanned, and the keys
 * and values handed on, hold one char a byte (latin1), for a writer that writes them back as bytes
 * (CSV: `Buffer.from(text, 'latin1')` is the body's own UTF-8). Decoding cost 7% of a CSV export,
 * and one-byte text is faster to scan (1M rows to CSV: user CPU -16%, test/bench/RESULTS.md).
 * Invalid UTF-8 becomes U+FFFD, as the decoder makes it; `\u` escapes are decoded, then made bytes.
 */
export class ReportScanner {
  private decoder = new TextDecoder('utf-8');
  /** bytes mode: the bytes of a character cut at the end of the last piece */
  private carry?: Buffer;
  private buf = '';
  private pos = 0;
  private state = State.Start;
  private key = '';
  private sawData = false;
  /** position of the next backslash in buf at or after some point; -2 = unknown */
  private backslash = -2;
  private readonly keys: string[] = [];
  private readonly kinds: Kind[] = [];
  /** the keys of the last row found free of duplicates: most rows have the same, so are not checked again */
  private uniqueKeys: string[] = [];
  /** which of uniqueKeys holds no quote or backslash: found again by comparing text (keyAt) */
  private plainKeys: boolean[] = [];
  rows = 0;
  /** the other top-level members: `summary`, and whatever else the server sent */
  readonly members: Record<string, unknown> = {};

  /** text received while a long row is incomplete, not yet joined to `buf` */
  private waiting: string[] = [];
  private waitingLength = 0;
  /** scan again once this much text is pending: twice what the last scan could not finish, so a
   * long row is re-scanned a logarithmic number of times and the whole stays linear in its bytes */
  private scanAt = 0;

  constructor(private readonly handler: RowHandler, private readonly rowCap = ROW_CAP_CHARS, private readonly bytes = false) {}

  push(chunk: Buffer | string): void {
    if (typeof chunk !== 'string' && chunk.length > PIECE_BYTES) {
      for (let at = 0; at < chunk.length; at += PIECE_BYTES) this.push(chunk.subarray(at, at + PIECE_BYTES));
      return;
    }
    const text = typeof chunk === 'string' ? chunk : this.bytes ? this.byteText(chunk) : this.decoder.decode(chunk, { stream: true });
    this.waiting.push(text);
    this.waitingLength += text.length;
    const pending = this.buf.length - this.pos + this.waitingLength;
    if (pending < this.scanAt && pending <= this.rowCap) return;
    this.scan();
  }

  private scan(): void {
    const text = this.waiting.length === 1 ? (this.waiting[0] as string) : this.waiting.join('');
    this.waiting = [];
    this.waitingLength = 0;
    this.buf = this.pos < this.buf.length ? this.buf.slice(this.pos) + text : text;
    this.pos = 0;
    this.backslash = -2;
    this.run();
    const left = this.buf.length - this.pos;
    if (left > this.rowCap) {
      this.fail(`a single row or value is larger than ${Math.round(this.rowCap / 1024 / 1024)} MiB (after ${this.rows} rows): refused`);
    }
    this.scanAt = 2 * left;
  }

  /** Bytes mode: the piece one char a byte, once it is found to be UTF-8 (else as decoded, with
   * U+FFFD for what is not, made bytes again). */
  private byteText(chunk: Buffer): string {
    let piece = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    const whole = wholeLength(piece);
    if (whole < piece.length) {
      this.carry = Buffer.from(piece.subarray(whole));
      piece = piece.subarray(0, whole);
    }
    // ignoreBOM: a U+FEFF in the middle of the body is a character (the leading BOM is skipped by run)
    return isUtf8(piece) ? piece.toString('latin1') : toBytes(new TextDecoder('utf-8', { ignoreBOM: true }).decode(piece));
  }

  /** The body has ended: it must have been a whole report. */
  end(): void {
    const rest = this.bytes ? (this.carry ? toBytes(new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.carry)) : '') : this.decoder.decode();
    this.carry = undefined;
    if (rest) this.waiting.push(rest);
    if (this.waiting.length) this.scan();
    if (this.state !== State.Done) {
      throw new ReportFormatError(this.rows > 0 || this.state !== State.Start
        ? `the report body ended early (after ${this.rows} rows): it is truncated`
        : 'the report body was empty');
    }
    if (!this.sawData) throw new ReportFormatError('the report has no "data" array');
  }

  private fail(message: string): never {
    // bytes mode: what the message quotes of the body is bytes
    throw new ReportFormatError(this.bytes ? fromBytes(message) : message);
  }

  private skipWs(): boolean {
    const s = this.buf;
    let i = this.pos;
    while (i < s.length && isWs(s.charCodeAt(i))) i++;
    this.pos = i;
    return i < s.length;
  }

  private run(): void {
    const s = this.buf;
    for (;;) {
      if (!this.skipWs()) return;
      const code = s.charCodeAt(this.pos);
      switch (this.state) {
        case State.Start:
          if (code === 0xfeff) { this.pos++; continue; }
          // bytes mode: a BOM is its three bytes (what the decoder drops)
          if (this.bytes && s.startsWith('\u00EF\u00BB\u00BF', this.pos)) { this.pos += 3; continue; }
          if (code !== 123) this.fail(`the report is not a JSON object (it starts with ${JSON.stringify(s.slice(this.pos, this.pos + 20))})`);
          this.pos++;
          this.state = State.FirstKey;
          break;
        case State.FirstKey:
        case State.Key: {
          if (code === 125 && this.state === State.FirstKey) { this.pos++; this.state = State.Done; break; }
          if (code !== 34) this.fail('a key was expected in the report object');
          const end = this.stringEnd(this.pos);
          if (end === NEED_MORE) return;
          this.key = this.stringValue(this.pos, end);
          this.pos = end + 1;
          this.state = State.Colon;
          break;
        }
        case State.Colon:
          if (code !== 58) this.fail(`":" was expected after the key "${this.key}"`);
          this.pos++;
          this.state = State.Value;
          break;
        case State.Value:
          if (this.key === 'data') {
            if (this.sawData) this.fail('the report has two "data" members');
            if (code !== 91) this.fail('"data" is not an array');
            this.sawData = true;
            this.pos++;
            this.state = State.DataFirst;
          } else {
            const end = this.valueEnd(this.pos);
            if (end === NEED_MORE) return;
            try {
              const text = s.slice(this.pos, end);
              this.members[this.bytes ? fromBytes(this.key) : this.key] = JSON.parse(this.bytes ? fromBytes(text) : text);
            } catch {
              this.fail(`the report's "${this.key}" is not valid JSON`);
            }
            this.pos = end;
            this.state = State.AfterValue;
          }
          break;
        case State.DataFirst:
          if (code === 93) { this.pos++; this.state = State.AfterValue; break; }
          this.state = State.Row;
          break;
        case State.Row: {
          if (code !== 123) this.fail(`data[${this.rows}] is not an object`);
          const end = this.row(this.pos);
          if (end === NEED_MORE) return;
          this.pos = end;
          this.rows++;
          this.state = State.DataAfter;
          break;
        }
        case State.DataAfter:
          if (code === 44) { this.pos++; this.state = State.Row; break; }
          if (code === 93) { this.pos++; this.state = State.AfterValue; break; }
          this.fail(`"," or "]" was expected after data[${this.rows - 1}]`);
          break;
        case State.AfterValue:
          if (code === 44) { this.pos++; this.state = State.Key; break; }
          if (code === 125) { this.pos++; this.state = State.Done; break; }
          this.fail('"," or "}" was expected in the report object');
          break;
        case State.Done:
          this.fail('the report has text after its end');
      }
    }
  }

  /** Hands a row on; a key given twice keeps its first place and its last value, as JSON.parse does.
   * `known`: the row's `count` keys were found as the previous row's at their places (keyAt), and
   * are not in `keys`. */
  private emit(values: string[], raw: string, known: boolean, count: number): void {
    const keys = this.keys;
    if (known) {
      if (count === this.uniqueKeys.length) {
        this.handler.row(this.uniqueKeys, values, this.kinds, raw);
        return;
      }
      for (let k = 0; k < count; k++) keys.push(this.uniqueKeys[k] as string);
    }
    if (!sameKeys(keys, this.uniqueKeys)) {
      if (new Set(keys).size === keys.length) {
        // a new array: the handlers may keep the last one (RowHandler)
        this.uniqueKeys = keys.slice();
        this.plainKeys = keys.map((key) => !key.includes('"') && !key.includes('\\'));
      }
      else {
        const kinds = this.kinds;
        const at = new Map<string, number>();
        const outKeys: string[] = [];
        const outValues: string[] = [];
        const outKinds: Kind[] = [];
        keys.forEach((key, i) => {
          const seen = at.get(key);
          if (seen === undefined) {
            at.set(key, outKeys.length);
            outKeys.push(key);
            outValues.push(values[i] as string);
            outKinds.push(kinds[i] as Kind);
          } else {
            outValues[seen] = values[i] as string;
            outKinds[seen] = kinds[i] as Kind;
          }
        });
        kinds.splice(0, kinds.length, ...outKinds);
        const members = outKeys.map((key, i) => `${JSON.stringify(key)}:${jsonText(outValues[i] as string, outKinds[i] as Kind)}`);
        this.handler.row(outKeys, outValues, kinds, `{${members.join(',')}}`);
        return;
      }
    }
    this.handler.row(this.uniqueKeys, values, this.kinds, raw);
  }

  /** The name of the row's last key so far, for messages. */
  private lastKey(known: boolean, count: number): string {
    return (known ? this.uniqueKeys[count - 1] : this.keys[this.keys.length - 1]) ?? '';
  }

  /**
   * The end quote of the key starting at `start` when it is the previous row's key at `index` (it
   * then is that same string: no slice, and the rows' keys compare by identity), else -1. Rows of a
   * report repeat their keys: 30 keys a row, 30 million strings fewer for a 1M-row report.
   */
  private keyAt(start: number, index: number): number {
    const known = this.uniqueKeys[index];
    if (known === undefined || this.plainKeys[index] !== true) return -1;
    const s = this.buf;
    const end = start + 1 + known.length;
    if (end >= s.length || s.charCodeAt(end) !== 34) return -1;
    // compared a character at a time: startsWith of a one-byte key against the two-byte text of a
    // body with any non-Latin-1 character took a third of the scanner's time (CPU profile, 1M rows)
    for (let i = 0, at = start + 1; i < known.length; i++, at++) if (s.charCodeAt(at) !== known.charCodeAt(i)) return -1;
    return end;
  }

  /** Index of the closing quote of the string starting at `start`, or NEED_MORE. */
  private stringEnd(start: number): number {
    const s = this.buf;
    let from = start + 1;
    for (;;) {
      const quote = s.indexOf('"', from);
      if (quote < 0) return NEED_MORE;
      let backslashes = 0;
      for (let j = quote - 1; j > start && s.charCodeAt(j) === 92; j--) backslashes++;
      if (backslashes % 2 === 0) return quote;
      from = quote + 1;
    }
  }

  private nextBackslash(from: number): number {
    if (this.backslash === -2 || (this.backslash !== -1 && this.backslash < from)) {
      this.backslash = this.buf.indexOf('\\', from);
    }
    return this.backslash;
  }

  /** The value of the string from `start` (its opening quote) to `end` (its closing quote). */
  private stringValue(start: number, end: number): string {
    const backslash = this.nextBackslash(start);
    if (backslash === -1 || backslash > end) return this.buf.slice(start + 1, end);
    try {
      const text = this.buf.slice(start, end + 1);
      // bytes mode: a \u escape is a character, made bytes; the other escapes are ASCII
      if (this.bytes && text.includes('\\u')) return toBytes(JSON.parse(fromBytes(text)) as string);
      return JSON.parse(text) as string;
    } catch {
      return this.fail(`a string holds an invalid escape: ${this.buf.slice(start, Math.min(end + 1, start + 40))}`);
    }
  }

  /** The end (exclusive) of any JSON value starting at `start`, or NEED_MORE. */
  private valueEnd(start: number): number {
    const s = this.buf;
    const first = s.charCodeAt(start);
    if (first === 34) {
      const end = this.stringEnd(start);
      return end === NEED_MORE ? NEED_MORE : end + 1;
    }
    if (first !== 123 && first !== 91) {
      let i = start;
      while (i < s.length && !isWs(s.charCodeAt(i)) && s[i] !== ',' && s[i] !== '}' && s[i] !== ']') i++;
      return i < s.length ? i : NEED_MORE;
    }
    let depth = 0;
    for (let i = start; i < s.length; i++) {
      const code = s.charCodeAt(i);
      if (code === 34) {
        const end = this.stringEnd(i);
        if (end === NEED_MORE) return NEED_MORE;
        i = end;
      } else if (code === 123 || code === 91) depth++;
      else if (code === 125 || code === 93) {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    return NEED_MORE;
  }

  /** Tokenises the row starting at `start`; returns its end (exclusive) or NEED_MORE. Whitespace
   * is skipped inline rather than by a closure: a closure over `i` would move it out of a register
   * into a context object, for every character of every row (measured: 1M rows to CSV, see
   * test/bench/RESULTS.md). */
  private row(start: number): number {
    const s = this.buf;
    const n = s.length;
    const keys = this.keys;
    const kinds = this.kinds;
    const values: string[] = [];
    keys.length = 0;
    kinds.length = 0;
    let spaced = false;
    let i = start + 1;
    while (i < n && isWs(s.charCodeAt(i))) { i++; spaced = true; }
    if (i >= n) return NEED_MORE;
    if (s.charCodeAt(i) === 125) {
      this.emit(values, '{}', false, 0);
      return i + 1;
    }
    let known = true;
    let count = 0;
    for (;;) {
      if (s.charCodeAt(i) !== 34) this.fail(`data[${this.rows}]: a key was expected`);
      const knownEnd = known ? this.keyAt(i, count) : -1;
      if (knownEnd >= 0) {
        // the previous row's key at this place: `keys` is filled only once a key differs
        count++;
        i = knownEnd + 1;
      } else {
        if (known) {
          known = false;
          for (let k = 0; k < count; k++) keys.push(this.uniqueKeys[k] as string);
        }
        count++;
        const keyEnd = this.stringEnd(i);
        if (keyEnd === NEED_MORE) return NEED_MORE;
        keys.push(this.stringValue(i, keyEnd));
        i = keyEnd + 1;
      }
      while (i < n && isWs(s.charCodeAt(i))) { i++; spaced = true; }
      if (i >= n) return NEED_MORE;
      if (s.charCodeAt(i) !== 58) this.fail(`data[${this.rows}]: ":" was expected after "${this.lastKey(known, count)}"`);
      i++;
      while (i < n && isWs(s.charCodeAt(i))) { i++; spaced = true; }
      if (i >= n) return NEED_MORE;
      const code = s.charCodeAt(i);
      if (code === 34) {
        const end = this.stringEnd(i);
        if (end === NEED_MORE) return NEED_MORE;
        values.push(this.stringValue(i, end));
        kinds.push(Kind.String);
        i = end + 1;
      } else if (code === 45 || (code >= 48 && code <= 57)) {
        let j = i + 1;
        while (j < n && isNumberChar(s.charCodeAt(j))) j++;
        if (j >= n) return NEED_MORE;
        if (!isJsonNumber(s, i, j)) this.fail(`data[${this.rows}].${this.lastKey(known, count)}: ${s.slice(i, j)} is not a JSON number`);
        values.push(s.slice(i, j));
        kinds.push(Kind.Number);
        i = j;
      } else if (code === 116 || code === 102 || code === 110) {
        const word = code === 116 ? 'true' : code === 102 ? 'false' : 'null';
        if (i + word.length > n) return NEED_MORE;
        if (s.slice(i, i + word.length) !== word) this.fail(`data[${this.rows}]: unexpected ${JSON.stringify(s.slice(i, i + 8))}`);
        values.push(code === 110 ? '' : word);
        kinds.push(code === 110 ? Kind.Null : Kind.Boolean);
        i += word.length;
      } else if (code === 123 || code === 91) {
        i = this.nestedValue(i, values, known, count);
        if (i === NEED_MORE) return NEED_MORE;
      } else {
        this.fail(`data[${this.rows}]: unexpected ${JSON.stringify(s.slice(i, i + 8))}`);
      }
      while (i < n && isWs(s.charCodeAt(i))) { i++; spaced = true; }
      if (i >= n) return NEED_MORE;
      const next = s.charCodeAt(i);
      if (next === 44) {
        i++;
        while (i < n && isWs(s.charCodeAt(i))) { i++; spaced = true; }
        if (i >= n) return NEED_MORE;
        continue;
      }
      if (next === 125) {
        const raw = s.slice(start, i + 1);
        this.emit(values, spaced ? compactJson(raw) : raw, known, count);
        return i + 1;
      }
      this.fail(`data[${this.rows}]: "," or "}" was expected`);
    }
  }

  /** A nested object or array of a row, starting at `start`: handed on as compact JSON text.
   * Returns its end (exclusive) or NEED_MORE. */
  private nestedValue(start: number, values: string[], known: boolean, count: number): number {
    const end = this.valueEnd(start);
    if (end === NEED_MORE) return NEED_MORE;
    const text = compactJson(this.buf.slice(start, end));
    try {
      JSON.parse(text);
    } catch {
      this.fail(`data[${this.rows}].${this.lastKey(known, count)} is not valid JSON`);
    }
    values.push(text);
    this.kinds.push(Kind.Json);
    return end;
  }
}
