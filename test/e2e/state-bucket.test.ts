// `--state s3://BUCKET/KEY` (issue 31, item 1): a run's state in a bucket, for pods with no disk of
// their own. Each process below is a pod: its own empty HOME and configuration folder, the bucket
// (moto on 127.0.0.1, which enforces S3's conditional writes) the only thing they share.

import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { MOTO, SECRET, startMoto, type Moto } from '../helpers/moto.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

const BUCKET = 'fleet';
const DAYS = ['2026-11-01', '2026-11-02', '2026-11-03'];
const dayOf = (unix: number) => DateTime.fromSeconds(unix, { zone: 'Europe/Paris' }).toISODate();

interface StateDoc { version: number; request: { output: string | null }; uploads?: { bucket: string; key: string; uploadId: string }[]; windows: { since: string; status: string; reportId: string | null; file: string | null; rows: number | null; sha256: string | null }[] }

let moto: Moto;
let sandbox: Sandbox;
beforeAll(async () => {
  if (!MOTO) return;
  [moto, sandbox] = await Promise.all([startMoto(), startSandbox({ port: 0, readyDelayMs: 700 })]);
  await moto.s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 60_000);
afterAll(async () => {
  await Promise.all([moto?.close(), sandbox?.close()]);
});

/** A pod: an empty HOME and configuration folder of its own; the token and the bucket from the environment. */
function pod(extra: Record<string, string> = {}) {
  const home = tempDir();
  return { HOME: home, REPORTING_CONFIG_DIR: join(home, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token, ...moto.env, ...extra };
}

async function getText(key: string): Promise<{ text: string; etag: string } | undefined> {
  try {
    const got = await moto.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return { text: await (got.Body as { transformToString(): Promise<string> }).transformToString(), etag: got.ETag ?? '' };
  } catch {
    return undefined;
  }
}
const stateOf = async (key: string): Promise<StateDoc | undefined> => {
  const got = await getText(key);
  return got && (JSON.parse(got.text) as StateDoc);
};
const exists = async (key: string) => moto.s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(() => true, () => false);

/** Submits per day of the sandbox's reports since `from` (its log of requests). */
const submitsSince = (from: number) => {
  const days = new Map<string, number>();
  for (const report of sandbox.reports().slice(from)) {
    const day = dayOf(report.since) as string;
    days.set(day, (days.get(day) ?? 0) + report.events.filter((e) => e.kind === 'submit').length);
  }
  return Object.fromEntries([...days].sort());
};

const runArgs = (state: string, output: string, extra: string[] = []) => ['run', 'buyer', '--since', DAYS[0] as string, '--until', DAYS[2] as string, '--breakdowns', 'DAILY',
  '--chunk', 'day', '--concurrency', '1', '--state', state, '-o', output, '--poll-interval', '50ms', '--log-format', 'json', ...extra];

describe.skipIf(!MOTO)('--state s3://: the state in a bucket', () => {
  it('a chunked run records its windows in the object (the state file\'s format); --since auto goes on; state show and forget take the URL; the lease is gone after', async () => {
    const key = 'plain/buyer.state.json';
    const state = `s3://${BUCKET}/${key}`;
    const output = `s3://${BUCKET}/plain/{since}.csv`;
    const first = await runCli(runArgs(state, output), { env: pod() });
    expect(first.code, first.stderr).toBe(0);
    const doc = await stateOf(key) as StateDoc;
    expect(doc.version).toBe(2);
    expect(doc.request.output).toBe(output);
    expect(doc.windows.map((w) => [w.since.slice(0, 10), w.status, w.file])).toEqual(DAYS.map((day) => [day, 'done', `s3://${BUCKET}/plain/${day}.csv`]));
    expect(await exists(`${key}.lock`), 'the lease is released').toBe(false);

    // another pod, --since auto: every window is done
    const before = sandbox.reports().length;
    const again = await runCli(['run', 'buyer', '--since', 'auto', '--until', DAYS[2] as string, '--breakdowns', 'DAILY', '--chunk', 'day', '--state', state, '-o', output, '--log-format', 'json'], { env: pod() });
    expect(again.code, again.stderr).toBe(0);
    expect(sandbox.reports().length, 'nothing submitted').toBe(before);

    // state show reads it; forget makes the next run fetch that day again, and only it
    const shown = await runCli(['state', 'show', state, '--json'], { env: pod() });
    expect(shown.code, shown.stderr).toBe(0);
    expect((JSON.parse(shown.stdout) as { status: string }[]).map((w) => w.status)).toEqual(['done', 'done', 'done']);
    const forgot = await runCli(['state', 'forget', state, DAYS[1] as string], { env: pod() });
    expect(forgot.code, forgot.stderr).toBe(0);
    expect((await stateOf(key))?.windows.map((w) => w.status)).toEqual(['done', 'pending', 'done']);
    const third = await runCli(runArgs(state, output), { env: pod() });
    expect(third.code, third.stderr).toBe(0);
    expect(submitsSince(before)).toEqual({ [DAYS[1] as string]: 1 });
    expect((await stateOf(key))?.windows.map((w) => w.status)).toEqual(['done', 'done', 'done']);
    for (const out of [first, again, shown, forgot, third]) expect(out.stdout + out.stderr).not.toContain(SECRET);
  }, 120_000);

  for (const round of [1, 2, 3]) {
    it(`two pods at once on one state: one runs, the other exits 2 naming the lock; no window submitted twice (round ${round})`, async () => {
      const key = `race-${round}/buyer.state.json`;
      const state = `s3://${BUCKET}/${key}`;
      const before = sandbox.reports().length;
      const args = runArgs(state, `s3://${BUCKET}/race-${round}/{since}.csv`);
      const [a, b] = await Promise.all([runCli(args, { env: pod() }), runCli(args, { env: pod() })]);
      const codes = [a.code, b.code].sort();
      expect(codes, `${a.stderr}\n${b.stderr}`).toEqual([0, 2]);
      const loser = a.code === 2 ? a : b;
      const error = loser.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; message?: string }).find((line) => line.event === 'error');
      expect(error?.message).toMatch(new RegExp(`^${state.replaceAll('.', '\\.')} is in use by process \\d+`));
      expect(submitsSince(before)).toEqual(Object.fromEntries(DAYS.map((day) => [day, 1])));
      expect((await stateOf(key))?.windows.map((w) => w.status)).toEqual(['done', 'done', 'done']);
      expect(await exists(`${key}.lock`)).toBe(false);
    }, 120_000);
  }

  for (const round of [1, 2]) {
    it(`a pod SIGKILLed after its first submit: a fresh pod exits 2 while the lease lives, and after it resumes the report by its ID (round ${round})`, async () => {
      const key = `killed-${round}/buyer.state.json`;
      const state = `s3://${BUCKET}/${key}`;
      // (6 s: on a busy machine, the kill, the look and the early run take seconds of it)
      const lease = { REPORTING_STATE_LEASE: '6s' };
      const args = runArgs(state, `s3://${BUCKET}/killed-${round}/{since}.csv`);
      const before = sandbox.reports().length;
      const first = startCli(args, { env: pod(lease) });
      const firstDone = collect(first);
      let submitted: StateDoc | undefined;
      await until(async () => {
        submitted = await stateOf(key);
        return submitted?.windows[0]?.status === 'submitted';
      }, 'the first window submitted', 20_000);
      first.kill('SIGKILL');
      await firstDone;
      expect(await exists(`${key}.lock`), 'a killed pod leaves its lease').toBe(true);

      const early = await runCli(args, { env: pod(lease) });
      expect(early.code, early.stderr).toBe(2);
      expect(early.stderr).toMatch(/is in use by process \d+/);
      expect(early.stderr).toMatch(/REPORTING_STATE_LEASE/);
      // state show names the holder; unlock leaves a lease that has not run out (--force would not)
      const shown = await runCli(['state', 'show', state], { env: pod(lease) });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stderr).toMatch(new RegExp(`a run holds ${state.replaceAll('.', '\\.')} \\(process \\d+ on `));
      const unlock = await runCli(['state', 'unlock', state], { env: pod(lease) });
      expect(unlock.code, unlock.stderr).toBe(2);
      expect(unlock.stderr).toMatch(/renewed it \d+ s ago \(a run does every 2 s\); if no run is going there, add --force/);
      expect(await exists(`${key}.lock`)).toBe(true);

      // --lock-wait: the fresh pod waits for the lease to run out (a Kubernetes retry a few
      // seconds after the kill), instead of exiting 2
      const started = Date.now();
      const fresh = await runCli([...args, '--lock-wait', '20s'], { env: pod(lease) });
      expect(fresh.code, fresh.stderr).toBe(0);
      expect(Date.now() - started, 'it waited for the lease').toBeGreaterThan(500);
      const resumed = fresh.stderr.trim().split('\n').map((line) => JSON.parse(line) as { event: string; reportId?: string; source?: string }).filter((line) => line.event === 'resumed');
      expect(resumed.map((line) => [line.reportId, line.source])).toEqual([[submitted?.windows[0]?.reportId, 'state']]);
      expect(submitsSince(before)).toEqual(Object.fromEntries(DAYS.map((day) => [day, 1])));
      expect((await stateOf(key))?.windows.map((w) => w.status)).toEqual(['done', 'done', 'done']);
      expect(await exists(`${key}.lock`)).toBe(false);
    }, 120_000);
  }

  it('a pod SIGKILLed in the middle of a multipart upload: the upload is in the state, and a fresh pod (empty HOME) aborts it', async () => {
    const big = await startSandbox({ port: 0, readyDelayMs: 30, scaleRows: 70_000 });
    try {
      const key = 'upload/buyer.state.json';
      const state = `s3://${BUCKET}/${key}`;
      const env = () => ({ ...pod({ REPORTING_STATE_LEASE: '3s', REPORTING_S3_PART_SIZE: String(5 * 1024 * 1024) }), REPORTING_BASE_URL: big.baseUrl, REPORTING_TOKEN: big.token });
      const args = ['run', 'buyer', '--since', DAYS[0] as string, '--until', DAYS[0] as string, '--breakdowns', 'DAILY', '--chunk', 'day', '--columns', 'all',
        '--state', state, '-o', `s3://${BUCKET}/upload/{since}.csv`, '--poll-interval', '20ms', '--log-format', 'json'];
      const inFlight = async () => (await moto.s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: 'upload/' }))).Uploads ?? [];
      const first = startCli(args, { env: env() });
      const firstDone = collect(first);
      let recorded: StateDoc | undefined;
      await until(async () => {
        recorded = await stateOf(key);
        return (recorded?.uploads?.length ?? 0) > 0;
      }, 'an upload recorded in the state', 30_000);
      first.kill('SIGKILL');
      await firstDone;
      const upload = recorded?.uploads?.[0];
      expect(upload).toMatchObject({ bucket: BUCKET, key: `upload/${DAYS[0]}.csv` });
      expect((await inFlight()).map((u) => u.UploadId)).toContain(upload?.uploadId);

      // (a 3 s lease, not 1 s: on a busy machine moto's answers to renewals took longer than a third of 1 s)
      await new Promise((resolve) => setTimeout(resolve, 3200));
      const fresh = await runCli(args, { env: env(), timeoutMs: 120_000 });
      expect(fresh.code, fresh.stderr).toBe(0);
      expect(await inFlight(), 'no upload left in flight').toEqual([]);
      const after = await stateOf(key);
      expect(after?.uploads ?? []).toEqual([]);
      expect(after?.windows.map((w) => w.status)).toEqual(['done']);
    } finally {
      await big.close();
    }
  }, 120_000);

  it('a state changed by someone else while a run goes: the run\'s next write is refused (exit 2), the other document stays as written', async () => {
    const key = 'changed/buyer.state.json';
    const state = `s3://${BUCKET}/${key}`;
    const child = startCli(runArgs(state, `s3://${BUCKET}/changed/{since}.csv`), { env: pod() });
    const done = collect(child, { timeoutMs: 60_000 });
    let seen: { text: string; etag: string } | undefined;
    await until(async () => {
      seen = await getText(key);
      return seen !== undefined && (JSON.parse(seen.text) as StateDoc).windows[0]?.status === 'submitted';
    }, 'the first window submitted', 20_000);
    // someone else's write: the same document with its first window forgotten
    const other = JSON.parse((seen as { text: string }).text) as StateDoc;
    (other.windows[0] as { status: string }).status = 'pending';
    const theirs = `${JSON.stringify(other, null, 2)}\n`;
    await moto.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: theirs }));
    const result = await done;
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`the state ${state} was changed by someone else since this run read it: not overwritten`);
    expect((await getText(key))?.text).toBe(theirs);
    expect(await exists(`${key}.lock`)).toBe(false);
  }, 120_000);
});
