import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Kind, ReportFormatError, ReportScanner, compactJson, isJsonNumber } from '../../src/export/scanner.js';
import { CsvWriter, NdjsonWriter, NewFieldError, type CsvOptions } from '../../src/export/writers.js';
import { padRecords } from '../../src/export/grow.js';

interface Collected {
  keys: string[];
  values: string[];
  kinds: Kind[];
  raw: string;
}

function scan(chunks: (string | Buffer)[]) {
  const rows: Collected[] = [];
  const scanner = new ReportScanner({
    row: (keys, values, kinds, raw) => rows.push({ keys: [...keys], values, kinds: [...kinds], raw }),
  });
  for (const chunk of chunks) scanner.push(chunk);
  scanner.end();
  return { rows, members: scanner.members };
}

/** Every way of cutting the body in two, at every byte (so inside every UTF-8 sequence too). */
function everySplit(body: string): Buffer[][] {
  const bytes = Buffer.from(body);
  const splits: Buffer[][] = [];
  for (let i = 0; i <= bytes.length; i++) splits.push([bytes.subarray(0, i), bytes.subarray(i)]);
  return splits;
}

const HOSTILE = `{"data":[{"name":"a \\"quoted\\" {brace} [bracket] \\\\ back","emoji":"Météo ☀️ 😀","line":"one\\ntwo","n":-0.5e-7,"big":12345678901234567890,"keep":1.10,"t":true,"f":false,"z":null,"nested":{"a":[1,{"b":"}"}]},"esc":"\\u00e9\\ud83d\\ude00"}],"summary":{"since":"2026-11-01T00:00:00+01:00","until":"2026-11-01T23:59:59+01:00","breakdowns":["DAILY"],"timezone":"europe/paris"}}`;

describe('the report scanner', () => {
  it('reads hostile strings, every number as sent, literals, nested values, at every possible chunk boundary', () => {
    const whole = scan([HOSTILE]);
    expect(whole.rows).toHaveLength(1);
    const row = whole.rows[0]!;
    const byKey = Object.fromEntries(row.keys.map((key, i) => [key, row.values[i]]));
    expect(byKey).toEqual({
      name: 'a "quoted" {brace} [bracket] \\ back',
      emoji: 'Météo ☀️ 😀',
      line: 'one\ntwo',
      n: '-0.5e-7',
      big: '12345678901234567890',
      keep: '1.10',
      t: 'true',
      f: 'false',
      z: '',
      nested: '{"a":[1,{"b":"}"}]}',
      esc: 'é😀',
    });
    expect(row.kinds).toEqual([Kind.String, Kind.String, Kind.String, Kind.Number, Kind.Number, Kind.Number, Kind.Boolean, Kind.Boolean, Kind.Null, Kind.Json, Kind.String]);
    expect(JSON.parse(row.raw)).toEqual(JSON.parse(HOSTILE).data[0]);
    expect(whole.members.summary).toEqual(JSON.parse(HOSTILE).summary);
    for (const chunks of everySplit(HOSTILE)) expect(scan(chunks)).toEqual(whole);
  });

  it('reads any whitespace layout and summary before data; NDJSON rows come out compact', () => {
    const pretty = JSON.stringify({ summary: { since: 'a', until: 'b', breakdowns: [] }, other: [1, 2], data: [{ a: 1, b: ' x y ' }, { a: 2, b: null }] }, null, 4).replace(/\n/g, '\r\n\t');
    const { rows, members } = scan([pretty]);
    expect(rows.map((row) => row.raw)).toEqual(['{"a":1,"b":" x y "}', '{"a":2,"b":null}']);
    expect(members).toEqual({ summary: { since: 'a', until: 'b', breakdowns: [] }, other: [1, 2] });
    expect(scan(['{"data":[]}']).rows).toEqual([]);
    expect(scan(['\uFEFF{"data":[{}]}']).rows[0]!.keys).toEqual([]);
  });

  it.each([
    ['a truncated body', '{"data":[{"a":1},{"a":', /ended early \(after 1 rows\): it is truncated/],
    ['a body cut right after a row', '{"data":[{"a":1}', /truncated/],
    ['an empty body', '', /empty/],
    ['no data', '{"summary":{}}', /no "data" array/],
    ['data that is not an array', '{"data":{"rows":0}}', /"data" is not an array/],
    ['a row that is not an object', '{"data":[1]}', /data\[0\] is not an object/],
    ['a bad number', '{"data":[{"a":01}]}', /01 is not a JSON number/],
    ['a bad literal', '{"data":[{"a":nul}]}', /unexpected/],
    ['text after the end', '{"data":[]} x', /text after its end/],
    ['an HTML page', '<html>502</html>', /not a JSON object/],
    ['a bad escape', '{"data":[{"a":"\\x"}]}', /invalid escape/],
  ])('refuses %s', (_label, body, message) => {
    expect(() => scan([body])).toThrow(ReportFormatError);
    expect(() => scan([body])).toThrow(message);
  });

  it('compacts JSON without touching strings', () => {
    expect(compactJson('{ "a" : [ 1 , "x y" ] }')).toBe('{"a":[1,"x y"]}');
  });
});

