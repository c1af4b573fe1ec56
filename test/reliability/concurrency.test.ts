// Parallel cron jobs sharing one token store and one API, and a sandbox under load.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { formBody } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const PARALLEL = 20;
let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 200 });
});
afterAll(() => sandbox.close());

// made-up tokens, stored with --no-verify: these tests are about the store, not the API
const tokenOf = (i: number) => `${i.toString(16).padStart(2, '0')}${'c0ffee'.repeat(6)}42`;

describe(`${PARALLEL} processes at once`, () => {
  it('rewriting one profile\'s token: the store stays valid and holds one of the written tokens', async () => {
    const dir = tempDir();
    const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
    const tokens = Array.from({ length: PARALLEL }, (_, i) => tokenOf(i));
    const results = await Promise.all(tokens.map((token) => runCli(['login', '--token-stdin', '--no-verify'], { env, input: token })));
    expect(results.map((r) => r.code)).toEqual(tokens.map(() => 0));
    const store = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    expect(tokens).toContain(store.profiles.default.token);
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600);
  });

  it('using one profile while others re-login into it: every run succeeds and the store stays valid', async () => {
    const relogging = await startSandbox({ port: 0, readyDelayMs: 100, faults: { tokenUses: 3 } });
    try {
      const dir = tempDir();
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: relogging.baseUrl, REPORTING_EMAIL: relogging.email, REPORTING_PASSWORD: relogging.password };
      expect((await runCli(['login', '--email', relogging.email], { env })).code).toBe(0);
      const results = await Promise.all(Array.from({ length: PARALLEL }, (_, i) => runCli(['run', 'seller', '--since', 'yesterday', '--until', 'yesterday', '--poll-interval', '50ms', '-q', '-o', join(dir, `s${i}.csv`)], { env })));
      expect(results.map((r) => r.code), results.map((r) => r.stderr).join('')).toEqual(results.map(() => 0));
      const store = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
      expect(store.profiles.default.token).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      await relogging.close();
    }
  });

  it(`logging in to ${PARALLEL} different profiles keeps all ${PARALLEL}`, async () => {
    const dir = tempDir();
    const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
    const results = await Promise.all(Array.from({ length: PARALLEL }, (_, i) => runCli(['login', '--token-stdin', '--no-verify', '--profile', `p${i}`], { env, input: tokenOf(i) })));
    expect(results.map((r) => r.code)).toEqual(results.map(() => 0));
    const profiles = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).profiles;
    for (let i = 0; i < PARALLEL; i++) expect(profiles[`p${i}`].token).toBe(tokenOf(i));
  });

  it(`${PARALLEL} runs writing different files against one sandbox all succeed`, async () => {
    const dir = tempDir();
    const env = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
    const results = await Promise.all(Array.from({ length: PARALLEL }, (_, i) =>
      runCli(['run', i % 2 ? 'buyer' : 'seller', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,COUNTRY', '--poll-interval', '50ms', '-q', '-o', join(dir, `r${i}.csv`)], { env })));
    expect(results.map((r) => r.code)).toEqual(results.map(() => 0));
    for (let i = 0; i < PARALLEL; i++) expect(readFileSync(join(dir, `r${i}.csv`), 'utf8')).toMatch(/^date,country,/);
  });
});

describe('the sandbox under load', () => {
  it('serves 50 concurrent report cycles (submit, poll, download) without an error', async () => {
    const headers = { Authorization: sandbox.token, 'Content-Type': 'application/x-www-form-urlencoded' };
    const post = (path: string, body: Record<string, string | number | string[]>) =>
      fetch(`${sandbox.baseUrl}${path}`, { method: 'POST', headers, body: formBody(body) });
    const cycle = async (i: number) => {
      const submitted = await post(i % 2 ? '/buyer-reporting' : '/seller-reporting', { since: 1793487600, until: 1795215599, breakdowns: ['DAILY', 'COUNTRY'] });
      if (submitted.status !== 200) throw new Error(`submit ${submitted.status}`);
      const id = ((await submitted.json()) as { response: { report_id: string } }).response.report_id;
      for (;;) {
        const status = await post('/status-reporting', { id });
        if (status.status !== 200) throw new Error(`status ${status.status}`);
        if (((await status.json()) as { response: { status: string } }).response.status === 'ready') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const downloaded = await post('/download-reporting', { id });
      if (downloaded.status !== 200) throw new Error(`download ${downloaded.status}`);
      return ((await downloaded.json()) as { data: unknown[] }).data.length;
    };
    const counts = await Promise.all(Array.from({ length: 50 }, (_, i) => cycle(i)));
    expect(counts.every((count) => count > 100)).toBe(true);
  });
});
