// Text cells of an XLSX file hold what a server sent, markup and all: `<`, `&`, quotes, control
// characters (which XML 1.0 cannot hold at all), and text that a spreadsheet would take for a
// formula. The file must stay valid XML, and a reader this project did not write (SheetJS) must
// read each cell back as the same text, as text: `=HYPERLINK(...)` stays a string, never a formula.

import { spawnSync } from 'node:child_process';
import { unzipSync, strFromU8 } from 'fflate';
import XLSX from 'xlsx';
import { describe, expect, it } from 'vitest';
import { ReportScanner } from '../../src/export/scanner.js';
import { XlsxRowWriter } from '../../src/export/xlsx.js';
import { PYTHON } from '../helpers/python.js';

const texts = [
  'a < b > c',
  'Fish & Chips &amp; &#65; &lt;',
  'say "hi" and \'bye\'',
  '</t></is></c><c><v>1</v></c>',
  ']]> <![CDATA[x]]>',
  'bell \u0007, nul \u0000, escape \u001b, unit separator \u001f',
  'tab\there, line\nbreak, crlf\r\nend, cr\ronly',
  'form feed \u000c vertical tab \u000b',
  '=1+1',
  '=HYPERLINK("http://127.0.0.1/x","click")',
  '+33 6 12 34 56 78',
  '-2+3',
  '@SUM(A1)',
  '_x0041_ is not A',
  'Météo ☀️ 😀',
  '  leading and trailing spaces  ',
];

async function xlsxOf(values: string[]): Promise<Buffer> {
  const writer = new XlsxRowWriter();
  const scanner = new ReportScanner(writer);
  const body = JSON.stringify({ data: values.map((text, i) => ({ city: text, clicks: i })), summary: {} });
  const out: Buffer[] = [];
  for (let at = 0; at < body.length; at += 64) {
    scanner.push(body.slice(at, at + 64));
    out.push(Buffer.from(await writer.take()));
  }
  scanner.end();
  out.push(Buffer.from(await writer.finish()));
  return Buffer.concat(out);
}

describe('XLSX text cells', () => {
  it('read back by SheetJS as the same text, as strings, never formulas', async () => {
    const book = XLSX.read(await xlsxOf(texts), { type: 'buffer', cellFormula: true });
    const sheet = book.Sheets.report as XLSX.WorkSheet;
    const table = XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, raw: true });
    expect(table[0]).toEqual(['city', 'clicks']);
    expect(table.slice(1).map((row) => row[0])).toEqual(texts);
    expect(table.slice(1).map((row) => row[1])).toEqual(texts.map((_, i) => i));
    texts.forEach((_, i) => {
      const cell = sheet[`A${i + 2}`] as XLSX.CellObject;
      expect(cell.t, texts[i]).toBe('s');
      expect(cell.f, texts[i]).toBeUndefined();
    });
  });

  it.skipIf(!PYTHON)('every part is well-formed XML 1.0, and a strict parser reads the same texts (Python\'s expat)', async () => {
    const parts = unzipSync(new Uint8Array(await xlsxOf(texts)));
    const names = Object.keys(parts).filter((name) => name.endsWith('.xml') || name.endsWith('.rels'));
    expect(names).toContain('xl/worksheets/sheet1.xml');
    for (const name of names) {
      const parsed = spawnSync(PYTHON as string, ['-c', EXPAT_TEXTS], { input: Buffer.from(parts[name] as Uint8Array), encoding: 'utf8' });
      expect(parsed.stderr, name).toBe('');
      expect(parsed.status, name).toBe(0);
      if (name !== 'xl/worksheets/sheet1.xml') continue;
      // what Excel sees: the XML parser's text (a raw CR would have become LF), then `_xHHHH_`
      const cells = (JSON.parse(parsed.stdout) as string[]).map(unescapeOoxml);
      expect(cells).toEqual(['city', 'clicks', ...texts]);
    }
    // no raw control character, which XML 1.0 forbids even as a character reference
    const sheet = strFromU8(parts['xl/worksheets/sheet1.xml'] as Uint8Array);
    expect(sheet).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
  });
});

/** Prints, as JSON, the text of every <t> element (inline strings) of the XML on stdin. */
const EXPAT_TEXTS = [
  'import sys, json, xml.dom.minidom',
  'doc = xml.dom.minidom.parseString(sys.stdin.buffer.read())',
  'texts = ["".join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE) for t in doc.getElementsByTagName("t")]',
  'print(json.dumps(texts))',
].join('\n');

/** OOXML's escape for characters XML cannot hold: `_xHHHH_` (and `_x005F_` for a literal `_`). */
const unescapeOoxml = (text: string) => text.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
