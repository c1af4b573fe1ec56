// What a hostile server sends cannot write outside the -o folder (report IDs), cannot run commands
// when a printed command is pasted (shell quoting), and cannot drive the terminal (escape sequences).

import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { expandTemplate } from '../../src/export/output.js';
import { REPORT_ID_MAX } from '../../src/api/schemas.js';
import { json, startHostile, type Hostile } from './server.js';
import { changes, expectNoControl, makeWorld } from './world.js';

const RUN = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--poll-interval', '10ms', '--retries', '0'];
let server: Hostile;
beforeEach(async () => { server = await startHostile(); });
afterEach(async () => { await server.close(); });

const submits = (id: unknown) => server.on('buyer', (_req, res) => json(res, 200, { response: { status: 'OK', report_id: id } }));

describe('11.1 report IDs of a safe shape only', () => {
  const hostile = ['..', '.', '../../escape', 'a/b', 'a\\b', '', ' x', 'x y', '-rf', '{side}', 'x\u001b]0;owned\u0007', 'é', 'a'.repeat(REPORT_ID_MAX + 1)];
  it.each(hostile)('%j from the server: exit 5, nothing written anywhere, no escape byte on stderr', async (id) => {
    const world = makeWorld(server);
    submits(id);
    const before = world.snapshot();
    const result = await world.run([...RUN, '-o', 'reports/{reportId}/data.csv']);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/^error: \/buyer-reporting answered something unexpected: response\.report_id/);
    expectNoControl(result.stderr);
    expect(changes(before, world.snapshot())).toEqual([]);
    expect(server.received.filter((r) => r.route === 'download')).toEqual([]);
  });

  it('a status answer naming a hostile report_id is unexpected too (exit 5)', async () => {
    const world = makeWorld(server);
    server.on('status', (_req, res) => json(res, 200, { response: { status: 'ready', message: 'ready', report_id: '../..' } }));
    const before = world.snapshot();
    const result = await world.run([...RUN, '-o', 'reports/{reportId}/data.csv']);
    expect(result.code).toBe(5);
    // nothing written but the journal's note of the report submitted (a retry resumes it): the
    // submitted ID, not the hostile one
    const changed = changes(before, world.snapshot());
    expect(changed.filter((path) => !path.startsWith('config'))).toEqual([]);
    const notes = changed.filter((path) => path.endsWith('.json'));
    expect(notes).toHaveLength(1);
    expect(readFileSync(join(world.root, notes[0] as string), 'utf8')).not.toContain('..');
  });

  it('IDs of the safe shape are written inside the folder the template names: numbers, dots, 128 characters', async () => {
    for (const id of [87012, '...', 'a.b', `x${'9'.repeat(REPORT_ID_MAX - 1)}`, "it's$(x)"]) {
      const world = makeWorld(server);
      submits(id);
      const before = world.snapshot();
      const result = await world.run([...RUN, '-o', 'reports/{reportId}/data.csv', '-q']);
      expect(result.code, result.stderr).toBe(0);
      expect(changes(before, world.snapshot())).toEqual(['work/reports', `work/reports/${id}`, `work/reports/${id}/data.csv`]);
    }
  });

  it('an ID typed by the user that would leave the folder is a usage error before any request (exit 2)', async () => {
    const world = makeWorld(server);
    const before = world.snapshot();
    for (const id of ['..', 'a/b', 'x\u001b[2J']) {
      const result = await world.run(['download', id, '-o', 'reports/{reportId}.csv']);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/is not a report ID/);
      expectNoControl(result.stderr);
    }
    expect(changes(before, world.snapshot())).toEqual([]);
    expect(server.received).toEqual([]);
  });

  it('no placeholder value can make a segment `.` or `..`, whatever the template', () => {
    expect(() => expandTemplate('out/{reportId}{reportId}/x.csv', { reportId: '.' })).toThrow(/outside the folder/);
    expect(() => expandTemplate('{reportId}/x.csv', { reportId: '..' })).toThrow(/outside the folder/);
    expect(() => expandTemplate('out/{reportId}/x.csv', { reportId: '' })).toThrow(/outside the folder/);
    expect(expandTemplate('out/{reportId}.csv', { reportId: '../../x' })).toBe('out/.._.._x.csv');
    expect(expandTemplate('../up/{side}.csv', { side: 'buyer' })).toBe('../up/buyer.csv');
  });

  it('fills placeholders as the regular expression it replaced did, on random templates and hostile values', async () => {
    const { default: fc } = await import('fast-check');
    // the fill before it was scanned by hand (src/export/output.ts), applied to each segment holding a `{`
    // eslint-disable-next-line no-control-regex
    const byRegex = (text: string, values: Record<string, string>) => text.replace(/\{([^}]*)\}/g, (_, name: string) => (values[name] ?? '').replace(/[/\\\u0000-\u001f\u007f]/g, '_'));
    const names = ['since', 'until', 'side', 'job', 'reportId', 'nope'];
    const piece = fc.oneof(fc.constantFrom('{', '}', '/', '\\', '.', 'a', '-', ...names.map((n) => `{${n}}`)), fc.string({ maxLength: 3 }));
    const value = fc.string({ unit: fc.oneof(fc.constantFrom('/', '\\', '\u0000', '\u001f', '\u007f', '.', '{', '}'), fc.string({ minLength: 1, maxLength: 1 })), maxLength: 6 });
    fc.assert(fc.property(fc.array(piece, { maxLength: 12 }), fc.dictionary(fc.constantFrom(...names.slice(0, 5)), value), (parts, values) => {
      const template = parts.join('');
      const segments = template.split(/[/\\]/);
      const filled = segments.map((segment) => (segment.includes('{') ? byRegex(segment, values) : segment));
      const refused = segments.some((segment, i) => segment.includes('{') && ['', '.', '..'].includes(filled[i]!));
      const reference = filled.map((segment, i) => segment + (i < segments.length - 1 ? template.match(/[/\\]/g)![i]! : '')).join('');
      if (refused) expect(() => expandTemplate(template, values)).toThrow(/outside the folder/);
      else expect(expandTemplate(template, values)).toBe(reference);
    }), { numRuns: 3000, seed: 32 });
  });
});

