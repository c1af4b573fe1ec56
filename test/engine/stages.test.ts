// The engine's stages, each alone (issue 19): plan (the windows, their step and why), deliver into
// a destination (what a commit makes visible, and what an abort leaves: nothing), and record (what
// the state file says after a commit or a failure). The whole pipeline runs in the end-to-end suites.

import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { chooseDestination } from '../../src/destinations/index.js';
import { mergePlan } from '../../src/destinations/merge.js';
import { ReportFailedError } from '../../src/errors.js';
import { PLACEHOLDERS, planOutput, resolveRequestedColumns } from '../../src/export/output.js';
import type { LogEvent } from '../../src/engine/events.js';
import { DEFAULT_JOB_FLAGS, type Job } from '../../src/engine/job.js';
import { planRun } from '../../src/engine/plan.js';
import { Recorder } from '../../src/engine/record.js';
import { RunState, stateRequestOf } from '../../src/engine/state.js';
import type { RunView } from '../../src/engine/view.js';
import { columnNames } from '../../src/report/catalog.js';
import { buildReportRequest } from '../../src/report/request.js';
import { parseChunk, type Window } from '../../src/report/windows.js';
import { FakeOutput } from '../helpers/ctx.js';
import { HOST } from '../helpers/host.js';
import { tempDir } from '../helpers/tmp.js';

const PARIS = 'Europe/Paris';
const NOW = DateTime.fromISO('2026-11-25T06:00:00', { zone: PARIS }).toMillis();
const day = (date: string): Window => {
  const start = DateTime.fromISO(date, { zone: PARIS });
  return { since: Math.floor(start.toSeconds()), until: Math.floor(start.endOf('day').toSeconds()) };
};

function job(args: { since: string; until: string; breakdowns?: string[]; output?: string; chunk?: string; state?: string; resume?: boolean }): Job {
  const request = buildReportRequest('buyer', { since: args.since, until: args.until, metrics: ['displays', 'clicks'], breakdowns: args.breakdowns ?? ['DAILY'], filters: {}, params: [], validate: true }, NOW);
  const given = { output: args.output };
  const output = resolveRequestedColumns(planOutput({ ...given, json: false, validate: true }, PLACEHOLDERS, columnNames(['buyer'])), request);
  return {
    side: 'buyer', request, given, output, wait: { maxWaitMs: 60_000 },
    chunk: args.chunk ? { chunk: args.chunk, concurrency: 2, split: true } : undefined,
    flags: { ...DEFAULT_JOB_FLAGS, state: args.state, resume: args.resume ?? true },
    argv: [],
  };
}

const where = (dir: string) => ({ configDir: join(dir, '.config'), cwd: dir, platform: HOST.platform });
const silentView = (events: LogEvent[] = []): RunView => ({ emit: (event) => { events.push(event); }, pool() {}, skip() {}, progress() {}, note() {}, stop() {} });

/** A report body as the API sends it. */
const body = (rows: Record<string, unknown>[], summary: Record<string, unknown> = {}) => Readable.from([Buffer.from(JSON.stringify({ data: rows, summary }))]);

