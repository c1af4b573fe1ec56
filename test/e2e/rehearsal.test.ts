// A cluster rehearsal (issue 31, item 6), with the state in a bucket: processes as pods — each its
// own empty HOME and configuration folder, a working folder holding only the job file, every
// credential from the environment (a token per profile, the bucket's keys) — run
// `jobs run --shard K/4 --log-format json` against a sandbox of 3 accounts, state and outputs in a
// bucket (moto, 127.0.0.1). Then a pod killed after its first submit and a fresh pod for its shard,
// two pods of one shard at once, and a second wave that has nothing to do. Every object, every
// state and every report the sandbox saw is checked.

import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli, type Result } from '../helpers/cli.js';
import { MOTO, SECRET, startMoto, type Moto } from '../helpers/moto.js';
import { POSTGRES_AVAILABLE, startCluster, type Cluster } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/wait.js';

const BUCKET = 'fleet';
const PROFILES = ['acme', 'globex', 'initech'];
const dayOf = (ms: number) => DateTime.fromSeconds(ms, { zone: 'Europe/Paris' }).toISODate() as string;

let moto: Moto;
let sandbox: Sandbox;
beforeAll(async () => {
  if (!MOTO) return;
  [moto, sandbox] = await Promise.all([startMoto(), startSandbox({ port: 0, readyDelayMs: 400, accounts: 3 })]);
  await moto.s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 60_000);
afterAll(async () => {
  await Promise.all([moto?.close(), sandbox?.close()]);
});

/** A job file of 6 jobs (buyer and seller for each of 3 profiles, 3 day windows each), its state
 * and outputs under `prefix` in the bucket, alone in a folder of its own. */
function jobFolder(prefix: string, since: string, until: string): string {
  const folder = tempDir();
  writeFileSync(join(folder, 'reporting.yaml'), [
    'version: 1', 'concurrency: 4', 'defaults:', `  since: ${since}`, `  until: ${until}`, '  chunk: day', '  breakdowns: [DAILY]',
    `  state: s3://${BUCKET}/${prefix}/state/{job}.json`, `  output: s3://${BUCKET}/${prefix}/out/{job}/{since}.csv`, '  poll-interval: 50ms',
    'jobs:', '  - name: buyer', '    side: buyer', `    profiles: [${PROFILES.join(', ')}]`,
    '  - name: seller', '    side: seller', `    profiles: [${PROFILES.join(', ')}]`, '',
  ].join('\n'));
  return folder;
}

/** A pod's environment: nothing but what a Kubernetes manifest would give it. */
function pod(): Record<string, string> {
  const home = tempDir();
  mkdirSync(join(home, '.config'));
  return {
    HOME: home, REPORTING_CONFIG_DIR: join(home, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_STATE_LEASE: '5s',
    ...Object.fromEntries(PROFILES.map((profile, i) => [`REPORTING_TOKEN_${profile.toUpperCase()}`, sandbox.accounts[i]?.token as string])),
    ...moto.env,
  };
}

const jobsRun = (folder: string, shard: string) => startCli(['jobs', 'run', '--shard', shard, '--log-format', 'json'], { env: pod(), cwd: folder });

interface Event { event: string; job?: string; reportId?: string; source?: string; message?: string; exitCode?: number }
/** Every stderr line is JSON (the test fails otherwise). */
const eventsOf = (result: Result): Event[] => result.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Event);

async function text(key: string): Promise<string | undefined> {
  try {
    return await ((await moto.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body as { transformToString(): Promise<string> }).transformToString();
  } catch {
    return undefined;
  }
}
async function keys(prefix: string): Promise<string[]> {
  const listed = await moto.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key as string).sort();
}

/** Submits by (account, side, day) among the sandbox's reports since `from`. */
function submits(from: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const report of sandbox.reports().slice(from)) {
    const key = `${report.account} ${report.side} ${dayOf(report.since)}`;
    counts.set(key, (counts.get(key) ?? 0) + report.events.filter((e) => e.kind === 'submit').length);
  }
  return counts;
}

interface StateDoc { request: { server: { profile: string } }; windows: { since: string; status: string; file: string; sha256: string; rows: number; reportId: string; submitting?: string | null }[]; uploads?: unknown[] }

/** Every job of `prefix`: its state done for each day, its objects those the state records (their
 * SHA-256), each object the day's rows (csv-parse), each profile's numbers its own account's. */