/** The shells on this machine that a user may paste into. */
const SHELLS = ['sh', 'dash', 'bash', 'zsh'].filter((shell) => spawnSync(shell, ['-c', 'true']).status === 0);

/**
 * Runs a printed command through each shell, with `reporting` a stub that records its arguments:
 * the arguments must be exactly the words meant, and nothing else may have run.
 */
function pasteInto(command: string, dir: string): string[][] {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'reporting'), '#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$ARGS_FILE"\n');
  chmodSync(join(bin, 'reporting'), 0o755);
  return SHELLS.map((shell) => {
    const argsFile = join(dir, `args-${shell}`);
    const ran = spawnSync(shell, ['-c', command], { cwd: dir, env: { PATH: `${bin}:${process.env.PATH}`, ARGS_FILE: argsFile, HOME: dir } });
    expect(ran.status, `${shell}: ${ran.stderr}`).toBe(0);
    return readFileSync(argsFile, 'utf8').split('\0').slice(0, -1);
  });
}

describe('11.2 printed commands are quoted for POSIX shells', () => {
  const ID = "x';touch$IFS'PWNED1';$(touch$IFS'PWNED2')`touch$IFS'PWNED3'`#";
  const PATH = "out it's $(touch PWNED4) `touch PWNED5`;touch PWNED6 #.csv";

  it('"pick it up later with": pasting it runs `reporting download ID --wait --columns LIST -o PATH`, nothing else', async () => {
    expect(SHELLS).toContain('sh');
    const world = makeWorld(server);
    submits(ID);
    // not ready within --max-wait: the report goes on, and the CLI says how to pick it up later
    server.on('status', (_req, res) => json(res, 200, { response: { status: 'progress', message: 'progress', report_id: ID } }));
    const result = await world.run([...RUN, '--max-wait', '300ms', '-o', PATH]);
    expect(result.code).toBe(6);
    const command = /pick it up later with: (.*)$/m.exec(result.stderr)?.[1];
    expect(command).toBeDefined();
    const paste = join(world.root, 'paste');
    const columns = 'displays,clicks,downloads,leads,landings,revenueEuro,valueDollar,eyesTrackings';
    for (const args of pasteInto(command as string, paste)) expect(args).toEqual(['download', ID, '--wait', '--columns', columns, '-o', PATH]);
    expect(readdirSync(paste).filter((name) => name.includes('PWNED'))).toEqual([]);
    expect(readdirSync(world.cwd)).toEqual([]);
  });

  it('the "add --wait" hint of download: the same', async () => {
    const world = makeWorld(server);
    server.on('status', (_req, res) => json(res, 200, { response: { status: 'progress', message: 'progress', report_id: ID } }));
    const result = await world.run(['download', ID, '-o', PATH]);
    expect(result.code).toBe(6);
    const command = /add --wait to wait for it: (.*)$/m.exec(result.stderr)?.[1];
    expect(command).toBeDefined();
    const paste = join(world.root, 'paste');
    for (const args of pasteInto(command as string, paste)) expect(args).toEqual(['download', ID, '--wait', '-o', PATH]);
    expect(readdirSync(paste).filter((name) => name.includes('PWNED'))).toEqual([]);
  });

  it('plain words stay unquoted, and every word survives sh -c whatever it holds', async () => {
    const { shellCommand, shellQuote } = await import('../../src/io/shell.js');
    expect(shellCommand(['reporting', 'download', 'abc123', '--wait', '-o', 'out/x.csv'])).toBe('reporting download abc123 --wait -o out/x.csv');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('=cmd')).toBe("'=cmd'");
    const { default: fc } = await import('fast-check');
    const dir = join(makeWorld(server).root, 'prop');
    // every character a word may hold, NUL aside (no argv can hold it)
    const anyChar = fc.integer({ min: 1, max: 0x10ffff }).filter((code) => code < 0xd800 || code > 0xdfff).map((code) => String.fromCodePoint(code));
    const word = fc.string({ unit: fc.oneof(fc.constantFrom(..."'\"\\$`!*?[]{}()<>|&;#~= \t\n%^"), fc.integer({ min: 1, max: 127 }).map((code) => String.fromCharCode(code)), anyChar), maxLength: 12 });
    fc.assert(fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (words) => {
      for (const args of pasteInto(`reporting ${shellCommand(words)}`, dir)) expect(args).toEqual(words);
    }), { numRuns: 60 });
  });
});

