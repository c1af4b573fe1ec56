// The HTTP client loads undici's agent, connector and `request` from their own modules, not its
// index (fetch, WebSocket, caches, mocks: 20-30 ms and 9 MiB more for every command that sends a
// request; src/lazy.ts). Run in a process of its own, from the build, so that nothing else has
// loaded undici before: a request made through those parts reaches a server on 127.0.0.1 with its
// path and query whole, and undici's index is never loaded.

import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const lazy = new URL('../../dist/lazy.js', import.meta.url).href;

it('a request through undici\'s parts reaches the server with its method, path and query, and undici\'s index is not loaded', async () => {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const script = `
      import { createRequire } from 'node:module';
      const { loadUndici } = await import(${JSON.stringify(lazy)});
      const { Agent, buildConnector, request } = await loadUndici();
      const dispatcher = new Agent({ connect: buildConnector({ timeout: 5000 }) });
      const answer = await request('http://127.0.0.1:${port}/v1/reports/r%201?since=1&x=%C3%A9', { method: 'POST', body: '{}', dispatcher });
      const text = await answer.body.text();
      await dispatcher.close();
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => /undici[\\\\/]/.test(path));
      console.log(JSON.stringify({ status: answer.statusCode, text, index: loaded.some((path) => /undici[\\\\/]index\\.js$/.test(path)), parts: loaded.length }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    const result = JSON.parse(stdout) as { status: number; text: string; index: boolean; parts: number };
    expect(seen).toEqual(['POST /v1/reports/r%201?since=1&x=%C3%A9']);
    expect(result).toMatchObject({ status: 200, text: 'ok', index: false });
    expect(result.parts).toBeGreaterThan(0);
  } finally {
    server.close();
  }
});
