// The campaigns table under a hostile or just large answer: 200,000 campaigns, names in emoji and
// CJK, a terminal narrower than the table. Widths are checked with Python's unicodedata, a reader
// this project did not write.

import { spawn, spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN, NODE, baseEnv, collect } from '../helpers/cli.js';
import { json, startHostile, type Hostile } from './server.js';
import { changes, expectNoControl, makeWorld } from './world.js';
import { PYTHON } from '../helpers/python.js';

let server: Hostile;
beforeEach(async () => { server = await startHostile(); });
afterEach(async () => { await server.close(); });

const campaign = (id: number, name: string, advertiser = 'Acme') => ({
  advertiserId: 1, advertiserName: advertiser, campaignId: id, campaignName: name,
  campaignStartDate: '2026-01-01', campaignEndDate: '2026-12-31', adunits: [],
});

/** Each line's display width and the display columns where its cells start (Python's unicodedata). */
function measure(lines: string[]): { width: number; starts: number[] }[] {
  const script = `
import json, sys, unicodedata
def w(c):
    if unicodedata.combining(c) or unicodedata.category(c) in ('Mn', 'Me', 'Cf'): return 0
    return 2 if unicodedata.east_asian_width(c) in ('W', 'F') else 1
out = []
for line in json.load(sys.stdin):
    col, starts, prev_space, run = 0, [], True, 0
    for c in line:
        if c == ' ': run += 1
        else:
            if col == 0 or run >= 2: starts.append(col)
            run = 0
        col += w(c)
    out.append({'width': col, 'starts': starts})
print(json.dumps(out))`;
  const ran = spawnSync(PYTHON ?? 'python3', ['-c', script], { input: JSON.stringify(lines), encoding: 'utf8' });
  expect(ran.status, ran.stderr).toBe(0);
  return JSON.parse(ran.stdout) as { width: number; starts: number[] }[];
}

const NAMES = ['Été 🎉 launch', '東京キャンペーン 冬', 'plain name', 'e\u0301cole 🚀🚀', `long ${'x'.repeat(90)} end`];

describe('10.10 / 11.12 the campaigns table', () => {
  it('pads by display width: emoji, CJK and combining accents keep the columns aligned', async () => {
    const world = makeWorld(server);
    server.on('campaigns', (_req, res) => json(res, 200, NAMES.map((name, i) => campaign(100 + i, name, i === 1 ? '広告主' : 'Acme'))));
    const result = await world.run(['campaigns']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(NAMES.length + 1);
    expect(lines[5]).toContain('x'.repeat(90)); // not a terminal: nothing is cut
    const measured = measure(lines);
    // every row's cells start where the header's do (the long name's row too)
    for (const line of measured) expect(line.starts).toEqual(measured[0]!.starts);
  });

  // `script` (util-linux) gives the CLI a terminal; without it this is reported as skipped
  it.skipIf(spawnSync('script', ['--version']).status !== 0)('on a terminal, fits its width with an ellipsis', async () => {
    const world = makeWorld(server);
    server.on('campaigns', (_req, res) => json(res, 200, NAMES.map((name, i) => campaign(100 + i, name))));
    for (const cols of [60, 80]) {
      const command = `stty cols ${cols} rows 40; "${NODE}" "${BIN}" campaigns`;
      const result = await collect(spawn('script', ['-qfc', command, '/dev/null'], { env: baseEnv(world.env), cwd: world.cwd }));
      expect(result.code).toBe(0);
      const lines = result.stdout.replace(/\r/g, '').trimEnd().split('\n');
      expect(lines).toHaveLength(NAMES.length + 1);
      const measured = measure(lines);
      for (const line of measured) {
        expect(line.width).toBeLessThanOrEqual(cols);
        expect(line.starts).toEqual(measured[0]!.starts);
      }
      expect(lines[5]).toMatch(/long x+… /);
      // the names give way: IDs, dates and counts are never cut
      for (const line of lines.slice(1)) expect(line).toMatch(/^\d+ .* \d{4}-\d{2}-\d{2}  \d{4}-\d{2}-\d{2}  \d+$/);
      expectNoControl(result.stdout.replace(/\r\n/g, '\n'));
    }
  });

  it('200,000 campaigns: a table and CSV, no "Maximum call stack size exceeded"', async () => {
    const world = makeWorld(server);
    const body = JSON.stringify(Array.from({ length: 200_000 }, (_, i) => campaign(i, `c${i} 🎉`)));
    server.on('campaigns', (_req, res) => json(res, 200, body));
    const before = world.snapshot();
    const table = await world.run(['campaigns'], { timeoutMs: 120_000 });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trimEnd().split('\n')).toHaveLength(200_001);
    const csv = await world.run(['campaigns', '--format', 'csv', '-o', 'c.csv'], { timeoutMs: 120_000 });
    expect(csv.code, csv.stderr).toBe(0);
    expect(changes(before, world.snapshot())).toEqual(['work/c.csv']);
  }, 240_000);
});
