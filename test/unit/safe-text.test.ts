import { describe, expect, it } from 'vitest';
import { jsonLine, safeLine, safeText } from '../../src/io/safe-text.js';
import { shellCommand } from '../../src/io/shell.js';

describe('safeText: the one sanitizer for server text on its way to a terminal', () => {
  it('escapes C0, DEL and C1 controls, so no escape sequence can act', () => {
    expect(safeText('a\u001b]0;title\u0007b\u001b[2Jc\rd\u007fe\u009bf')).toBe('a\\x1b]0;title\\x07b\\x1b[2Jc\\rd\\x7fe\\x9bf');
  });
  it('escapes the invisible controls that reorder or hide text', () => {
    expect(safeText('invoice\u202egpj.exe\u200b\u2066x\ufeff')).toBe('invoice\\u202egpj.exe\\u200b\\u2066x\\ufeff');
  });
  it('leaves printable text alone: accents, CJK, emoji', () => {
    const text = 'Été 東京 🎉 e\u0301cole — 50 %';
    expect(safeText(text)).toBe(text);
  });
  it('safeLine makes one line: white space runs become one space', () => {
    expect(safeLine('a\r\n\tb  c\u2028d')).toBe('a b c d');
  });
});

describe('jsonLine: one line of a machine log (issue 20, item 8)', () => {
  it('writes every character safeText escapes as a JSON \\u escape, and parses back to the same value', () => {
    const invisible = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\u061c\u2028\u2029\u2060\u2064\ufeff\u007f\u0085\u009b';
    const value = { message: `invoice${invisible}gpj.exe \u001b[2J\n`, nested: [`x${invisible}`] };
    const line = jsonLine(value);
    // eslint-disable-next-line no-control-regex
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/);
    expect(line).toContain('invoice\\u202a\\u202b');
    expect(JSON.parse(line)).toEqual(value);
    // what JSON.stringify writes otherwise is left as it is: printable text stays readable
    const printable = { text: 'Été 東京 🎉 e\u0301cole — "50 %" \\ /' };
    expect(jsonLine(printable)).toBe(JSON.stringify(printable));
  });
});

describe('shellCommand', () => {
  it('quotes a word only when the shell would read it otherwise', () => {
    expect(shellCommand(['reporting', 'login', '--profile', "o'neil ops"])).toBe("reporting login --profile 'o'\\''neil ops'");
    expect(shellCommand(['x', '~', '*.csv', '$HOME', 'a=b', '-o'])).toBe("x '~' '*.csv' '$HOME' a=b -o");
  });
});
