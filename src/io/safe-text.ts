// The one sanitizer for text from the server on its way to a terminal (stderr, a table, a status
// line): control characters (C0, DEL, C1: ESC sequences, carriage returns, bells) and the
// invisible Unicode controls that reorder or hide text (bidi overrides, zero-width marks) are shown
// escaped, so a server can neither drive the terminal nor disguise what is printed. Data files and
// --json stay exact: only text shown to a person goes through here, and JSON log lines (jsonLine),
// which a person reads too, with the same characters as JSON `\u` escapes.

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escape(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with every terminal control character shown escaped (`ESC` becomes `\x1b`). */
export function safeText(text: string): string {
  return text.replace(UNSAFE, escape);
}

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]+/g;

/** `text` for one line of a machine log (JSON): runs of C0 and C1 control characters (escape
 * sequences, line breaks) become one space. JSON would escape them; a log line reads better without. */
export function withoutControls(text: string): string {
  return text.replace(CONTROLS, ' ');
}

/** `value` as one line of a machine log: JSON, with the characters safeText escapes written as
 * JSON `\u` escapes (JSON.stringify leaves bidi controls, U+2028/U+2029 and C1 controls raw), so a
 * log viewer shows no reordered text and the line still parses back to the same value. */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Like safeText, for a one-line display: runs of white space (line breaks included) become one space. */
export function safeLine(text: string): string {
  return safeText(text.replace(/[\t\n\r\v\f\u2028\u2029 ]+/g, ' '));
}
