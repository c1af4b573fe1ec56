// A throwaway Postgres cluster for the --load tests: initdb into a fresh folder (as the `postgres`
// user when the tests run as root, as initdb requires), password authentication on 127.0.0.1, a
// free port; stopped and removed by stop(). Tests that need it are skipped where initdb is missing
// (.ci/run installs Debian's postgresql).

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN_DIRS = ['/usr/local/bin', '/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/14/bin', '/usr/bin'];

function binary(name: string): string | undefined {
  for (const dir of BIN_DIRS) if (existsSync(join(dir, name))) return join(dir, name);
  return undefined;
}

export const POSTGRES_AVAILABLE = binary('initdb') !== undefined && binary('pg_ctl') !== undefined
  && (process.getuid?.() !== 0 || spawnSync('id', ['postgres']).status === 0);

export interface Cluster {
  port: number;
  user: string;
  password: string;
  /** postgres://user:password@127.0.0.1:port/db */
  url(db?: string, withPassword?: boolean): string;
  /** runs SQL through psql (a client this project did not write), answers its unaligned output */
  psql(sql: string, db?: string): string;
  stop(): void;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export async function startCluster(): Promise<Cluster> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'reporting-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const user = 'loader';
  const password = 'pg-s3cret-Pa55';
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o644 });
  const as = (command: string, args: string[]) => (root ? ['runuser', ['-u', 'postgres', '--', command, ...args]] as const : [command, args] as const);
  const run = (command: string, args: string[]) => {
    const [cmd, argv] = as(command, args);
    execFileSync(cmd, argv, { stdio: 'pipe', cwd: dir });
  };
  run(binary('initdb') as string, ['-D', data, '-U', user, '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  run(binary('pg_ctl') as string, ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  const url = (db = 'postgres', withPassword = true) => `postgres://${user}${withPassword ? `:${password}` : ''}@127.0.0.1:${port}/${db}`;
  return {
    port, user, password, url,
    psql(sql, db = 'postgres') {
      return execFileSync('psql', ['-X', '-A', '-t', '-F', '|', '-P', 'null=NULL', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', db, '-c', sql],
        { env: { ...process.env, PGPASSWORD: password }, encoding: 'utf8' });
    },
    stop() {
      try {
        run(binary('pg_ctl') as string, ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
