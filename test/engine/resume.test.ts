// Resuming a window's report against the sandbox: the same report is polled, not submitted again;
// one the server forgot (--report-ttl) is submitted again and the log says which it replaces.

import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { configDir } from '../../src/auth/store.js';
import { DEFAULT_GLOBALS, createFactory } from '../../src/factory.js';
import type { LogEvent } from '../../src/engine/events.js';
import { Journal, journalKey, journalRequestOf } from '../../src/engine/journal.js';
import { startReport, type StartDeps } from '../../src/engine/resume.js';
import type { Window } from '../../src/report/windows.js';
import { buildReportRequest, requestParams } from '../../src/report/request.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { fakeContext } from '../helpers/ctx.js';
import { withSandbox } from '../helpers/http.js';
import { tempDir } from '../helpers/tmp.js';

const NOW = DateTime.fromISO('2026-11-21T06:00:00+01:00').toMillis();
const HOUR = 3_600_000;

function setup(sandbox: Sandbox, config = tempDir()) {
  const { ctx } = fakeContext({ env: { REPORTING_TOKEN: sandbox.token, REPORTING_CONFIG_DIR: config }, now: NOW });
  const f = createFactory({ ...ctx, now: () => sandbox.now() }, { ...DEFAULT_GLOBALS, baseUrl: sandbox.baseUrl, retries: 0 });
  const request = buildReportRequest('buyer', { since: 'yesterday', until: 'yesterday', metrics: [], breakdowns: ['DAILY'], filters: {}, params: [], validate: true }, NOW);
  const window: Window = { since: request.since, until: request.until };
  const events: LogEvent[] = [];
  const journal = new Journal(configDir(f.env, f.host.platform), () => sandbox.now());
  const key = journalKey(journalRequestOf(request, sandbox.baseUrl, f.profileName));
  const deps: StartDeps = {
    submit: () => f.client().submit('buyer', requestParams(request)),
    status: (id) => f.client().status(id),
    emit: (event) => events.push(event),
    onSubmitted: (id) => journal.remember(key, id),
  };
  return { f, window, events, journal, key, deps, config };
}

describe('startReport', () => {
  it('an interrupted run started again within the hour resumes its report from the journal', async () => {
    await withSandbox({ readyDelayMs: HOUR, reportTtlMs: 2 * HOUR, now: () => NOW }, async (sandbox) => {
      const first = setup(sandbox);
      const started = await startReport(first.window, undefined, 1, first.deps);
      expect(started.resumed).toBe(false);
      await first.f.close();
      // the run is killed; 20 minutes later it starts again with the same arguments
      sandbox.advance(20 * 60_000);
      const again = setup(sandbox, first.config);
      const remembered = again.journal.recall(again.key);
      expect(remembered?.reportId).toBe(started.reportId);
      const resumed = await startReport(again.window, remembered && { reportId: remembered.reportId, source: 'journal' }, 1, again.deps);
      expect(resumed).toMatchObject({ reportId: started.reportId, resumed: true, status: { status: 'progress' } });
      expect(again.events).toEqual([{ event: 'resumed', window: again.window, reportId: started.reportId, source: 'journal' }]);
      // the sandbox saw one submission only, then a status request for it
      expect(sandbox.reports().map((report) => report.events.map((e) => e.kind))).toEqual([['submit', 'status']]);
      await again.f.close();
    });
  });

  it('a report ID the server forgot (--report-ttl) is submitted again, and the log says so', async () => {
    await withSandbox({ readyDelayMs: 1, reportTtlMs: HOUR, now: () => NOW }, async (sandbox) => {
      const run = setup(sandbox);
      const first = await startReport(run.window, undefined, 1, run.deps);
      sandbox.advance(HOUR + 1);
      const second = await startReport(run.window, { reportId: first.reportId, source: 'state' }, 2, run.deps);
      expect(second.resumed).toBe(false);
      expect(second.reportId).not.toBe(first.reportId);
      expect(run.events.at(-1)).toEqual({ event: 'submitted', window: run.window, reportId: second.reportId, attempt: 2, replaces: first.reportId });
      const reports = sandbox.reports();
      expect(reports).toHaveLength(2);
      expect(reports[0]?.events.map((e) => [e.kind, e.httpStatus])).toEqual([['submit', 200], ['status', 404]]);
      // the journal now points at the new report
      expect(run.journal.recall(run.key)?.reportId).toBe(second.reportId);
      await run.f.close();
    });
  });

  it('other errors while resuming are not mistaken for a forgotten report', async () => {
    const events: LogEvent[] = [];
    const failure = new Error('connection refused');
    const deps: StartDeps = {
      submit: () => Promise.reject(new Error('must not submit')),
      status: () => Promise.reject(failure),
      emit: (event) => events.push(event),
      onSubmitted: () => Promise.resolve(),
    };
    await expect(startReport({ since: 0, until: 1 }, { reportId: 'x', source: 'state' }, 1, deps)).rejects.toBe(failure);
    expect(events).toEqual([]);
  });
});
