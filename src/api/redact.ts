// The secrets of one session (tokens, passwords), replaced wherever text leaves it: traces, error
// messages, body excerpts. A server may echo a secret in any encoding, so each character of a
// secret matches itself or any of its escapes: JSON (`\"`, `\n`, `\u0041`), URL (`%41`, `+`).
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
/** The longest a character of a secret can grow when escaped (`%F0%9F%98%80`, `\ud83d\ude00`). */
const LONGEST_ESCAPE = 12;

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
      out = out.replace(this.pattern, MASK);
    }
    for (const [pattern, replacement] of NAMED) out = out.replace(pattern, replacement);
    return out;
  }
}
