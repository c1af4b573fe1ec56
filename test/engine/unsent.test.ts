// A run stopped (Ctrl-C, a pod's SIGTERM) just as a window's intent to submit is recorded: the
// submit never goes out, so the intent is taken back, and the next run gives no warning of a
// report of unknown ID for a report that was never made (a newcomer saw that warning after one
// clean Ctrl-C in four). The state lives in a store registered by this test, which stops the
// run the moment an intent is written: the race, pinned.

import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { Serialised } from '../../src/engine/state-log.js';
import { registerStateStore } from '../../src/engine/stores/kinds.js';
import type { LockView, StateStore, StateWrites, StoredState, StoreLock } from '../../src/engine/stores/store.js';
import type { StateDoc } from '../../src/engine/state-doc.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { withSandbox } from '../helpers/http.js';
import { join } from 'node:path';

class StopAtIntent implements StateStore {
  readonly name = 'stop://intent';
  text: string | undefined;
  intents = 0;
  constructor(public stop: () => void) {}
  async read(): Promise<StoredState | undefined> {
    return this.text === undefined ? undefined : { text: this.text };
  }
  async lock(): Promise<StoreLock> {
    return { release: async () => undefined };
  }
  writes(document: () => { windows: readonly unknown[] }): StateWrites {
    const writes = new Serialised(async () => {
      this.text = JSON.stringify(document());
      const doc = JSON.parse(this.text) as StateDoc;
      if (doc.windows.some((w) => typeof w.submitting === 'string')) {
        this.intents++;
        this.stop();
      }
    });
    return { write: () => writes.ask(), close: () => writes.settled() };
  }
  async inspectLock(): Promise<LockView | undefined> {
    return undefined;
  }
  async removeLock(): Promise<boolean> {
    return false;
  }
}

describe('a run stopped as its intent to submit is written', () => {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    it(`takes the intent back: nothing was submitted, and the next run warns of nothing (${signal}, three times)`, async () => {
      await withSandbox({ readyDelayMs: 1 }, async (sandbox, dir) => {
        for (let round = 0; round < 3; round++) {
          const context = () => fakeContext({ cwd: dir, env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token } });
          const run = (ctx: ReturnType<typeof context>['ctx']) => runCli(argv('run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--breakdowns', 'DAILY', '-o', `out-${round}.csv`, '--state', 'stop://intent'), { ...ctx, now: () => Date.now() });
          const stopped = context();
          const store = new StopAtIntent(() => stopped.controller.abort(signal));
          const unregister = registerStateStore({ matches: (target) => target === 'stop://intent', open: () => store });
          try {
            const before = sandbox.stats().submitted;
            expect(await run(stopped.ctx), stopped.stderr.text).toBe(signal === 'SIGINT' ? 130 : 143);
            expect(store.intents, 'the intent was written once').toBe(1);
            expect(sandbox.stats().submitted, 'no report submitted').toBe(before);
            const window = (JSON.parse(store.text as string) as StateDoc).windows[0];
            expect(window, 'the intent taken back').toMatchObject({ status: 'pending', reportId: null, submitting: null });
            // the next run, not stopped: no warning, one report
            store.stop = () => undefined;
            const next = context();
            expect(await run(next.ctx), next.stderr.text).toBe(0);
            expect(next.stderr.text).not.toMatch(/unknown ID/);
            expect(sandbox.stats().submitted).toBe(before + 1);
          } finally {
            unregister();
          }
        }
      });
    }, 30_000);
  }
});