async function checkAll(prefix: string, days: readonly string[]): Promise<void> {
  const jobs = ['buyer', 'seller'].flatMap((side) => PROFILES.map((profile) => `${side}@${profile}`));
  expect(await keys(`${prefix}/state/`)).toEqual(jobs.map((job) => `${prefix}/state/${job}.json`).sort());
  const totals = new Map<string, number>();
  for (const job of jobs) {
    const doc = JSON.parse(await text(`${prefix}/state/${job}.json`) as string) as StateDoc;
    expect(doc.request.server.profile).toBe(job.split('@')[1]);
    expect(doc.windows.map((w) => [w.since.slice(0, 10), w.status]), job).toEqual(days.map((day) => [day, 'done']));
    expect(doc.uploads ?? []).toEqual([]);
    for (const window of doc.windows) {
      const key = window.file.replace(`s3://${BUCKET}/`, '');
      const body = await text(key) as string;
      expect(createHash('sha256').update(body).digest('hex'), key).toBe(window.sha256);
      const rows = parse(body, { columns: true }) as Record<string, string>[];
      expect(rows.length, key).toBe(window.rows);
      expect(new Set(rows.map((row) => row.date?.slice(0, 10))), key).toEqual(new Set([window.since.slice(0, 10)]));
      totals.set(job, (totals.get(job) ?? 0) + rows.reduce((sum, row) => sum + Number(row.displays ?? row.impressions ?? 0), 0));
    }
    expect(await text(`${prefix}/state/${job}.json.lock`), `${job}: its lease released`).toBeUndefined();
  }
  expect(await keys(`${prefix}/out/`)).toHaveLength(jobs.length * days.length);
  // three accounts, three sets of numbers, for each side
  for (const side of ['buyer', 'seller']) expect(new Set(PROFILES.map((profile) => totals.get(`${side}@${profile}`))).size).toBe(3);
}

/** Each (account, side, day) submitted once; but a window whose submit was in flight when its pod
 * was killed (`submitting` in the state, no report ID): the report the killed pod asked for may be
 * running, of an ID nobody knows, and the next pod submits it anew (twice at most). */
function exactlyOnce(counts: Map<string, number>, days: readonly string[], inFlight: ReadonlySet<string> = new Set()): void {
  exactlyOnceOf(counts, days, inFlight);
}

function exactlyOnceOf(counts: Map<string, number>, days: readonly string[], inFlight: ReadonlySet<string> = new Set()): void {
  const expected = [1, 2, 3].flatMap((account) => ['buyer', 'seller'].flatMap((side) => days.map((day) => `${account} ${side} ${day}`)));
  expect([...counts.keys()].sort()).toEqual(expected.sort());
  for (const key of expected) {
    if (inFlight.has(key)) expect([1, 2], key).toContain(counts.get(key));
    else expect(counts.get(key), key).toBe(1);
  }
}

