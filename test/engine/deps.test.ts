// The engine's deps (src/engine/deps.ts): a run made by a test alone, with its own client, calendar,
// sleep and streams, no factory anywhere; what the factory hands the engine (engineDeps: the Context
// and a few members, not the token store or the HTTP helper); and factory.forProfile, which `jobs`
// builds each job's factory with.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { ReportingClient } from '../../src/api/client.js';
import { Http } from '../../src/api/http.js';
import { Secrets } from '../../src/api/redact.js';
import { calendarFrom } from '../../src/clock.js';
import type { EngineDeps } from '../../src/engine/deps.js';
import { runJob } from '../../src/engine/engine.js';
import { DEFAULT_JOB_FLAGS } from '../../src/engine/job.js';
import { prepareRun, type RunOptions } from '../../src/engine/prepare.js';
import { previewJob } from '../../src/engine/preview.js';
import { DEFAULT_GLOBALS, createFactory, engineDeps } from '../../src/factory.js';
import { FakeOutput, fakeContext } from '../helpers/ctx.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const options = (output: string, more: Partial<RunOptions> = {}): RunOptions => ({
  side: 'buyer',
  report: { since: '2026-11-01', until: '2026-11-03', metrics: ['displays', 'clicks'], breakdowns: ['DAILY'], filters: {}, params: [], validate: true },
  output: { output },
  wait: { maxWaitMs: 60_000 },
  jobs: { ...DEFAULT_JOB_FLAGS },
  ...more,
});

describe('the engine takes its deps, never the factory', () => {
  it('a chunked run on deps a test builds alone: its client, its streams, its calendar', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const { ctx } = fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config') } });
      const stdout = new FakeOutput();
      const secrets = new Secrets();
      const http = new Http({ baseUrl: sandbox.baseUrl, timeoutMs: 10_000, retries: 0, encoding: 'form', userAgent: 'test', signal: ctx.signal, secrets });
      let clients = 0;
      const client = new ReportingClient(http, { token: () => sandbox.token, missingHint: 'none' });
      const deps: EngineDeps = {
        ...ctx, now: () => Date.now(), stdout,
        calendar: calendarFrom(undefined, () => Date.parse('2026-11-21T11:00:00Z')),
        sleep: async () => undefined,
        secrets,
        trace: undefined,
        profileName: 'default',
        baseUrl: () => ({ url: sandbox.baseUrl }),
        client: () => { clients++; return client; },
        globals: { quiet: true, verbose: false, json: true, retries: 0 },
      };
      try {
        const job = prepareRun(options('out-{since}.csv', { chunk: { chunk: 'day', concurrency: 2, split: true } }), deps);
        expect((await previewJob(job, deps)).map((w) => w.action)).toEqual(['fetch', 'fetch', 'fetch']);
        await runJob(job, deps);
      } finally {
        await client.close();
      }
      expect(clients).toBeGreaterThan(0);
      // the result line went to the deps' stdout (--json), the rows to one file a day
      expect((JSON.parse(stdout.text) as { files: { file: string }[] }).files.map((one) => one.file)).toEqual(['out-2026-11-01.csv', 'out-2026-11-02.csv', 'out-2026-11-03.csv']);
      for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) {
        const rows = parse(readFileSync(join(dir, `out-${day}.csv`), 'utf8'), { columns: true }) as Record<string, string>[];
        expect(rows.length).toBeGreaterThan(0);
      }
    });
  }, 60_000);

  it('engineDeps hands the engine the Context and its few members: the factory\'s secrets and client, not its token store', () => {
    const dir = tempDir();
    const { ctx } = fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: 'http://127.0.0.1:9', REPORTING_TOKEN: 'tok-1234567890' } });
    const f = createFactory(ctx, { ...DEFAULT_GLOBALS, quiet: true });
    const deps = engineDeps(f);
    for (const member of ['store', 'profile', 'http', 'saveToken', 'forProfile', 'close']) expect(deps).not.toHaveProperty(member);
    expect(deps.secrets).toBe(f.secrets);
    expect(deps.client()).toBe(f.client());
    expect(deps.baseUrl().url).toBe('http://127.0.0.1:9');
    // a password prepareRun meets (--load) is the factory's secret too: masked in its messages
    prepareRun(options('out.csv', { load: { load: 'postgres://u:s3cretpw@127.0.0.1:9/db', onSchemaChange: 'fail' } }), deps, 'look');
    expect(f.secrets.redact('at postgres://u:s3cretpw@host')).not.toContain('s3cretpw');
  });
});

describe('factory.baseUrl: the active profile\'s, found once a command', () => {
  it('none is an error each time it is asked; a token saved with a base URL makes it the answer', async () => {
    const dir = tempDir();
    const { ctx } = fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config') } });
    const f = createFactory(ctx, { ...DEFAULT_GLOBALS, quiet: true });
    expect(() => f.baseUrl()).toThrow(/no base URL for profile "default"/);
    expect(() => f.baseUrl()).toThrow(/no base URL for profile "default"/);
    await f.saveToken('tok-1234567890', 'console', 'http://127.0.0.1:9');
    expect(f.baseUrl()).toEqual({ url: 'http://127.0.0.1:9', source: 'profile' });
    await f.saveToken('tok-1234567890', 'console', 'http://127.0.0.1:10');
    expect(f.baseUrl()).toEqual({ url: 'http://127.0.0.1:10', source: 'profile' });
  });
});

describe('factory.forProfile: one job\'s factory (jobs)', () => {
  it('the job\'s profile, --json off, its own stderr for its traces; the process\'s stdout and environment', () => {
    const { ctx, stdout, stderr } = fakeContext({ env: { REPORTING_TOKEN_ACME: 'acme-token-123456' } });
    const f = createFactory(ctx, { ...DEFAULT_GLOBALS, json: true, verbose: true });
    const own = new FakeOutput();
    const job = f.forProfile('acme', own);
    expect(job.profileName).toBe('acme');
    expect(job.globals).toMatchObject({ profile: 'acme', json: false, verbose: true });
    job.trace?.('a line');
    expect(own.text).toBe('a line\n');
    expect(stderr.text).toBe('');
    expect(job.stdout).toBe(stdout);
    expect(job.env.REPORTING_TOKEN_ACME).toBe('acme-token-123456');
    // without a stderr of its own: the process's
    f.forProfile('acme').trace?.('another');
    expect(stderr.text).toBe('another\n');
  });

  it('the jobs share the process\'s one set of secrets: masked alike, and the environment\'s read once, not once a job (3,000 jobs of 1,000 profiles held 3 million copies)', () => {
    const env = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`REPORTING_TOKEN_P${i}`, `token-of-p${i}-abcdef`]));
    const { ctx } = fakeContext({ env });
    const f = createFactory(ctx, DEFAULT_GLOBALS);
    const jobs = ['p1', 'p2', 'p3'].map((profile) => f.forProfile(profile));
    for (const job of jobs) {
      expect(job.secrets).toBe(f.secrets);
      expect(job.secrets.redact('sent token-of-p49-abcdef')).not.toContain('token-of-p49');
    }
  });
});
