// Issue 34, item 6: a new kind of output is one file and one table line. This test's sink
// (`file+test://NAME`: objects kept in memory) is defined here and registered here (registerSink),
// and nothing else changes: `reporting run`, in-process against the sandbox, checks it before its
// first request, writes each window through it, records it in the state, skips what is still
// there, fetches again what is gone; the factory masks the secret it names.

import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { outputPaths, registerSink, type SinkKind } from '../../src/destinations/sinks.js';
import { readStateOf } from '../../src/engine/state.js';
import { stateStoreOf, storeDeps } from '../../src/engine/stores/kinds.js';
import { UsageError } from '../../src/errors.js';
import { DEFAULT_GLOBALS, createFactory } from '../../src/factory.js';
import type { Sink } from '../../src/export/sink.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { HOST } from '../helpers/host.js';
import { withSandbox } from '../helpers/http.js';

const SCHEME = 'file+test://';
const SECRET = 'sink-secret-5f3a9c';

/** What each file+test:// target holds once committed. */
const objects = new Map<string, Buffer>();
/** The targets the kind was asked to check before a run's first request. */
const checked: string[] = [];

/** Bytes kept in memory, visible at commit only. */
class MemorySink implements Sink {
  private readonly chunks: Buffer[] = [];
  placed?: { outcome: 'written'; bytes: number; sha256: string };
  constructor(readonly path: string) {}
  async write(chunk: string | Buffer): Promise<void> {
    this.chunks.push(Buffer.from(chunk));
  }
  async commit(): Promise<void> {
    const bytes = Buffer.concat(this.chunks);
    objects.set(this.path, bytes);
    this.placed = { outcome: 'written', bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  }
  async abort(): Promise<void> {
    this.chunks.length = 0;
  }
}

const MEMORY: SinkKind = {
  scheme: 'file+test',
  matches: (target) => target.startsWith(SCHEME),
  local: false,
  parse: (target) => {
    if (target.length <= SCHEME.length) throw new UsageError(`-o ${target}: no name`);
  },
  identity: (target) => target,
  place: () => undefined,
  check: async (target, _deps, shown) => {
    checked.push(target);
    if (target.includes('/refused/')) throw new UsageError(`cannot write -o ${shown}: refused`);
  },
  open: async (target) => {
    const sink = new MemorySink(target);
    return { sink, placed: () => sink.placed };
  },
  secrets: (env) => [env.TEST_SINK_KEY],
  describe: (target) => target,
  exists: (target) => objects.has(target),
  split: (target) => ({ where: target.slice(0, target.lastIndexOf('/')), name: target.slice(target.lastIndexOf('/') + 1) }),
};

describe('a sink registered by a test alone', () => {
  it('run checks it before the first request, writes each window through it, records it, skips what is there and fetches what is gone', async () => {
    const unregister = registerSink(MEMORY);
    try {
      await withSandbox({}, async (sandbox, dir) => {
        const env = { REPORTING_CONFIG_DIR: join(dir, 'config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, TEST_SINK_KEY: SECRET };
        const run = async (output: string) => {
          const { ctx, stderr } = fakeContext({ env, cwd: dir });
          const code = await runCli(argv('run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--metrics', 'displays', '--breakdowns', 'DAILY',
            '--chunk', 'day', '--state', join(dir, 'buyer.state.json'), '-o', output, '--poll-interval', '20ms', '--log-format', 'json'), { ...ctx, now: () => Date.now() });
          return { code, stderr: stderr.text };
        };

        // the secret its client reads is masked in everything the run shows
        expect(createFactory(fakeContext({ env }).ctx, DEFAULT_GLOBALS).secrets.redact(`key ${SECRET}`)).toBe('key ***');

        // refused by its check: no report is submitted
        const refused = await run(`${SCHEME}refused/{since}.csv`);
        expect(refused.code, refused.stderr).toBe(2);
        expect(refused.stderr).toContain(`cannot write -o ${SCHEME}refused/{since}.csv (${SCHEME}refused/2026-11-01.csv): refused`);
        expect(checked).toEqual([`${SCHEME}refused/2026-11-01.csv`]);
        expect(sandbox.reports()).toHaveLength(0);

        const first = await run(`${SCHEME}out/{since}.csv`);
        expect(first.code, first.stderr).toBe(0);
        expect(checked).toContain(`${SCHEME}out/2026-11-01.csv`);
        expect([...objects.keys()].sort()).toEqual(['01', '02', '03'].map((day) => `${SCHEME}out/2026-11-${day}.csv`));
        for (const [target, bytes] of objects) {
          const rows = parse(bytes, { columns: true }) as { date: string; displays: string }[];
          expect(rows.map((row) => row.date.slice(0, 10)), target).toEqual([target.slice(-14, -4)]);
          expect(Number(rows[0]?.displays)).toBeGreaterThan(0);
        }
        expect(sandbox.reports()).toHaveLength(3);
        // the state records each window's output as the kind describes it
        const doc = await readStateOf(stateStoreOf(join(dir, 'buyer.state.json'), storeDeps({ cwd: dir, host: HOST, env: {}, now: () => Date.now(), signal: new AbortController().signal })));
        expect(doc?.windows.map((w) => [w.status, w.file])).toEqual(['01', '02', '03'].map((day) => ['done', `${SCHEME}out/2026-11-${day}.csv`]));

        // every output still there (exists): nothing fetched again
        const second = await run(`${SCHEME}out/{since}.csv`);
        expect(second.code, second.stderr).toBe(0);
        expect(sandbox.reports()).toHaveLength(3);

        // one gone: that window alone is fetched again
        objects.delete(`${SCHEME}out/2026-11-02.csv`);
        const third = await run(`${SCHEME}out/{since}.csv`);
        expect(third.code, third.stderr).toBe(0);
        expect(sandbox.reports()).toHaveLength(4);
        expect(objects.has(`${SCHEME}out/2026-11-02.csv`)).toBe(true);
      });
    } finally {
      unregister();
    }
    // unregistered: the same words name a path of this machine again, and the secret is no secret
    expect(outputPaths([`${SCHEME}out/x.csv`])).toEqual([`${SCHEME}out/x.csv`]);
    expect(createFactory(fakeContext({ env: { TEST_SINK_KEY: SECRET } }).ctx, DEFAULT_GLOBALS).secrets.redact(SECRET)).toBe(SECRET);
  }, 60_000);
});
