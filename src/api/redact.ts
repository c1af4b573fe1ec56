// The secrets of one session (tokens, passwords), replaced wherever text leaves it: traces, error
// messages, body excerpts. A server may echo a secret in any encoding, so each character of a
// secret matches itself or any of its escapes: JSON (`\"`, `\n`, `\u0041`), URL (`%41`, `+`).
// A server may also nest encodings: the request body it echoes, JSON-escaped, inside a JSON error
// holds the password JSON-escaped twice (`\\\"`), or three times in the raw body. Rather than
// every nesting of every escape (a pattern that grows exponentially with the depth), the text is
// also read decoded, one layer at a time (JSON escapes, or URL escapes): a secret found in any
// reading is masked where its characters came from in the text as received.
// Redaction runs on the text as received, before anything else rewrites it (collapsing white
// space, cutting an excerpt short, escaping control characters).

const MASK = '***';

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A hex digit in either case, as a regular expression. */
function hexPattern(value: number, width: number): string {
  return value.toString(16).padStart(width, '0').split('').map((digit) => (/[a-f]/.test(digit) ? `[${digit}${digit.toUpperCase()}]` : digit)).join('');
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** The pattern of one character of a secret in every encoding a trace can hold. */
function charPattern(char: string): string {
  const forms = [escapeRegExp(char)];
  const units = [];
  for (let i = 0; i < char.length; i++) units.push(`\\\\u${hexPattern(char.charCodeAt(i), 4)}`);
  forms.push(units.join(''));
  const short = SHORT_ESCAPES[char];
  if (short) forms.push(escapeRegExp(short));
  forms.push(Array.from(Buffer.from(char, 'utf8'), (byte) => `%${hexPattern(byte, 2)}`).join(''));
  if (char === ' ') forms.push('\\+');
  return `(?:${forms.join('|')})`;
}

/** Values of these names are masked whatever they hold, escaped quotes included. */
const NAMED: [RegExp, string][] = [
  [/("(?:token|password|access_token)"\s*:\s*")(?:[^"\\]|\\.)*(")/gi, `$1${MASK}$2`],
  [/((?:^|[?&\s])(?:token|password)=)[^&\s]*/gi, `$1${MASK}`],
];

/** An excerpt is taken from at most this much of a text: masking a 100 MB body would be slow. */
const EXCERPT_SCAN_CHARS = 64 * 1024;
/** The longest a character of a secret can grow when escaped, nested a few layers deep: `"` is 15
 * backslashes and a quote four JSON layers down, `😀` is `%25F0%259F%2598%2580` (20 characters) two
 * URL layers down. A cut excerpt leaves this much per character of the longest secret out. */
const LONGEST_ESCAPE = 64;
/** At most this many readings of one text (the text as received, then each decoding of a reading
 * that changes it, breadth first): every nesting 4 layers deep is read (1 + 2 + 4 + 8 + 16 readings
 * when both decodings apply at each layer), deeper ones while the budget lasts; each reading is one
 * linear pass. */
const MAX_READINGS = 32;

/** A reading of a text: its characters, and where each came from in the text as received
 * (`from[i]`: the start of character i's escape; `from[text.length]`: the end of the text). */
interface Reading {
  text: string;
  from: number[];
}

const JSON_SHORT: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const HEX4 = /^[0-9a-fA-F]{4}$/;

/** One layer of JSON string escapes undone (`\"`, `\\`, `\u00e9`); undefined when there is none. */
function decodeJson(text: string): { text: string; at: number[] } | undefined {
  if (!text.includes('\\')) return undefined;
  let out = '';
  const at: number[] = [];
  let i = 0;
  while (i < text.length) {
    const next = text[i + 1] ?? '';
    if (text[i] === '\\' && JSON_SHORT[next] !== undefined) {
      out += JSON_SHORT[next];
      at.push(i);
      i += 2;
    } else if (text[i] === '\\' && next === 'u' && HEX4.test(text.slice(i + 2, i + 6))) {
      out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
      at.push(i);
      i += 6;
    } else {
      out += text[i];
      at.push(i);
      i += 1;
    }
  }
  at.push(text.length);
  return out === text ? undefined : { text: out, at };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const byteAt = (text: string, i: number): number | undefined => (text[i] === '%' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3)) ? parseInt(text.slice(i + 1, i + 3), 16) : undefined);

/** The character whose UTF-8 bytes are URL-escaped at `i` (`%C3%A9`), and the escape's length. */
function escapedCharAt(text: string, i: number): { char: string; length: number } | undefined {
  const lead = byteAt(text, i);
  if (lead === undefined) return undefined;
  const count = lead < 0x80 ? 1 : lead >> 5 === 0b110 ? 2 : lead >> 4 === 0b1110 ? 3 : lead >> 3 === 0b11110 ? 4 : 0;
  const bytes: number[] = [];
  for (let k = 0; k < count; k++) {
    const byte = byteAt(text, i + 3 * k);
    if (byte === undefined) return undefined;
    bytes.push(byte);
  }
  try {
    return count === 0 ? undefined : { char: UTF8.decode(Uint8Array.from(bytes)), length: 3 * count };
  } catch {
    return undefined; // not UTF-8: the `%` stays itself
  }
}

/** One layer of URL escapes undone (`%22`, `%C3%A9`, `+`); undefined when there is none. */
function decodeUrl(text: string): { text: string; at: number[] } | undefined {
  if (!/%[0-9a-fA-F]{2}|\+/.test(text)) return undefined;
  let out = '';
  const at: number[] = [];
  let i = 0;
  while (i < text.length) {
    const escaped = text[i] === '%' ? escapedCharAt(text, i) : undefined;
    if (escaped) {
      out += escaped.char;
      for (let unit = 0; unit < escaped.char.length; unit++) at.push(i);
      i += escaped.length;
    } else {
      out += text[i] === '+' ? ' ' : text[i];
      at.push(i);
      i += 1;
    }
  }
  at.push(text.length);
  return out === text ? undefined : { text: out, at };
}

/** The text as received, then every decoding of a reading (JSON or URL, in any order), breadth
 * first, each different text once, at most MAX_READINGS. */
function readings(text: string): Reading[] {
  const all: Reading[] = [{ text, from: Array.from({ length: text.length + 1 }, (_, i) => i) }];
  const seen = new Set([text]);
  for (let n = 0; n < all.length && all.length < MAX_READINGS; n++) {
    const reading = all[n] as Reading;
    for (const decode of [decodeJson, decodeUrl]) {
      const decoded = decode(reading.text);
      if (!decoded || seen.has(decoded.text) || all.length >= MAX_READINGS) continue;
      seen.add(decoded.text);
      all.push({ text: decoded.text, from: decoded.at.map((i) => reading.from[i] as number) });
    }
  }
  return all;
}

export class Secrets {
  private readonly known = new Set<string>();
  private pattern?: RegExp;
  private longest = 0;

  /** Any non-empty secret counts, however short: a short token is still a token. */
  add(secret: string | undefined): void {
    if (!secret || this.known.has(secret)) return;
    this.known.add(secret);
    this.longest = Math.max(this.longest, secret.length);
    this.pattern = undefined;
  }

  /** A one-line excerpt of at most `max` characters. `cut`: the text is itself the start of a
   * longer one. Where a text is cut, a secret may be cut with it, and a part of a secret is not
   * recognised: so the text is masked before it is cut short or its white space collapsed, and what
   * could hold a cut secret (the last characters before a cut) is never shown. */
  excerpt(text: string, max: number, cut = false): string {
    const scanned = cut || text.length > EXCERPT_SCAN_CHARS;
    let masked = this.redact(text.length > EXCERPT_SCAN_CHARS ? text.slice(0, EXCERPT_SCAN_CHARS) : text);
    if (scanned) masked = masked.slice(0, Math.max(0, masked.length - this.longest * LONGEST_ESCAPE));
    const flat = masked.replace(/\s+/g, ' ').trim();
    return flat.length > max || scanned ? `${flat.slice(0, max)}…` : flat;
  }

  redact(text: string): string {
    let out = text;
    if (this.known.size > 0) {
      // longest first, so a secret holding another is masked whole
      this.pattern ??= new RegExp(
        [...this.known].sort((a, b) => b.length - a.length).map((secret) => Array.from(secret, charPattern).join('')).join('|'),
        'g',
      );
      out = this.mask(out, this.pattern);
    }
    for (const [pattern, replacement] of NAMED) out = out.replace(pattern, replacement);
    return out;
  }

  /** `text` with every stretch that holds a secret, in any reading of it, replaced by the mask. */
  private mask(text: string, pattern: RegExp): string {
    const spans: [number, number][] = [];
    for (const reading of readings(text)) {
      for (const match of reading.text.matchAll(pattern)) {
        const start = match.index;
        spans.push([reading.from[start] as number, reading.from[start + match[0].length] as number]);
      }
    }
    if (spans.length === 0) return text;
    spans.sort((a, b) => a[0] - b[0]);
    let out = '';
    let at = 0;
    for (const [start, end] of spans) {
      if (end <= at) continue;
      if (start >= at) out += `${text.slice(at, start)}${MASK}`;
      at = end;
    }
    return out + text.slice(at);
  }
}