function toCsv(body: string, options: Partial<CsvOptions> = {}, canGrow = true): string {
  const writer = new CsvWriter({ delimiter: ',', bom: false, excel: false, ...options }, canGrow);
  const scanner = new ReportScanner(writer);
  scanner.push(body);
  scanner.end();
  return writer.finish() as string;
}

describe('the CSV writer', () => {
  it('writes RFC 4180: header, quoting of delimiters, quotes and line breaks, null as empty, numbers as sent', () => {
    const csv = toCsv(HOSTILE);
    const [header, row] = parse(csv, { relax_column_count: false }) as string[][];
    expect(header).toEqual(['name', 'emoji', 'line', 'n', 'big', 'keep', 't', 'f', 'z', 'nested', 'esc']);
    expect(row).toEqual(['a "quoted" {brace} [bracket] \\ back', 'Météo ☀️ 😀', 'one\ntwo', '-0.5e-7', '12345678901234567890', '1.10', 'true', 'false', '', '{"a":[1,{"b":"}"}]}', 'é😀']);
    expect(csv).toContain('"a ""quoted"" {brace} [bracket] \\ back"');
  });

  it('--columns selects and orders; --delimiter and --bom adjust', () => {
    const body = '{"data":[{"a":"1,5","b":2,"c":"x"},{"a":"y","c":"z"}]}';
    expect(toCsv(body, { columns: ['c', 'a', 'missing'] })).toBe('c,a,missing\nx,"1,5",\nz,y,\n');
    expect(toCsv(body, { delimiter: ';', bom: true })).toBe('\uFEFFa;b;c\n1,5;2;x\ny;;z\n');
  });

  it('--excel: BOM, ";", CRLF, decimal comma, formulas made inert', () => {
    const body = '{"data":[{"f":"=HYPERLINK(\\"x\\")","g":"+1","h":"-2","i":"@a","n":-1.25,"m":1e-7,"s":"plain"}]}';
    expect(toCsv(body, { excel: true })).toBe('\uFEFFf;g;h;i;n;m;s\r\n"\'=HYPERLINK(""x"")";\'+1;\'-2;\'@a;-1,25;1e-7;plain\r\n');
  });

  it('never drops a field that appears in a later row', async () => {
    const body = '{"data":[{"a":1,"b":2},{"a":3,"b":4,"c":"new, field"},{"d":5,"a":6}]}';
    const writer = new CsvWriter({ delimiter: ',', bom: false, excel: false }, true);
    const scanner = new ReportScanner(writer);
    scanner.push(body);
    scanner.end();
    const written = writer.finish();
    const growth = writer.growth()!;
    expect(growth.header).toEqual(['a', 'b', 'c', 'd']);
    async function* input() {
      yield Buffer.from(written.slice(0, 7));
      yield Buffer.from(written.slice(7));
    }
    let out = '';
    for await (const text of padRecords(input(), growth, writer.headerLine(growth.header), ',')) out += text;
    expect(parse(out)).toEqual([['a', 'b', 'c', 'd'], ['1', '2', '', ''], ['3', '4', 'new, field', ''], ['6', '', '', '5']]);
    // where the header cannot be rewritten (stdout), it is an error, not a silent drop
    expect(() => toCsv(body, {}, false)).toThrow(NewFieldError);
  });
});

describe('the NDJSON writer', () => {
  it('writes one row per line, exactly as sent', () => {
    const writer = new NdjsonWriter();
    const scanner = new ReportScanner(writer);
    scanner.push('{"data":[{"a":1.10,"b":"x\\ny"},\n {"a": 2}]}');
    scanner.end();
    expect(writer.finish()).toBe('{"a":1.10,"b":"x\\ny"}\n{"a":2}\n');
  });
});