describe('plan: the windows, each with its step and why', () => {
  it('a run of one report is one window; --chunk day makes one per Paris day, DST day included', () => {
    const dir = tempDir();
    const one = planRun(job({ since: '2026-10-24', until: '2026-10-26', output: 'out.csv' }), { ...where(dir), since: day('2026-10-24').since, recall: () => undefined });
    expect(one.shape).toBe('report');
    expect(one.windows.map((p) => [p.step, p.why])).toEqual([['submit', 'new']]);
    const chunked = job({ since: '2026-10-24', until: '2026-10-26', output: 'out-{since}.csv', chunk: 'day' });
    const plan = planRun(chunked, { ...where(dir), chunk: parseChunk('day'), since: chunked.request.since, recall: () => undefined });
    expect(plan.shape).toBe('windows');
    expect(plan.perWindow).toBe(true);
    expect(plan.windows.map((p) => p.window)).toEqual([day('2026-10-24'), day('2026-10-25'), day('2026-10-26')]);
    expect(plan.windows[1] && plan.windows[1].window.until - plan.windows[1].window.since + 1).toBe(25 * 3600);
    expect(plan.fileOf?.(day('2026-10-25'), '')).toBe('out-2026-10-25.csv');
  });

  it('with a state file: done is skipped, submitted resumed by its ID, failed retried, the rest submitted', async () => {
    const dir = tempDir();
    const spec = job({ since: '2026-11-01', until: '2026-11-04', output: 'd-{since}.csv', chunk: 'day', state: 's.json' });
    const state = await RunState.open(join(dir, 's.json'), stateRequestOf(spec.request, 'csv', join(dir, 'd-{since}.csv'), 'day'), { now: () => NOW, host: HOST });
    try {
      const file = join(dir, 'd-2026-11-01.csv');
      writeFileSync(file, 'x');
      await state.submitted(day('2026-11-01'), 'r1');
      await state.done(day('2026-11-01'), { rows: 1, bytes: 1, sha256: null, file });
      await state.submitted(day('2026-11-02'), 'r2');
      await state.submitted(day('2026-11-03'), 'r3');
      await state.failed(day('2026-11-03'), 'boom');
      const input = { ...where(dir), chunk: parseChunk('day'), since: spec.request.since, state, recall: () => ({ reportId: 'from-journal', source: 'journal' as const }) };
      expect(planRun(spec, input).windows.map((p) => [p.step, p.why, p.previous?.reportId])).toEqual([
        ['skip', 'done', undefined], ['resume', 'submitted', 'r2'], ['retry', 'failed', undefined], ['submit', 'new', undefined],
      ]);
      // --no-resume: the submitted window is submitted anew, and says why
      expect(planRun({ ...spec, flags: { ...spec.flags, resume: false } }, input).windows[1]).toMatchObject({ step: 'submit', why: 'no-resume' });
    } finally {
      await state.close();
    }
  });

  it('without a state file, a report remembered by the journal is resumed (unless --no-resume)', () => {
    const dir = tempDir();
    const spec = job({ since: '2026-11-01', until: '2026-11-01' });
    const recall = () => ({ reportId: 'j1', source: 'journal' as const });
    expect(planRun(spec, { ...where(dir), since: spec.request.since, recall }).windows[0]).toMatchObject({ step: 'resume', why: 'journal', previous: { reportId: 'j1' } });
    expect(planRun({ ...spec, flags: { ...spec.flags, resume: false } }, { ...where(dir), since: spec.request.since, recall }).windows[0]).toMatchObject({ step: 'submit', why: 'new' });
  });

  it('refuses what cannot be planned before any request: {reportId} with windows, two windows in one file, one path twice', () => {
    const dir = tempDir();
    const plan = (spec: Job, chunk?: string) => planRun(spec, { ...where(dir), chunk: chunk ? parseChunk(chunk) : undefined, since: spec.request.since, recall: () => undefined });
    expect(() => plan(job({ since: '2026-11-01', until: '2026-11-02', output: 'x-{reportId}.csv', chunk: 'day' }), 'day')).toThrow(/with --chunk, -o takes \{side\}, \{since\} and \{until\}, not \{reportId\}/);
    expect(() => plan(job({ since: '2026-11-01', until: '2026-11-01', breakdowns: ['HOURLY'], output: 'x-{since}.csv', chunk: '6h' }), '6h')).toThrow(/both be written to x-2026-11-01\.csv/);
    expect(() => plan(job({ since: '2026-11-01', until: '2026-11-02', output: 's.json', chunk: 'day', state: 's.json' }), 'day')).toThrow(/--state and -o name the same file/);
  });
});

