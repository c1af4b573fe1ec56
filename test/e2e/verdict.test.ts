// Issue 30, item 5: no run ends without a verdict. A Postgres URL whose parameters the client
// cannot use is a usage error before any report is requested (it was exit 0 with nothing written
// for `port=abc`, an "internal error" for an unreadable `sslcert`); and a command whose work never
// settles (the event loop drains while it waits) exits 70 with one line, never 0.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { BIN, NODE, baseEnv, collect, runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';

const env = sandboxEnv;
const run = (load: string) => ['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--breakdowns', 'DAILY', '--load', load, '--table', 't'];
const errorLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('error:'));
const submits = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.endpoint === 'buyer').length;

describe('a Postgres URL the client cannot use', () => {
  it.each([
    ['port=abc', 'port=abc is not a port'],
    ['port=70000', 'port=70000 is not a port'],
    ['sslmode=required', 'sslmode=required is not one of'],
    ['sslcert=/nonexistent/client.crt&sslmode=require', 'sslcert=/nonexistent/client.crt cannot be read: no such file'],
    ['sslrootcert=.&sslmode=verify-full', 'sslrootcert=. is not a file'],
  ])('?%s: exit 2 before any report is requested, one line naming it, the password never shown', async (query, said) => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const result = await runCli(run(`postgres://loader:Pa55-secret@127.0.0.1:5999/db?${query}`), { env: env(sandbox, dir), cwd: dir });
      expect(result.code, result.stderr).toBe(2);
      expect(errorLines(result.stderr)).toHaveLength(1);
      expect(result.stderr).toContain(said);
      expect(result.stderr).not.toContain('Pa55-secret');
      expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
      expect(submits(sandbox)).toBe(0);
    });
  });
});

describe('a command whose work never settles', () => {
  it('exits 70 with one line when the event loop drains: PGPORT=abc, which pg reads itself (its connect never settles), not 0', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      const result = await runCli(run('postgres://loader@127.0.0.1/db'), { env: { ...env(sandbox, dir), PGPORT: 'abc' }, cwd: dir });
      expect(result.code, result.stderr).toBe(70);
      expect(errorLines(result.stderr)).toEqual(['error: the command stopped before it finished: something it was waiting for will never answer']);
    });
  });

  it('exits 70 with one line when the event loop drains (a database client that never answers), not 0', async () => {
    await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
      // what pg did with port=abc: its connect() never settled and held nothing open
      const hang = join(dir, 'hang.cjs');
      writeFileSync(hang, "const pg = require(require.resolve('pg', { paths: [process.argv[1]] })); pg.Client.prototype.connect = () => new Promise(() => {});\n");
      const child = spawn(NODE, ['-r', hang, BIN, ...run('postgres://loader@127.0.0.1:5999/db')], { env: baseEnv(env(sandbox, dir)), cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
      const result = await collect(child);
      expect(result.code, result.stderr).toBe(70);
      expect(errorLines(result.stderr)).toEqual(['error: the command stopped before it finished: something it was waiting for will never answer']);
    });
  });
});
