// A run's plan, shown and not run (`run --plan`, `jobs plan`): the engine's own stage 1 (plan.ts)
// over the state file as it is (read without its lock, nothing written) and the journal, sending
// no request. Each window: fetch (new, lookback, failed last time, ...), resume (a report ID an
// earlier run submitted) or skip (done), in the plan's own words.

import { configDir } from '../auth/store.js';
import type { EngineDeps } from './deps.js';
import { checkChunk, parseChunk, windowArgs } from '../report/windows.js';
import { journalKeyOf, recall, recordedOutput, stateRequestOfJob } from './engine.js';
import type { Job } from './job.js';
import { Journal } from './journal.js';
import { planRun, precheck } from './plan.js';
import { RunState } from './state.js';
import { jobStateStore } from './load.js';

export interface PreviewWindow {
  /** as `run --since/--until` take them: Paris dates (first and last day), or Unix seconds for a
   * window that is not whole days */
  since: string;
  until: string;
  action: 'fetch' | 'resume' | 'skip';
  /** the plan's word: new, lookback, failed, incomplete, missing-file, full-refresh, merged,
   * no-resume (fetch); submitted, journal (resume); done (skip) */
  reason: string;
  reportId?: string;
}

/** The windows `job` would fetch, resume or skip now. Sends no request, writes nothing. */
export async function previewJob(job: Job, f: EngineDeps): Promise<PreviewWindow[]> {
  const chunk = job.chunk ? parseChunk(job.chunk.chunk) : undefined;
  if (chunk) checkChunk(chunk, job.request.breakdowns);
  const where = { chunk, configDir: configDir(f.env, f.host.platform), cwd: f.cwd, platform: f.host.platform };
  if (!job.flags.state) {
    const journal = { journal: new Journal(where.configDir, f.now), keyOf: journalKeyOf(job, f) };
    return render(planRun(job, { ...where, since: job.request.since, recall: (w) => recall(job.flags.resume ? journal : undefined, w) }).windows);
  }
  precheck(job, { ...where, since: job.request.since });
  const output = recordedOutput(job, f);
  const state = await RunState.peek(jobStateStore({ ...job, flags: { ...job.flags, state: job.flags.state } }, f), stateRequestOfJob(job, f, output, chunk), { now: f.calendar.now, fullRefresh: job.flags.fullRefresh });
  const start = state.start(job.flags.sinceAuto ? 'auto' : job.request.since, job.request.until, job.flags.lookbackDays, job.flags.startAt);
  if (start.upToDate) return [];
  return render(planRun(job, { ...where, since: state.windowStartOf(start.since), state, lookbackFrom: start.lookbackFrom, recall: () => undefined, prechecked: job.request.since }).windows);
}

function render(windows: ReturnType<typeof planRun>['windows']): PreviewWindow[] {
  return windows.map((p) => ({
    ...windowArgs(p.window),
    action: p.step === 'skip' ? 'skip' : p.step === 'resume' ? 'resume' : 'fetch',
    reason: p.why,
    ...(p.previous ? { reportId: p.previous.reportId } : {}),
  }));
}

/** The plan as lines for people: one a window. */
export function previewLines(windows: readonly PreviewWindow[]): string[] {
  if (windows.length === 0) return ['nothing to fetch: every window is done'];
  // columns: each padded to its longest (`skip  done` under `resume  submitted`)
  const period = (w: PreviewWindow) => (w.since === w.until ? w.since : `${w.since}..${w.until}`);
  const periods = Math.max(...windows.map((w) => period(w).length));
  const actions = Math.max(...windows.map((w) => w.action.length));
  return windows.map((w) => `${period(w).padEnd(periods)}  ${w.action.padEnd(actions)}  ${w.reason}${w.reportId ? `  ${w.reportId}` : ''}`.trimEnd());
}
