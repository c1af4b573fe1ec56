// A new DuckDB file is made under a draft name and linked into place (src/load/duckdb.ts,
// createWhole). A process killed between the draft's creation and its removal left it beside the
// user's file for good: a whole empty database. The draft is named as the tool's temporary files
// are, with its process's pid, and the next load of the file removes the drafts of processes no
// longer alive, never one a live process is making.

import { existsSync, readdirSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DUCKDB } from '../../src/load/duckdb.js';
import { tempPathFor } from '../../src/fs/atomic.js';
import { duckdbRows } from '../helpers/duckdb.js';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const signal = new AbortController().signal;
const DEAD = 999_991;
const LIVE = 999_992;
const ME = 999_993;
const host = { pid: ME, isAlive: (pid: number) => pid === LIVE || pid === ME };

/** what a process killed after DuckDB made its draft leaves: a whole empty database, and its WAL */
async function leftDraft(file: string, pid: number): Promise<string> {
  const draft = tempPathFor(file, pid);
  (await DuckDBInstance.create(draft)).closeSync();
  writeFileSync(`${draft}.wal`, '');
  return draft;
}

async function load(dir: string, file: string): Promise<void> {
  const connection = await DUCKDB.connect(DUCKDB.parse(`duckdb:${file}`, dir), { cwd: dir, env: {}, waitMs: 0, signal, now: Date.now, sleep: async () => undefined, host });
  try {
    await connection.execute('CREATE TABLE IF NOT EXISTS t (n INTEGER)');
    await connection.execute('INSERT INTO t VALUES (1)');
  } finally {
    await connection.close();
  }
}

describe('DuckDB: the drafts of a new file', () => {
  it.each([['does not exist yet', false], ['exists (the process was killed after linking it)', true]])(
    "a draft left by a process no longer alive is removed by the next load of the file (the file %s); a live process's draft is kept", async (_, exists) => {
      const dir = tempDir();
      const file = join(dir, 'w.duckdb');
      if (exists) (await DuckDBInstance.create(file)).closeSync();
      const dead = await leftDraft(file, DEAD);
      const live = await leftDraft(file, LIVE);
      await load(dir, file);
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(`${dead}.wal`)).toBe(false);
      expect(existsSync(live)).toBe(true);
      expect(await duckdbRows(file, 'SELECT count(*) FROM t')).toEqual(['1']);
    });

  it("the draft a load makes is named with its process's pid, and is gone once the file is in place", async () => {
    const dir = tempDir();
    const file = join(dir, 'w.duckdb');
    const seen = new Set<string>();
    const watcher = watch(dir, (_, name) => { if (name) seen.add(String(name)); });
    try {
      await load(dir, file);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      watcher.close();
    }
    const drafts = [...seen].filter((name) => name !== 'w.duckdb' && !name.startsWith('w.duckdb.'));
    expect(drafts.length).toBeGreaterThan(0);
    for (const name of drafts) expect(name).toMatch(new RegExp(`^\\.w\\.duckdb\\.reporting-tmp-${ME}-[0-9a-f]{8}(\\.wal)?$`));
    expect(readdirSync(dir).sort()).toEqual(['w.duckdb']);
  });

  it('`run --load duckdb:` removes the draft a killed run left (the CLI, end to end)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const file = join(dir, 'w.duckdb');
      const dead = await leftDraft(file, DEAD);
      const result = await runCli(['run', 'buyer', '--since', '2026-11-02', '--until', '2026-11-02', '--breakdowns', 'DAILY', '--load', `duckdb:${file}`, '--poll-interval', '20ms', '-q'], { env: sandboxEnv(sandbox, dir), cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(`${dead}.wal`)).toBe(false);
      expect(readdirSync(dir).filter((name) => name.startsWith('.w.duckdb'))).toEqual([]);
    });
  });
});
