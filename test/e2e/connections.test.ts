// A fleet's jobs share one keep-alive agent (api/http.ts Connections): a job that starts as
// another ends sends its submit on a socket already open, instead of connecting first, on the
// path from one report's download to the next one's submit. Counted through a proxy in front of
// the sandbox: each job's own agent opened at least one connection a job.

import { writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';

/** A TCP proxy on 127.0.0.1 to `port`, counting the connections it is asked for. */
async function countingProxy(port: number): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const open = new Set<{ destroy: () => void }>();
  const server = createServer((client) => {
    count++;
    open.add(client);
    client.on('close', () => open.delete(client));
    const upstream = createConnection({ host: '127.0.0.1', port });
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => count,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      for (const socket of open) socket.destroy();
    }),
  };
}

describe('jobs run: the connections of a fleet', () => {
  it('are shared by its jobs: fewer connections than jobs, every report delivered', async () => {
    await withSandbox({ accounts: 3 }, async (sandbox, dir) => {
      const proxy = await countingProxy(Number(new URL(sandbox.baseUrl).port));
      try {
        const profiles = ['one', 'two', 'three'];
        writeFileSync(join(dir, 'reporting.yaml'), [
          'version: 1', 'concurrency: 2', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-02', '  chunk: day',
          '  state: state/{job}.json', '  output: out/{job}/{since}.csv', 'jobs:',
          '  - name: buyer', '    side: buyer', '    breakdowns: DAILY', `    profiles: [${profiles.join(', ')}]`,
          '  - name: seller', '    side: seller', '    breakdowns: DAILY', `    profiles: [${profiles.join(', ')}]`, '',
        ].join('\n'));
        const env = {
          REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: proxy.url,
          ...Object.fromEntries(profiles.map((profile, i) => [`REPORTING_TOKEN_${profile.toUpperCase()}`, sandbox.accounts[i]?.token as string])),
        };
        const result = await runCli(['jobs', 'run', '-q', '--json'], { env, cwd: dir });
        expect(result.code, result.stderr).toBe(0);
        const outcome = JSON.parse(result.stdout) as { jobs: { exitCode: number; fetched: number }[] };
        expect(outcome.jobs).toHaveLength(6);
        expect(outcome.jobs.every((job) => job.exitCode === 0 && job.fetched === 2)).toBe(true);
        expect(sandbox.stats().submitted).toBe(12);
        // two reports at most in progress: a few sockets, not one (or more) a job
        expect(proxy.connections()).toBeGreaterThan(0);
        expect(proxy.connections()).toBeLessThan(6);
      } finally {
        await proxy.close();
      }
    });
  }, 60_000);
});
