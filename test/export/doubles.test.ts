// Numbers a typed format cannot hold (issue 20, item 4): an amount beyond a double's range would be
// Infinity (a workbook Excel and openpyxl refuse, `inf` in Parquet), one below it 0. Both are an
// error naming the field and the row, and nothing is written; CSV keeps the text as sent.

import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { writeReport } from '../../src/export/export.js';
import type { Sink } from '../../src/export/sink.js';
import { UnexpectedResponseError } from '../../src/errors.js';

function memorySink(): Sink & { text: () => string; committed: boolean } {
  const chunks: Buffer[] = [];
  return {
    committed: false,
    write: async (chunk) => { chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)); },
    commit: async function commit(this: { committed: boolean }) { this.committed = true; },
    abort: async () => undefined,
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

const body = (value: string) => Readable.from([Buffer.from(`{"data":[{"country":"FR","revenueEuro":1.5},{"country":"DE","revenueEuro":${value}}],"summary":null}`)]);
const CSV = { delimiter: ',', bom: false, excel: false };

describe('amounts a double cannot hold', () => {
  it.each([
    ['parquet', '1e400', /data\[1\]\.revenueEuro is "1e400", out of the range of a double/],
    ['xlsx', '1e400', /data\[1\]\.revenueEuro is "1e400", out of the range of a double/],
    ['parquet', '-1e400', /out of the range of a double/],
    ['parquet', '5e-400', /data\[1\]\.revenueEuro is "5e-400", too small for a double/],
    ['xlsx', '5e-400', /too small for a double/],
  ] as const)('%s with %s: exit 5 naming the field and the row', async (format, value, message) => {
    const sink = memorySink();
    const error = await writeReport(body(value), sink, format, CSV).then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect((error as UnexpectedResponseError).exitCode).toBe(5);
    expect((error as Error).message).toMatch(message);
  });

  it('CSV keeps the text as sent; a double-sized value, zero and a subnormal pass in typed formats', async () => {
    const csv = memorySink();
    await writeReport(body('1e400'), csv, 'csv', CSV);
    expect(csv.text()).toBe('country,revenueEuro\nFR,1.5\nDE,1e400\n');
    for (const value of ['1.7976931348623157e308', '0', '0.0e10', '-0', '5e-320']) {
      await expect(writeReport(body(value), memorySink(), 'parquet', CSV)).resolves.toMatchObject({ rows: 2 });
    }
  });
});
