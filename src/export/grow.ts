// When later rows bring fields the first rows did not have, a CSV written to a file is completed
// at the end: the header gets every field, and earlier rows get empty cells for the new ones. The
// input is our own csv-stringify output, so a quote toggles "inside a field" and a line feed
// outside quotes ends a record.

import { StringDecoder } from 'node:string_decoder';
import type { HeaderGrowth } from './row-writer.js';

export async function* padRecords(
  input: AsyncIterable<Buffer>,
  growth: HeaderGrowth,
  headerLine: string,
  delimiter: string,
): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  const width = growth.header.length;
  const columnsOf = (row: number) => growth.epochs.find((epoch) => row < epoch.untilRow)?.columns ?? width;
  let record = -1; // the header line
  let inQuotes = false;
  let first = true;
  // a CR that ends a chunk may be the first half of a CRLF terminator: it waits for the next chunk
  let carriedCr = '';
  for await (const chunk of input) {
    let text = carriedCr + decoder.write(chunk);
    carriedCr = '';
    if (text.endsWith('\r')) {
      carriedCr = '\r';
      text = text.slice(0, -1);
    }
    let out = '';
    if (first && text) {
      // the first decoded text, not the first chunk: a chunk may end inside the BOM
      first = false;
      if (text.startsWith('\uFEFF')) {
        out += '\uFEFF';
        text = text.slice(1);
      }
    }
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === 34) inQuotes = !inQuotes;
      else if (code === 10 && !inQuotes) {
        if (record === -1) {
          out += headerLine; // replaces the old header, terminator included
        } else {
          const end = i > 0 && text.charCodeAt(i - 1) === 13 ? i - 1 : i;
          out += text.slice(from, end) + delimiter.repeat(width - columnsOf(record)) + text.slice(end, i + 1);
        }
        record++;
        from = i + 1;
      }
    }
    if (record === -1) {
      // still inside the header line: dropped when it ends (the BOM, if just read, stays)
      if (out) yield out;
      continue;
    }
    out += text.slice(from);
    yield out;
  }
  if (carriedCr) yield carriedCr;
}