describe('11.3 no escape sequence from the server reaches the terminal', () => {
  const ESC = '\u001b]0;owned\u0007\u001b[2J\r\u009b31m';

  it('a failed status and its message, on stderr and in `status` output: escaped; --json exact', async () => {
    const world = makeWorld(server);
    server.on('status', (_req, res) => json(res, 200, { response: { status: `failed${ESC}`, message: `boom${ESC}`, report_id: 'r1' } }));
    const run = await world.run(RUN);
    expect(run.code).toBe(6);
    expect(run.stderr).toContain('\\x1b]0;owned\\x07');
    expectNoControl(run.stderr);
    const status = await world.run(['status', 'r1']);
    expect(status.code).toBe(6);
    expectNoControl(status.stdout + status.stderr);
    // stdout is the status alone; the server's message is in the error on stderr
    expect(status.stdout).toMatch(/^failed\\x1b[^\n]*\n$/);
    expect(status.stderr).toContain('boom\\x1b');
    const waited = await world.run(['status', 'r1', '--wait', '-v', '--poll-interval', '10ms']);
    expect(waited.code).toBe(6);
    expect(waited.stderr).toMatch(/^poll 1: failed\\x1b/m);
    expectNoControl(waited.stdout + waited.stderr);
    const asJson = await world.run(['status', 'r1', '--json']);
    expect(JSON.parse(asJson.stdout)).toEqual({ reportId: 'r1', status: `failed${ESC}`, message: `boom${ESC}` });
  });

  it('error texts of the error envelope, and the -v trace: escaped', async () => {
    const world = makeWorld(server);
    server.on('buyer', (_req, res) => json(res, 400, { response: { error_id: `BAD${ESC}`, error: `no${ESC}` } }));
    const result = await world.run([...RUN, '-v']);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^error: POST \/buyer-reporting: HTTP 400: no\\x1b/m);
    expectNoControl(result.stderr);
  });

  it('summary fields shown at the end of a run: escaped on stderr, exact in the data file', async () => {
    const world = makeWorld(server);
    server.on('download', (_req, res) => json(res, 200, {
      data: [{ country: `FR${ESC}`, displays: 1 }],
      summary: { since: '2026-11-01T00:00:00+01:00', until: '2026-11-01T23:59:59+01:00', breakdowns: [], timezone: `paris${ESC}` },
    }));
    // every field: `country` is no field of this request's
    const result = await world.run([...RUN, '--columns', 'all', '-o', 'out.csv']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/2026-11-01T00:00:00\+01:00 → 2026-11-01T23:59:59\+01:00/);
    expectNoControl(result.stderr);
    const rows = parse(readFileSync(join(world.cwd, 'out.csv')), { columns: true }) as Record<string, string>[];
    expect(rows).toEqual([{ country: `FR${ESC}`, displays: '1' }]);
  });

  it('a summary naming another period (escape bytes included) is refused: exit 5 naming both periods, escaped, nothing written (issue 20, item 3)', async () => {
    const world = makeWorld(server);
    for (const summary of [
      { since: '1999-01-01T00:00:00+01:00', until: '1999-01-01T23:59:59+01:00', breakdowns: [] },
      { since: `2026-11-01${ESC}`, until: '2026-11-01', breakdowns: [`COUNTRY${ESC}`] },
    ]) {
      server.on('download', (_req, res) => json(res, 200, { data: [{ country: 'FR', displays: 1 }], summary }));
      const before = world.snapshot();
      const result = await world.run([...RUN, '-o', 'out.csv']);
      expect(result.code, result.stderr).toBe(5);
      expect(result.stderr).toMatch(/^error: report r1 for 2026-11-01: the report downloaded (covers|is broken down)/m);
      expect(result.stderr).toMatch(/not 2026-11-01T00:00:00\+01:00 \.\. 2026-11-01T23:59:59\+01:00/);
      expectNoControl(result.stderr);
      expect(changes(before, world.snapshot())).toEqual([]);
    }
    // the same instants in another offset's spelling are the same period
    server.on('download', (_req, res) => json(res, 200, { data: [{ country: 'FR', displays: 1 }], summary: { since: '2026-10-31T23:00:00Z', until: '2026-11-01T22:59:59.000Z', breakdowns: [] } }));
    expect((await world.run([...RUN, '-o', 'out.csv'])).code).toBe(0);
  });

  it('campaign table cells: escaped; --json exact', async () => {
    const world = makeWorld(server);
    const campaigns = [{
      advertiserId: 1, advertiserName: `adv${ESC}`, campaignId: 2, campaignName: `name${ESC}\u202etxt.exe`,
      campaignStartDate: '2026-01-01', campaignEndDate: '2026-12-31', adunits: [],
    }];
    server.on('campaigns', (_req, res) => json(res, 200, campaigns));
    const shown = await world.run(['campaigns']);
    expect(shown.code).toBe(0);
    expectNoControl(shown.stdout);
    expect(shown.stdout).not.toContain('\u202e');
    expect(shown.stdout).toContain('name\\x1b]0;owned\\x07');
    const asJson = await world.run(['campaigns', '--json']);
    expect(JSON.parse(asJson.stdout)).toEqual(campaigns.map((c) => ({ ...c, advertiserId: '1', campaignId: '2' })));
  });
});

