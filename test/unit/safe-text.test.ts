import { describe, expect, it } from 'vitest';
import { safeLine, safeText } from '../../src/io/safe-text.js';
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

describe('shellCommand', () => {
  it('quotes a word only when the shell would read it otherwise', () => {
    expect(shellCommand(['reporting', 'login', '--profile', "o'neil ops"])).toBe("reporting login --profile 'o'\\''neil ops'");
    expect(shellCommand(['x', '~', '*.csv', '$HOME', 'a=b', '-o'])).toBe("x '~' '*.csv' '$HOME' a=b -o");
  });
});
