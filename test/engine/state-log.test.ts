// A large state's changes go to FILE.log (src/engine/state-log.ts): what is on disk during a run,
// at its end, and after a crash at any moment (a torn last line, a log left beside a document
// that already holds it, a damaged log).

import { appendFileSync, copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/errors.js';
import { SMALL_WINDOWS } from '../../src/engine/state-log.js';
import { RunState, readState, type StateRequest } from '../../src/engine/state.js';
import type { Window } from '../../src/report/windows.js';
import { HOST } from '../helpers/host.js';
import { tempDir } from '../helpers/tmp.js';

const REQUEST: StateRequest = { side: 'buyer', metrics: ['displays'], breakdowns: ['HOURLY'], filters: {}, params: {}, format: 'csv', output: '/data/{since}.csv', chunk: '1h' };
const now = () => Date.parse('2026-11-21T05:00:00Z');
const FIRST = 1767222000; // 2026-01-01T00:00:00+01:00
const hours = (count: number, from = 0): Window[] => Array.from({ length: count }, (_, i) => ({ since: FIRST + (from + i) * 3600, until: FIRST + (from + i) * 3600 + 3599 }));
const result = (window: Window) => ({ rows: 3, bytes: 120 + (window.since % 7), sha256: 'c'.repeat(64), file: null });
/** the document as a reader of the file sees it */
const raw = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as { windows: { status: string }[] };
const statuses = (path: string) => readState(path)?.windows.map((w) => w.status);

/** The files of a state as a crash would leave them: copied beside, under another name. */
function crashCopy(path: string): string {
  const copy = `${path}.crashed.json`;
  copyFileSync(path, copy);
  if (existsSync(`${path}.log`)) copyFileSync(`${path}.log`, `${copy}.log`);
  return copy;
}

describe('the log of a large state (FILE.log)', () => {
  it('the period a run planned (issue 21, item 5) is a logged change: a crash before the fold keeps it, the fold writes it', async () => {
    const path = join(tempDir(), 'planned.state.json');
    const windows = hours(100);
    const period = { since: (windows[0] as Window).since, until: (windows[99] as Window).until };
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(windows, period);
    await state.submitted(windows[0] as Window, 'r1');
    // on disk: the document as opened (no period), and the log that says it
    expect((raw(path) as { planned?: unknown }).planned).toBeUndefined();
    expect(readFileSync(`${path}.log`, 'utf8')).toContain('"planned":');
    const expected = { sinceUnix: period.since, untilUnix: period.until, since: '2026-01-01T00:00:00+01:00', until: '2026-01-05T03:59:59+01:00', at: '2026-11-21T05:00:00.000Z' };
    expect(readState(crashCopy(path))?.planned).toEqual(expected);
    // a later run that plans another period replaces it
    await state.pending(hours(10, 100), { since: FIRST + 100 * 3600, until: FIRST + 110 * 3600 - 1 });
    expect(readState(crashCopy(path))?.planned?.sinceUnix).toBe(FIRST + 100 * 3600);
    await state.close();
    expect(existsSync(`${path}.log`)).toBe(false);
    expect((raw(path) as { planned?: { untilUnix: number } }).planned?.untilUnix).toBe(FIRST + 110 * 3600 - 1);
  });

  it('the uploads in flight (issue 31, item 3) are a logged change: a crash keeps them for the next run, their end drops them', async () => {
    const path = join(tempDir(), 'uploads.state.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(hours(40));
    const upload = { bucket: 'b', key: 'k/2026-01-01.csv', uploadId: 'u-1', startedAt: '2026-11-21T05:00:00.000Z' };
    await state.uploadStarted(upload);
    await state.uploadStarted({ ...upload, uploadId: 'u-2' });
    expect(readFileSync(`${path}.log`, 'utf8')).toContain('"uploads":');
    // a run killed now: the next one reads both
    const crashed = crashCopy(path);
    expect(readState(crashed)?.uploads?.map((u) => u.uploadId)).toEqual(['u-1', 'u-2']);
    const next = await RunState.open(crashed, REQUEST, { now, host: HOST });
    expect(next.uploads.map((u) => u.uploadId)).toEqual(['u-1', 'u-2']);
    await next.uploadsEnded(['u-1', 'u-2']);
    await next.close();
    expect(readState(crashed)?.uploads).toBeUndefined();
    await state.uploadsEnded(['u-1']);
    await state.close();
    expect(readState(path)?.uploads?.map((u) => u.uploadId)).toEqual(['u-2']);
    // a logged list that is not one is a damaged log
    const copy = crashCopy(path);
    writeFileSync(`${copy}.log`, '');
    const fresh = await RunState.open(copy, REQUEST, { now, host: HOST });
    await fresh.pending(hours(1, 40));
    const damaged = crashCopy(copy);
    appendFileSync(`${damaged}.log`, '{"at":"2026-11-21T05:00:00.000Z","uploads":[{"bucket":"b"}]}\n');
    expect(() => readState(damaged)).toThrow(/damaged at line \d+: uploads is not a list of uploads/);
    await fresh.close();
  });

  it('a logged period that is not one is a damaged log', async () => {
    const path = join(tempDir(), 'bad-planned.state.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(hours(40));
    const copy = crashCopy(path);
    appendFileSync(`${copy}.log`, '{"at":"2026-11-21T05:00:00.000Z","planned":{"sinceUnix":5,"untilUnix":1,"since":"x","until":"y","at":"2026-11-21T05:00:00.000Z"}}\n');
    expect(() => readState(copy)).toThrow(/damaged at line \d+: planned is not a period/);
    await state.close();
  });

  it(`beyond ${SMALL_WINDOWS} windows, each change appends a line of constant size; the file is rewritten at the end and the log goes`, async () => {
    const path = join(tempDir(), 'year.state.json');
    const log = `${path}.log`;
    const windows = hours(200);
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(windows);
    const opened = readFileSync(path, 'utf8');
    expect(raw(path).windows).toEqual([]);
    const sizes: number[] = [statSync(log).size];
    for (const window of windows) {
      await state.submitted(window, `r${window.since}`);
      await state.done(window, result(window));
      sizes.push(statSync(log).size);
    }
    // the same bytes for the 1st window as for the 200th: no rewrite of what came before
    const growth = sizes.slice(1).map((size, i) => size - (sizes[i] as number));
    expect(Math.max(...growth) - Math.min(...growth)).toBeLessThan(10);
    expect(Math.max(...growth)).toBeLessThan(600);
    // a reader of the file sees the document as last written; the next run would see it all
    expect(readFileSync(path, 'utf8')).toBe(opened);
    expect(statuses(path)).toEqual(Array(200).fill('done'));
    await state.close();
    expect(existsSync(log)).toBe(false);
    expect(raw(path).windows.map((w) => w.status)).toEqual(Array(200).fill('done'));
    expect(readState(path)?.windows).toEqual(state.doc.windows);
  });

  it(`a small state (up to ${SMALL_WINDOWS} windows) is rewritten whole at every change, as before: no log`, async () => {
    const path = join(tempDir(), 'small.state.json');
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    const [window] = hours(1) as [Window];
    await state.pending([window]);
    await state.submitted(window, 'r1');
    expect(raw(path).windows.map((w) => w.status)).toEqual(['submitted']);
    expect(existsSync(`${path}.log`)).toBe(false);
    await state.close();
  });

  it('the switch is at 32 windows: 32 are rewritten whole at each change, 33 logged (issue 34: a surviving mutant)', async () => {
    for (const [count, logged] of [[32, false], [33, true]] as const) {
      const path = join(tempDir(), `edge-${count}.state.json`);
      const state = await RunState.open(path, REQUEST, { now, host: HOST });
      const windows = hours(count);
      await state.pending(windows);
      await state.submitted(windows[0] as Window, 'r1');
      expect(existsSync(`${path}.log`), `${count} windows`).toBe(logged);
      expect(raw(path).windows.length, `${count} windows: the document as written`).toBe(logged ? 0 : count);
      await state.close();
      expect(raw(path).windows.length).toBe(count);
    }
  });

  it('after a crash, the next run sees every change acknowledged; a torn last line is ignored; its first write folds the log', async () => {
    const path = join(tempDir(), 'crash.state.json');
    const windows = hours(50);
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(windows);
    for (const window of windows.slice(0, 20)) {
      await state.submitted(window, `r${window.since}`);
      await state.done(window, result(window));
    }
    await state.submitted(windows[20] as Window, 'r-twenty');
    const crashed = crashCopy(path);
    await state.close();
    appendFileSync(`${crashed}.log`, '{"at":"2026-11-21T05:00:00.000Z","set":[[1767294000,1767297599,{"status":"do');

    const next = await RunState.open(crashed, REQUEST, { now, host: HOST });
    expect(next.doc.windows.map((w) => w.status)).toEqual([...Array(20).fill('done'), 'submitted', ...Array(29).fill('pending')]);
    expect(next.plan(windows.slice(19, 22)).map((step) => step.action)).toEqual(['skip', 'resume', 'submit']);
    await next.submitted(windows[21] as Window, 'r-twenty-one');
    // its first write rewrote the document with the log in it, and started a log of its own
    expect(raw(crashed).windows.map((w) => w.status).slice(19, 22)).toEqual(['done', 'submitted', 'pending']);
    expect(readFileSync(`${crashed}.log`, 'utf8')).not.toContain('"do\n');
    await next.close();
    expect(raw(crashed).windows.map((w) => w.status).slice(19, 22)).toEqual(['done', 'submitted', 'submitted']);
    expect(existsSync(`${crashed}.log`)).toBe(false);
  });

  it('a log left beside a document that already holds it (a crash after the fold) is not applied again', async () => {
    const path = join(tempDir(), 'folded.state.json');
    const windows = hours(40);
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(windows);
    await state.submitted(windows[0] as Window, 'r0');
    const midRun = readFileSync(`${path}.log`);
    await state.failed(windows[0] as Window, 'report failed');
    await state.close();
    // the fold happened, the log's removal was lost: the log says submitted, the document failed
    writeFileSync(`${path}.log`, midRun);
    expect(readState(path)?.windows[0]).toMatchObject({ status: 'failed', error: 'report failed' });
    // the same for a log beside another state file altogether
    const other = join(tempDir(), 'other.state.json');
    copyFileSync(path, other);
    writeFileSync(`${other}.log`, midRun);
    expect(readState(other)?.windows[0]?.status).toBe('failed');
  });

  it('a damaged line that is not the last is a usage error naming the line, and the lock is released', async () => {
    const path = join(tempDir(), 'damaged.state.json');
    const windows = hours(40);
    const state = await RunState.open(path, REQUEST, { now, host: HOST });
    await state.pending(windows);
    await state.submitted(windows[0] as Window, 'r0');
    const crashed = crashCopy(path);
    await state.close();
    const lines = readFileSync(`${crashed}.log`, 'utf8').split('\n');
    const cases: [string, RegExp][] = [
      ['{"at":"2026-11-21T05:00:00.000Z","set":[[1,2,{"status":"exploded"}]]}', /line 2: status: /],
      ['{"at":"2026-11-21T05:00:00.000Z","set":[[1,2,{"owner":"me"}]]}', /line 2: set has an unknown field owner/],
      ['not json', /line 2: not JSON/],
    ];
    for (const [line, message] of cases) {
      writeFileSync(`${crashed}.log`, [lines[0], line, ...lines.slice(1)].join('\n'));
      await expect(RunState.open(crashed, REQUEST, { now, host: HOST })).rejects.toThrowError(expect.objectContaining({
        exitCode: EXIT.usage,
        message: expect.stringMatching(message),
        hint: expect.stringContaining(`delete ${crashed}.log`),
      }));
      expect(existsSync(`${crashed}.lock`)).toBe(false);
    }
    // --full-refresh starts over whatever the log says
    const fresh = await RunState.open(crashed, REQUEST, { now, host: HOST, fullRefresh: true });
    await fresh.pending(hours(1));
    await fresh.close();
    expect(readState(crashed)?.windows).toHaveLength(1);
  });
});