describe('deliver: destinations', () => {
  const spec = (dir: string, merge = mergePlan('buyer', ['displays'], ['DAILY'], { split: false })) => ({
    format: 'csv' as const, csv: { delimiter: ',', bom: false, excel: false }, merge, cwd: dir, host: HOST, stdout: new FakeOutput(),
    keepUnchanged: false,
  });

  it('a merged file: windows in order, visible only at finish, summed where the plan sums (RANGE)', async () => {
    const dir = tempDir();
    const [a, b] = [day('2026-11-01'), day('2026-11-02')];
    const period = { since: a.since, until: b.until };
    const destination = chooseDestination({ ...spec(dir, mergePlan('buyer', ['displays'], ['COUNTRY'], { split: false })), fileOf: () => 'sum.csv', perWindow: false, whole: false, period });
    for (const [window, rows] of [[a, [{ country: 'FR', displays: 2 }, { country: 'DE', displays: 1 }]], [b, [{ country: 'FR', displays: 3 }]]] as const) {
      const output = await destination.begin(window, window, `r-${window.since}`);
      await output.take(body([...rows]));
      expect(await output.commit()).toEqual([]);
      expect(existsSync(join(dir, 'sum.csv'))).toBe(false);
    }
    const [committed] = await destination.finish();
    expect(committed).toMatchObject({ window: period, file: 'sum.csv', rows: 2, outcome: 'written', holdsOnly: true, reportIds: [`r-${a.since}`, `r-${b.since}`] });
    expect(committed?.covered.map((piece) => piece.window)).toEqual([a, b]);
    expect(parse(readFileSync(join(dir, 'sum.csv')), { columns: true })).toEqual([{ country: 'FR', displays: '5' }, { country: 'DE', displays: '1' }]);
  });

  it('one file per window: a split window is one file, committed by its last piece; an abort leaves nothing', async () => {
    const dir = tempDir();
    const origin = { since: day('2026-11-01').since, until: day('2026-11-02').until };
    const [first, second] = [day('2026-11-01'), day('2026-11-02')];
    const destination = chooseDestination({ ...spec(dir), fileOf: (w) => `d-${w.since}.csv`, perWindow: true, whole: false, period: origin });
    const one = await destination.begin(first, origin, 'r1');
    await one.take(body([{ date: '2026-11-01', displays: 1 }]));
    expect(await one.commit()).toEqual([]);
    const two = await destination.begin(second, origin, 'r2');
    await two.take(body([{ date: '2026-11-02', displays: 2 }]));
    const [committed] = await two.commit();
    expect(committed).toMatchObject({ window: origin, rows: 2, holdsOnly: false, reportIds: ['r1', 'r2'], pieces: [first, second] });
    expect(readFileSync(join(dir, `d-${origin.since}.csv`), 'utf8')).toBe('date,displays\n2026-11-01,1\n2026-11-02,2\n');
    // the next window is aborted half-way: no file, no temporary file
    const next = day('2026-11-03');
    const half = await destination.begin(next, next, 'r3');
    await half.take(body([{ date: '2026-11-03', displays: 3 }]));
    await destination.abort();
    expect(readdirSync(dir)).toEqual([`d-${origin.since}.csv`]);
  });

  it('one file per window of summed rows (no time breakdown): the window holds every row written, as the state records it', async () => {
    const dir = tempDir();
    const window = day('2026-11-23');
    const destination = chooseDestination({ ...spec(dir, mergePlan('buyer', ['displays'], ['COUNTRY'], { split: true })), fileOf: (w) => `c-${w.since}.csv`, perWindow: true, whole: false, period: window });
    const output = await destination.begin(window, window, 'r1');
    await output.take(body([{ country: 'FR', displays: 2 }, { country: 'DE', displays: 1 }]));
    const [committed] = await output.commit();
    expect(committed).toMatchObject({ rows: 2, covered: [{ window, rows: 2 }] });
    expect(parse(readFileSync(join(dir, `c-${window.since}.csv`)), { columns: true })).toHaveLength(2);
  });

  it('a run of one report: the body as received (JSON byte for byte), the file only when committed', async () => {
    const dir = tempDir();
    const window = day('2026-11-01');
    const destination = chooseDestination({ ...spec(dir), format: 'json', fileOf: (_w, id) => `r-${id}.json`, perWindow: false, whole: true, period: window });
    const output = await destination.begin(window, window, 'abc');
    const text = '{"data":[{"displays":1.10}],\n "summary":{"rows":1}}';
    await output.take(Readable.from([Buffer.from(text)]));
    expect(existsSync(join(dir, 'r-abc.json'))).toBe(false);
    const [committed] = await output.commit();
    expect(committed).toMatchObject({ file: 'r-abc.json', rows: 1, bytes: Buffer.byteLength(text), reportIds: ['abc'] });
    expect(readFileSync(join(dir, 'r-abc.json'), 'utf8')).toBe(text);
  });
});

describe('record: what the state file says', () => {
  it('a commit records its windows done with the file; a rewritten merged file drops windows it no longer holds; a failed report is failed', async () => {
    const dir = tempDir();
    const spec = job({ since: '2026-11-01', until: '2026-11-03', output: 'all.csv', chunk: 'day', state: 's.json' });
    const path = join(dir, 's.json');
    const state = await RunState.open(path, stateRequestOf(spec.request, 'csv', join(dir, 'all.csv'), 'day'), { now: () => NOW, host: HOST });
    const events: LogEvent[] = [];
    const recorder = new Recorder(silentView(events), state, undefined, () => undefined, new AbortController().signal);
    const [a, b, c] = [day('2026-11-01'), day('2026-11-02'), day('2026-11-03')];
    try {
      const file = join(dir, 'all.csv');
      writeFileSync(file, 'x\n');
      const committed = (covered: Window[]) => ({ window: { since: covered[0]!.since, until: covered.at(-1)!.until }, covered: covered.map((window) => ({ window, rows: 1 })), pieces: covered, holdsOnly: true, file: 'all.csv', path: file, rows: covered.length, bytes: 2, outcome: 'written' as const, reportIds: ['r'] });
      await recorder.committed(committed([a, b]));
      await recorder.committed(committed([b]));
      await state.submitted(c, 'r3');
      recorder.knows(c, 'r3');
      recorder.pool({ type: 'failed', window: c, origin: c, error: new ReportFailedError('report r3 ended in status "failed"', 'r3') });
      await state.close();
      const doc = JSON.parse(readFileSync(path, 'utf8')) as { windows: { since: string; status: string; file: string | null; error: string | null }[] };
      expect(doc.windows.map((w) => [w.since.slice(0, 10), w.status, w.file])).toEqual([['2026-11-02', 'done', file], ['2026-11-03', 'failed', null]]);
      expect(events.map((event) => event.event)).toEqual(['written', 'written', 'failed']);
    } finally {
      await state.close();
    }
  });
});