describe('hostile row shapes', () => {
  /** Feeds a body in 64 KiB chunks, as a socket would, and times it. */
  function timedScan(body: string, rowCap?: number) {
    let rows = 0;
    const scanner = new ReportScanner({ row: () => { rows++; } }, rowCap);
    const bytes = Buffer.from(body);
    // CPU time of this process, not wall time: other processes on a loaded machine do not count
    const started = process.cpuUsage();
    for (let i = 0; i < bytes.length; i += 65_536) scanner.push(bytes.subarray(i, i + 65_536));
    scanner.end();
    const used = process.cpuUsage(started);
    return { rows, ms: (used.user + used.system) / 1000 };
  }

  it('read one huge row, many keys or one long string, in time linear in its bytes', () => {
    const manyKeys = (n: number) => `{"data":[{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}]}`;
    const longString = (n: number) => `{"data":[{"s":"${'x\\"'.repeat(n)}"}]}`;
    for (const make of [manyKeys, longString]) {
      const best = (n: number, runs: number) => Math.min(...Array.from({ length: runs }, () => timedScan(make(n)).ms));
      const small = { ms: best(50_000, 3) };
      const large = { ms: best(400_000, 2), rows: timedScan(make(400_000)).rows };
      expect(large.rows).toBe(1);
      // 8x the bytes: quadratic would be 64x; allow generous noise for a shared machine
      expect(large.ms).toBeLessThan(Math.max(small.ms, 20) * 24);
    }
  });

  it('refuse a single row larger than the cap, as a format error', () => {
    const body = `{"data":[{"a":1},{"s":"${'y'.repeat(300_000)}"}]}`;
    expect(() => timedScan(body, 100_000)).toThrow(/larger than .*MiB.*after 1 rows/);
    expect(() => timedScan(body, 100_000)).toThrow(ReportFormatError);
    expect(timedScan(body, 400_000).rows).toBe(2);
  });

  it('keep one column per key, with the last value, as JSON.parse does', () => {
    const body = '{"data":[{"a":1,"b":"x","a":"last"},{"a":2,"b":"y"},{"b":"z","b":null}]}';
    expect(toCsv(body).trim().split('\n')).toEqual(['a,b', 'last,x', '2,y', ',']);
    const writer = new NdjsonWriter();
    const scanner = new ReportScanner(writer);
    scanner.push(body);
    scanner.end();
    const lines = String(writer.finish()).trim().split('\n');
    expect(lines.map((line) => JSON.parse(line))).toEqual(JSON.parse(body).data);
    expect(lines[0]).toBe('{"a":"last","b":"x"}');
  });
});

describe('the scanner, rows whose keys change', () => {
  it('hands on the right keys as they come and go, and never changes an array it handed on', () => {
    const bodies = [
      { a: 1, b: 'x', c: null }, { a: 2, b: 'y', c: 3 }, { a: 3, b: 'z' }, { a: 4, b: 'w', c: 5, d: 'new' },
      { b: 'first', a: 5 }, {}, { a: 6, b: 'v', c: 7 }, { a: 7, b: 'u', c: 8 }, { 'a"q': 1, b: 2 }, { 'a"q': 3, b: 4 },
    ];
    const text = `{"data":[${bodies.map((row) => JSON.stringify(row)).join(',')},{"a":8,"a":9,"b":"dup"},{"a":10,"b":"t","c":11}]}`;
    const handed: { keys: string[]; copy: string[]; values: string[] }[] = [];
    const scanner = new ReportScanner({ row: (keys, values) => handed.push({ keys, copy: [...keys], values }) });
    // a chunk boundary inside almost every row, as from the network
    for (let at = 0; at < text.length; at += 37) scanner.push(text.slice(at, at + 37));
    scanner.end();
    const expected = [...bodies, { a: 9, b: 'dup' }, { a: 10, b: 't', c: 11 }];
    expect(handed.map((row) => row.copy)).toEqual(expected.map((row) => Object.keys(row)));
    expect(handed.map((row) => row.values)).toEqual(expected.map((row) => Object.values(row).map((v) => (v === null ? '' : String(v)))));
    // what a handler kept is what it was given
    for (const row of handed) expect(row.keys).toEqual(row.copy);
    // rows with the previous row's keys bring the same array (compared by identity)
    expect(handed[1]!.keys).toBe(handed[0]!.keys);
    expect(handed[7]!.keys).toBe(handed[6]!.keys);
    expect(handed[9]!.keys).toBe(handed[8]!.keys);
    expect(handed[2]!.keys).not.toBe(handed[1]!.keys);
  });

  it('names the field of a bad number, whether or not its key was the previous row\'s', () => {
    const bad = (second: string) => () => scan([`{"data":[{"a":1,"b":2},${second}]}`]);
    expect(bad('{"a":1,"b":01}')).toThrow('data[1].b: 01 is not a JSON number');
    expect(bad('{"x":1,"b":1.}')).toThrow('data[1].b: 1. is not a JSON number');
  });
});

describe('isJsonNumber', () => {
  const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
  it('accepts exactly what the JSON grammar calls a number', () => {
    const text = fc.array(fc.constantFrom('-', '+', '0', '1', '9', '.', 'e', 'E'), { maxLength: 9 }).map((chars) => chars.join(''));
    fc.assert(fc.property(text, (s) => {
      expect(isJsonNumber(`x${s}y`, 1, 1 + s.length)).toBe(NUMBER.test(s));
    }), { numRuns: 20000 });
    for (const ok of ['0', '-0', '1.10', '-0.5e-7', '12345678901234567890', '1E+2']) expect(isJsonNumber(ok, 0, ok.length)).toBe(true);
    for (const no of ['', '-', '01', '1.', '.5', '1e', '1e+', '+1', '--1', '1.2.3']) expect(isJsonNumber(no, 0, no.length)).toBe(false);
  });
});
