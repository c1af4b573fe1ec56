// `npm run demo` (the README's first command after install): the sandbox, a login through the CLI
// and a real report written as CSV. The build exists here (npm test builds first).

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { baseEnv, collect } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('npm run demo', () => {
  it('logs in to the sandbox, runs last week\'s report and writes a CSV that csv-parse reads', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'demo.mjs')], { cwd: ROOT, env: baseEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    const result = await collect(child, { timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const wrote = /Wrote (demo\/buyer-\d{4}-\d{2}-\d{2}\.csv) \((\d+) rows\)/.exec(result.stdout);
    expect(wrote, result.stdout).not.toBeNull();
    const rows = parse(readFileSync(join(ROOT, wrote?.[1] as string), 'utf8'), { columns: true }) as Record<string, string>[];
    expect(rows.length).toBe(Number(wrote?.[2]));
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((row) => row.date)).size).toBe(7);
    expect(Object.keys(rows[0] ?? {})).toEqual(expect.arrayContaining(['date', 'country', 'displays', 'clicks', 'revenueEuro']));
    expect(result.stdout + result.stderr).not.toMatch(/sandbox-password|\b[0-9a-f]{40}\b/);
  });
});