describe('issue 20, item 8: the JSON log escapes the invisible controls text mode escapes', () => {
  // bidi embeddings, overrides and isolates, the bidi marks, the line and paragraph separators
  const INVISIBLE = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029';
  const RAW = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]/;
  const failing = () => server.on('status', (_req, res) => json(res, 200, {
    response: { status: `failed${INVISIBLE}x`, message: `exe.txt${INVISIBLE}boom`, report_id: 'r1' },
  }));

  it('a failed status and its message in --log-format json: \\u escapes, and each line parses back to the server\'s text', async () => {
    const world = makeWorld(server);
    failing();
    const result = await world.run([...RUN, '-o', 'out.csv', '--log-format', 'json']);
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr).not.toMatch(RAW);
    expect(result.stderr).toContain('\\u202e');
    const lines = result.stderr.trimEnd().split('\n');
    const parsed = lines.map((line) => JSON.parse(line) as { event: string; status?: string; message?: string });
    expect(parsed.map((line) => line.event)).toEqual(['submitted', 'polled', 'failed', 'error']);
    // the server's status as it sent it; in the messages, its characters all there
    expect(parsed[1]?.status).toBe(`failed${INVISIBLE}x`);
    for (const line of parsed.slice(2)) expect(line.message).toContain(`failed${INVISIBLE}x`);
    expect(parsed[3]?.message).toMatch(/exe\.txt[\s\S]*boom/);
    // another reader of JSON reads the same text: Python's json module
    const python = spawnSync('python3', ['-c', 'import json,sys\nfor line in sys.stdin: print(json.dumps(json.loads(line), ensure_ascii=True))'], { input: result.stderr, encoding: 'utf8' });
    if (python.error) return; // no Python on this machine: JSON.parse above is the check
    expect(python.status, python.stderr).toBe(0);
    expect(python.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual(parsed);
  });

  it('text mode is unchanged: the same characters shown escaped', async () => {
    const world = makeWorld(server);
    failing();
    const result = await world.run([...RUN, '-o', 'out.csv']);
    expect(result.code).toBe(6);
    expect(result.stderr).not.toMatch(RAW);
    expect(result.stderr).toContain('failed\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c\\u2028\\u2029x');
  });
});

it('the world helper sees a change outside the target folder (the assertions above can fail)', async () => {
  const world = makeWorld(server);
  const before = world.snapshot();
  writeFileSync(join(world.root, 'stray.csv'), 'x');
  expect(changes(before, world.snapshot())).toEqual(['stray.csv']);
  expect(existsSync(join(world.root, 'stray.csv'))).toBe(true);
});
