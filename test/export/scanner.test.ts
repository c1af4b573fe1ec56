// The scanner on strings that end in an escaped backslash: a Windows path such as `C:\` is sent as
// "C:\\" in the JSON text, and the quote after the two backslashes closes the string. Miscounted,
// the row would swallow its next field (or fail as truncated), wherever a chunk happens to end.

import { describe, expect, it } from 'vitest';
import { Kind, ReportScanner } from '../../src/export/scanner.js';

interface Scanned {
  keys: string[];
  values: string[];
  kinds: Kind[];
  raw: string;
}

function scan(body: string, chunkSize: number): { rows: Scanned[]; members: Record<string, unknown> } {
  const rows: Scanned[] = [];
  const scanner = new ReportScanner({
    row: (keys, values, kinds, raw) => rows.push({ keys: [...keys], values, kinds: [...kinds], raw }),
  });
  const bytes = Buffer.from(body, 'utf8');
  for (let at = 0; at < bytes.length; at += chunkSize) scanner.push(bytes.subarray(at, at + chunkSize));
  scanner.end();
  return { rows, members: scanner.members };
}

// as a server sends them: JSON.stringify writes each backslash as two
const data = [
  { path: 'C:\\', next: 'after', clicks: 1 },
  { path: '\\\\server\\share\\', next: 'x "quoted" \\', clicks: 2 },
  { path: '\\', next: '\\"', clicks: 3 },
  { path: 'D:\\my files\\', next: 'a 5" screen, C:\\ then', clicks: 4 },
];
const body = JSON.stringify({ data, summary: { note: 'C:\\', since: '2026-11-20T00:00:00+01:00' } });

describe('a string ending in an escaped backslash', () => {
  it('is read as one backslash, and the next field is read as itself', () => {
    expect(body).toContain('"path":"C:\\\\","next":"after"');
    const { rows, members } = scan(body, body.length);
    expect(rows.map((row) => row.values)).toEqual(data.map((row) => [row.path, row.next, String(row.clicks)]));
    expect(rows[0]?.keys).toEqual(['path', 'next', 'clicks']);
    expect(rows[0]?.kinds).toEqual([Kind.String, Kind.String, Kind.Number]);
    // the raw text is what JSON and NDJSON outputs write: it must parse back to the same row
    expect(rows.map((row) => JSON.parse(row.raw) as unknown)).toEqual(data);
    expect(members.summary).toEqual({ note: 'C:\\', since: '2026-11-20T00:00:00+01:00' });
  });

  it('whatever the chunk boundaries: every chunk size from 1 to 17 bytes', () => {
    const whole = scan(body, body.length);
    for (let size = 1; size <= 17; size++) {
      const chunked = scan(body, size);
      expect(chunked.rows, `chunks of ${size}`).toEqual(whole.rows);
      expect(chunked.members, `chunks of ${size}`).toEqual(whole.members);
    }
  });

  it('also with whitespace around it (a pretty-printed body)', () => {
    const pretty = JSON.stringify({ data, summary: {} }, null, 2);
    for (const size of [1, 3, 7, pretty.length]) {
      const { rows } = scan(pretty, size);
      expect(rows.map((row) => JSON.parse(row.raw) as unknown), `chunks of ${size}`).toEqual(data);
      expect(rows.map((row) => row.values[0])).toEqual(data.map((row) => row.path));
    }
  });
});
