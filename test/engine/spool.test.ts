// The spool: the runs of one process going at once share one folder, each run's files apart; the
// folder goes with the last run, and with the process whatever happens. A fleet (`jobs run`) has
// one spool folder at a time, none once it is over.

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCleanups, type Host } from '../../src/host.js';
import { Spool } from '../../src/engine/spool.js';
import { collect, startCli } from '../helpers/cli.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

function host(): Host & { cleanups: ExitCleanups } {
  const cleanups = new ExitCleanups();
  return { pid: 1, platform: 'linux', nodeVersion: 'v20.0.0', isAlive: () => true, atExit: (cleanup) => cleanups.add(cleanup), cleanups };
}

describe('the spool folder', () => {
  it('two runs at once: one folder, a file each for one window; it goes with the last run, and nothing else is left', async () => {
    const h = host();
    const first = new Spool(h);
    const second = new Spool(h);
    const a = first.fileOf(100, 199);
    const b = second.fileOf(100, 199);
    expect(a).not.toBe(b);
    expect(dirname(a)).toBe(dirname(b));
    writeFileSync(a, 'first');
    writeFileSync(b, 'second');
    await first.delivered(a);
    first.close();
    expect(readdirSync(dirname(b)).map((name) => join(dirname(b), name))).toEqual([b]);
    expect(readFileSync(b, 'utf8')).toBe('second');
    second.close();
    expect(existsSync(dirname(b))).toBe(false);
    // a run after: a folder of its own again
    const third = new Spool(h);
    const c = third.fileOf(100, 199);
    expect(existsSync(dirname(c))).toBe(true);
    third.close();
    expect(existsSync(dirname(c))).toBe(false);
  });

  it('the process exits in the middle of a run (a second Ctrl-C): the folder and its files go', () => {
    const h = host();
    const run = new Spool(h);
    const file = run.fileOf(1, 2);
    writeFileSync(file, 'rows');
    h.cleanups.run();
    expect(existsSync(dirname(file))).toBe(false);
  });

  it('a fleet of 12 chunked jobs: at most one spool folder at any moment, none after; every CSV written', async () => {
    await withSandbox({ readyDelayMs: 30 }, async (sandbox, dir) => {
      const temp = tempDir();
      writeFileSync(join(dir, 'reporting.yaml'), ['version: 1', 'concurrency: 6', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-02', '  chunk: day',
        '  state: state/{job}.json', '  output: out/{job}/{since}.csv', '  poll-interval: 20ms', 'jobs:',
        ...Array.from({ length: 12 }, (_, i) => [`  - name: j${i}`, `    side: ${i % 2 ? 'seller' : 'buyer'}`]).flat(), ''].join('\n'));
      const child = startCli(['jobs', 'run', '-q'], { cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, TMPDIR: temp } });
      let most = 0;
      const watch = setInterval(() => { most = Math.max(most, readdirSync(temp).filter((name) => name.startsWith('reporting-spool-')).length); }, 2);
      const result = await collect(child).finally(() => clearInterval(watch));
      expect(result.code, result.stderr).toBe(0);
      expect(most).toBe(1);
      expect(readdirSync(temp)).toEqual([]);
      for (let i = 0; i < 12; i++) expect(readdirSync(join(dir, 'out', `j${i}`)).sort()).toEqual(['2026-11-01.csv', '2026-11-02.csv']);
    });
  }, 60_000);
});