describe.skipIf(!MOTO)('a cluster rehearsal: pods with no disk, the state in a bucket', () => {
  it('4 pods at once, then a second wave with nothing to do; a pod killed after its first submit and a fresh one; two pods of one shard at once', async () => {
    // wave 1: 4 pods, one per shard
    const days = ['2026-11-01', '2026-11-02', '2026-11-03'];
    const first = jobFolder('r1', days[0] as string, days[2] as string);
    const before = sandbox.reports().length;
    const wave = await Promise.all(['1/4', '2/4', '3/4', '4/4'].map((shard) => collect(jobsRun(first, shard), { timeoutMs: 120_000 })));
    for (const result of wave) {
      expect(result.code, result.stderr).toBe(0);
      expect(eventsOf(result).filter((e) => e.event === 'job').every((e) => e.exitCode === 0)).toBe(true);
      expect(result.stdout + result.stderr).not.toContain(SECRET);
      for (const token of sandbox.accounts.map((a) => a.token)) expect(result.stdout + result.stderr).not.toContain(token);
    }
    // every job in exactly one shard
    const ran = wave.flatMap((result) => eventsOf(result).filter((e) => e.event === 'job').map((e) => e.job)).sort();
    expect(ran).toEqual(['buyer', 'seller'].flatMap((side) => PROFILES.map((profile) => `${side}@${profile}`)).sort());
    exactlyOnce(submits(before), days);
    await checkAll('r1', days);

    // a second wave of fresh pods: nothing submitted, nothing rewritten
    const after = sandbox.reports().length;
    const again = await Promise.all(['1/4', '2/4', '3/4', '4/4'].map((shard) => collect(jobsRun(first, shard), { timeoutMs: 120_000 })));
    for (const result of again) expect(result.code, result.stderr).toBe(0);
    expect(sandbox.reports().length, 'nothing submitted by the second wave').toBe(after);
    await checkAll('r1', days);

    // a pod killed after its first submit; a fresh pod for its shard resumes the report by its ID
    const killedDays = ['2026-11-04', '2026-11-05', '2026-11-06'];
    const second = jobFolder('r2', killedDays[0] as string, killedDays[2] as string);
    const listed = await runCli(['jobs', 'list', '--shard', '1/4'], { env: pod(), cwd: second });
    expect(listed.code, listed.stderr).toBe(0);
    const shardJobs = listed.stdout.trim().split('\n');
    const start = sandbox.reports().length;
    const doomed = jobsRun(second, '1/4');
    const doomedDone = collect(doomed, { timeoutMs: 120_000 });
    let submittedIds: string[] = [];
    await until(async () => {
      const docs = await Promise.all(shardJobs.map(async (job) => text(`r2/state/${job}.json`)));
      submittedIds = docs.flatMap((doc) => (doc ? (JSON.parse(doc) as StateDoc).windows.filter((w) => w.status === 'submitted').map((w) => w.reportId) : []));
      return submittedIds.length > 0;
    }, 'a window of shard 1/4 submitted', 30_000);
    doomed.kill('SIGKILL');
    await doomedDone;
    // what the killed pod left: reports submitted (IDs recorded), and submits in flight (no ID)
    const inFlight = new Set<string>();
    submittedIds = [];
    for (const job of shardJobs) {
      const doc = await text(`r2/state/${job}.json`);
      if (!doc) continue;
      const [side, profile] = job.split('@') as [string, string];
      for (const window of (JSON.parse(doc) as StateDoc).windows) {
        if (window.status === 'submitted') submittedIds.push(window.reportId);
        if (window.submitting && window.status !== 'submitted') inFlight.add(`${PROFILES.indexOf(profile) + 1} ${side} ${window.since.slice(0, 10)}`);
      }
    }
    expect(submittedIds.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 5200)); // the lease's time
    const fresh = await collect(jobsRun(second, '1/4'), { timeoutMs: 120_000 });
    expect(fresh.code, fresh.stderr).toBe(0);
    const resumed = eventsOf(fresh).filter((e) => e.event === 'resumed').map((e) => e.reportId);
    for (const id of submittedIds) expect(resumed, 'the killed pod\'s reports resumed by their IDs').toContain(id);
    // a submit in flight at the kill is said, and submitted anew
    const warned = eventsOf(fresh).filter((e) => e.event === 'warning' && /a report of unknown ID may be running/.test(e.message ?? ''));
    expect(warned).toHaveLength(inFlight.size);

    // two pods of one shard at once: each job run by one of them, the other says why
    const pair = await Promise.all([collect(jobsRun(second, '2/4'), { timeoutMs: 120_000 }), collect(jobsRun(second, '2/4'), { timeoutMs: 120_000 })]);
    const losers = pair.filter((result) => result.code !== 0);
    expect(losers.length, pair.map((r) => r.stderr).join('\n')).toBeGreaterThan(0);
    for (const loser of losers) {
      const errors = eventsOf(loser).filter((e) => e.event === 'job' && e.exitCode !== 0);
      expect(errors.length).toBeGreaterThan(0);
      expect(loser.stderr).toMatch(/is in use by process \d+/);
    }
    // the rest of the shards, then every report of the period exactly once
    for (const shard of ['3/4', '4/4']) {
      const result = await collect(jobsRun(second, shard), { timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
    }
    // a job the pair's loser could not run is run now by a fresh pod of its shard
    const retry = await collect(jobsRun(second, '2/4'), { timeoutMs: 120_000 });
    expect(retry.code, retry.stderr).toBe(0);
    exactlyOnce(submits(start), killedDays, inFlight);
    await checkAll('r2', killedDays);
  }, 300_000);
});

// The same fleet loading into Postgres with `state: table` (issue 31, items 2 and 6): no bucket
// and no disk; each job's state is rows of _reporting_state beside its table's rows, the lock a
// session advisory lock that a killed pod's connection frees at once.
describe.skipIf(!POSTGRES_AVAILABLE)('a cluster rehearsal: pods with no disk, loading into Postgres with state: table', () => {
  let cluster: Cluster;
  let pgSandbox: Sandbox;
  beforeAll(async () => {
    [cluster, pgSandbox] = await Promise.all([startCluster(), startSandbox({ port: 0, readyDelayMs: 400, accounts: 3 })]);
  }, 60_000);
  afterAll(async () => {
    cluster?.stop();
    await pgSandbox?.close();
  });

  const JOBS = ['buyer', 'seller'].flatMap((side) => PROFILES.map((profile) => `${side}@${profile}`));

  function tableFolder(db: string, since: string, until: string): string {
    const folder = tempDir();
    writeFileSync(join(folder, 'reporting.yaml'), [
      'version: 1', 'concurrency: 4', 'defaults:', `  since: ${since}`, `  until: ${until}`, '  chunk: day', '  breakdowns: [DAILY]',
      '  state: table', `  load: ${cluster.url(db, false)}`, '  poll-interval: 50ms',
      'jobs:', '  - name: buyer', '    side: buyer', `    profiles: [${PROFILES.join(', ')}]`,
      '  - name: seller', '    side: seller', `    profiles: [${PROFILES.join(', ')}]`, '',
    ].join('\n'));
    return folder;
  }
  /** a pod: its own empty HOME, a token per profile, the database's password (a Secret) */
  function pgPod(): Record<string, string> {
    const home = tempDir();
    mkdirSync(join(home, '.config'));
    return {
      HOME: home, REPORTING_CONFIG_DIR: join(home, '.config'), REPORTING_BASE_URL: pgSandbox.baseUrl, PGPASSWORD: cluster.password,
      ...Object.fromEntries(PROFILES.map((profile, i) => [`REPORTING_TOKEN_${profile.toUpperCase()}`, pgSandbox.accounts[i]?.token as string])),
    };
  }
  const run = (folder: string, shard: string) => startCli(['jobs', 'run', '--shard', shard, '--log-format', 'json'], { env: pgPod(), cwd: folder });
  function pgSubmits(from: number): Map<string, number> {
    const counts = new Map<string, number>();
    for (const report of pgSandbox.reports().slice(from)) {
      const key = `${report.account} ${report.side} ${dayOf(report.since)}`;
      counts.set(key, (counts.get(key) ?? 0) + report.events.filter((e) => e.kind === 'submit').length);
    }
    return counts;
  }
  interface Entry { since: string; status: string; reportId: string | null; submitting?: string | null; loaded: { rows: number; reportIds?: string[] } | null }
  /** each job's windows (account=PROFILE in the key) */
  function states(db: string): Map<string, Entry[]> {
    const out = new Map<string, Entry[]>();
    const exists = cluster.psql("SELECT count(*) FROM information_schema.tables WHERE table_name = '_reporting_state'", db).trim();
    if (exists === '0') return out;
    for (const line of cluster.psql('SELECT state_key, body FROM _reporting_state WHERE window_since >= 0 ORDER BY state_key, window_since', db).split('\n').filter(Boolean)) {
      const [key, body] = [line.slice(0, line.indexOf('|')), line.slice(line.indexOf('|') + 1)];
      const side = /side=(\w+)/.exec(key)?.[1] as string;
      const account = /account=(\w+)$/.exec(key)?.[1] as string;
      const job = `${side}@${account}`;
      out.set(job, [...out.get(job) ?? [], JSON.parse(body) as Entry]);
    }
    return out;
  }
  /** Every job: its windows done, each with the rows and reports its table holds under its scope. */
  function checkTables(db: string, days: readonly string[]): void {
    const all = states(db);
    expect([...all.keys()].sort()).toEqual([...JOBS].sort());
    const totals = new Map<string, number>();
    for (const side of ['buyer', 'seller']) {
      const rows = cluster.psql(`SELECT _scope, to_char(_window_since AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD'), count(*), string_agg(DISTINCT _report_id, ','), sum(displays) FROM ${side}_report GROUP BY 1, 2 ORDER BY 1, 2`, db).split('\n').filter(Boolean);
      for (const line of rows) {
        const [scope, day, count, ids, sum] = line.split('|') as [string, string, string, string, string];
        const job = `${side}@${/account=(\w+)$/.exec(scope)?.[1]}`;
        const entry = all.get(job)?.find((e) => e.since.slice(0, 10) === day);
        expect(entry?.status, `${job} ${day}`).toBe('done');
        expect(entry?.loaded?.rows, `${job} ${day}`).toBe(Number(count));
        expect([...entry?.loaded?.reportIds ?? []].sort().join(','), `${job} ${day}`).toBe(ids.split(',').sort().join(','));
        totals.set(job, (totals.get(job) ?? 0) + Number(sum));
      }
    }
    for (const job of JOBS) expect(all.get(job)?.map((e) => [e.since.slice(0, 10), e.status]), job).toEqual(days.map((day) => [day, 'done']));
    for (const side of ['buyer', 'seller']) expect(new Set(PROFILES.map((profile) => totals.get(`${side}@${profile}`))).size).toBe(3);
    // no lock left: no session holds an advisory lock
    expect(cluster.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", db).trim()).toBe('0');
  }

  it('4 pods at once, a second wave with nothing to do, a pod killed after its first submit, two pods of one shard', async () => {
    cluster.psql('CREATE DATABASE rehearsal');
    const days = ['2026-11-01', '2026-11-02', '2026-11-03'];
    const folder = tableFolder('rehearsal', days[0] as string, days[2] as string);
    const before = pgSandbox.reports().length;
    const wave = await Promise.all(['1/4', '2/4', '3/4', '4/4'].map((shard) => collect(run(folder, shard), { timeoutMs: 120_000 })));
    for (const result of wave) {
      expect(result.code, result.stderr).toBe(0);
      eventsOf(result);
      expect(result.stdout + result.stderr).not.toContain(cluster.password);
    }
    exactlyOnceOf(pgSubmits(before), days);
    checkTables('rehearsal', days);
    const after = pgSandbox.reports().length;
    const again = await Promise.all(['1/4', '2/4', '3/4', '4/4'].map((shard) => collect(run(folder, shard), { timeoutMs: 120_000 })));
    for (const result of again) expect(result.code, result.stderr).toBe(0);
    expect(pgSandbox.reports().length, 'nothing submitted by the second wave').toBe(after);

    // a pod killed after its first submit: a fresh pod at once (the session's lock went with it)
    cluster.psql('CREATE DATABASE rehearsal2');
    const killedDays = ['2026-11-04', '2026-11-05', '2026-11-06'];
    const second = tableFolder('rehearsal2', killedDays[0] as string, killedDays[2] as string);
    const start = pgSandbox.reports().length;
    const doomed = run(second, '1/4');
    const doomedDone = collect(doomed, { timeoutMs: 120_000 });
    await until(async () => [...states('rehearsal2').values()].flat().some((e) => e.status === 'submitted'), 'a window of shard 1/4 submitted', 30_000);
    doomed.kill('SIGKILL');
    await doomedDone;
    const left = [...states('rehearsal2')].flatMap(([job, entries]) => entries.map((e) => ({ job, ...e })));
    const submittedIds = left.filter((e) => e.status === 'submitted').map((e) => e.reportId);
    const inFlight = new Set(left.filter((e) => e.submitting && e.status !== 'submitted')
      .map((e) => `${PROFILES.indexOf(e.job.split('@')[1] as string) + 1} ${e.job.split('@')[0]} ${e.since.slice(0, 10)}`));
    expect(submittedIds.length).toBeGreaterThan(0);
    const fresh = await collect(run(second, '1/4'), { timeoutMs: 120_000 });
    expect(fresh.code, fresh.stderr).toBe(0);
    const resumed = eventsOf(fresh).filter((e) => e.event === 'resumed').map((e) => e.reportId);
    for (const id of submittedIds) expect(resumed, 'the killed pod\'s reports resumed by their IDs').toContain(id);

    // two pods of one shard at once: each job run by one of them, the other says why
    const pair = await Promise.all([collect(run(second, '2/4'), { timeoutMs: 120_000 }), collect(run(second, '2/4'), { timeoutMs: 120_000 })]);
    const losers = pair.filter((result) => result.code !== 0);
    expect(losers.length, pair.map((r) => r.stderr).join('\n')).toBeGreaterThan(0);
    for (const loser of losers) expect(loser.stderr).toMatch(/is in use by process \d+/);
    for (const shard of ['3/4', '4/4', '2/4']) {
      const result = await collect(run(second, shard), { timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
    }
    exactlyOnceOf(pgSubmits(start), killedDays, inFlight);
    checkTables('rehearsal2', killedDays);
  }, 300_000);
});
