// `jobs run` end to end: the built CLI against a sandbox with three accounts (a token each, each
// its own profile). Every job's files equal the same `run` command line's (read back by
// csv-parse); the sandbox never sees more than `concurrency` reports in progress, nor more than
// `per-profile` for one token; one job failing leaves the others complete.

import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { MOTO, startMoto } from '../helpers/moto.js';
import { POSTGRES_AVAILABLE, startCluster } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';
import { duckdbRows } from '../helpers/duckdb.js';

const PROFILES = ['acme', 'globex', 'initech'];

/** Three profiles, each logged in with email and password: three tokens. */
async function loggedIn(sandbox: Sandbox, dir: string): Promise<Record<string, string>> {
  const env = { REPORTING_CONFIG_DIR: join(dir, '.config') };
  for (const profile of PROFILES) {
    const login = await runCli(['login', '--profile', profile, '--email', sandbox.email, '--password-stdin', '--base-url', sandbox.baseUrl], { env, input: `${sandbox.password}\n` });
    expect(login.code, login.stderr).toBe(0);
  }
  const store = JSON.parse(readFileSync(join(dir, '.config', 'config.json'), 'utf8')).profiles;
  expect(new Set(PROFILES.map((p) => store[p].token)).size).toBe(3);
  return env;
}

const FILE = (extra = '') => `version: 1
concurrency: 4
per-profile: 2
defaults:
  since: 2026-11-01
  until: 2026-11-05
  chunk: day
  poll-interval: 20ms
  state: state/{job}.json
  output: out/{job}/{since}.csv
${extra}jobs:
  - name: buyer-daily
    side: buyer
    profiles: [acme, globex, initech]
    breakdowns: [DAILY, CAMPAIGN]
  - name: seller-apps
    side: seller
    profiles: [acme, globex, initech]
    breakdowns: DAILY,APP
`;

const csvFiles = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((name) => [name, parse(readFileSync(join(dir, name), 'utf8'))]));

describe('jobs run against three accounts', () => {
  it('3 profiles x 2 reports: outputs equal run\'s; at most concurrency at once, per-profile per token; job and profile in every JSON line', async () => {
    // a day's report takes ~0.2 s: the windows overlap, and the limits are what holds them back
    await withSandbox({ workMsPerDay: 200 }, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), FILE('  log-format: json\n'));
      const result = await runCli(['jobs', 'run', '--json'], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      const stats = sandbox.stats();
      expect(stats.submitted).toBe(30);
      expect(stats.peakInProgressAllTokens).toBe(4);
      expect(stats.peakInProgress).toBe(2);
      expect(stats.refused).toBe(0);

      const summary = JSON.parse(result.stdout);
      expect(summary.jobs.map((job: { job: string }) => job.job).sort()).toEqual(PROFILES.flatMap((p) => [`buyer-daily@${p}`, `seller-apps@${p}`]).sort());
      for (const job of summary.jobs) expect(job).toMatchObject({ exitCode: 0, fetched: 5, skipped: 0, failed: 0 });
      expect(summary.peak).toBe(4);

      // every JSON log line names its job and profile
      const lines = result.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
      expect(lines.length).toBeGreaterThan(30);
      for (const line of lines) expect(line.job).toBe(`${line.job.split('@')[0]}@${line.profile}`);
      expect(new Set(lines.map((line) => line.profile))).toEqual(new Set(PROFILES));

      // the same run command lines, one profile each, into another folder
      for (const [side, breakdowns] of [['buyer', 'DAILY,CAMPAIGN'], ['seller', 'DAILY,APP']]) {
        const ref = await runCli(['run', side as string, '--since', '2026-11-01', '--until', '2026-11-05', '--chunk', 'day', '--breakdowns', breakdowns as string,
          '--poll-interval', '20ms', '-o', join(dir, 'ref', side as string, '{since}.csv'), '--profile', 'globex', '-q'], { env });
        expect(ref.code, ref.stderr).toBe(0);
        const expected = csvFiles(join(dir, 'ref', side as string));
        expect(Object.keys(expected)).toHaveLength(5);
        for (const profile of PROFILES) expect(csvFiles(join(dir, 'out', `${side === 'buyer' ? 'buyer-daily' : 'seller-apps'}@${profile}`))).toEqual(expected);
      }

      // a second run: every window done, skipped, nothing submitted
      const before = sandbox.stats().submitted;
      // (the file's `log-format: json` makes the run's own lines JSON too: --log-format text asks for the table)
      const again = await runCli(['jobs', 'run', '--log-format', 'text'], { env, cwd: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(before);
      expect(again.stderr).toMatch(/^JOB +RESULT +FETCHED +SKIPPED +FAILED +ROWS +FILES +TIME$/m);
      expect(again.stderr).toMatch(/^buyer-daily@acme +ok +0 +5 +0 /m);
    });
  });

  it('one job failing leaves the others complete: exit code, summary, and its retry command', async () => {
    // a report of more than 3 days fails ("too much data"); the broken job asks for 5 in one
    await withSandbox({ failOverDays: 3 }, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'jobs.yaml'), `${FILE()}  - name: too-long
    side: buyer
    profile: acme
    chunk: 5d
    no-split: true
    breakdowns: DAILY
    output: out/{job}.csv
`);
      const result = await runCli(['jobs', 'run', '-f', 'jobs.yaml'], { env, cwd: dir });
      expect(result.code).toBe(6);
      expect(result.stderr).toMatch(/^too-long: error: /m);
      expect(result.stderr).toMatch(/^too-long +exit 6 +0 +0 +1 /m);
      expect(result.stderr).toMatch(/^buyer-daily@initech +ok +5 +0 +0 /m);
      expect(result.stderr).toContain('retry: reporting jobs run -f jobs.yaml too-long\n');
      expect(result.stderr).toMatch(/^error: 1 of 7 jobs failed: too-long$/m);
      for (const profile of PROFILES) expect(readdirSync(join(dir, 'out', `seller-apps@${profile}`))).toHaveLength(5);
    });
  });

  it('a job refused for its own settings (exit 2) is to be fixed, then run: the hint says so; FILES counts a job\'s files', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, 'jobs.yaml'), ['version: 1', 'defaults:', '  breakdowns: DAILY', '  poll-interval: 20ms', 'jobs:',
        '  - name: one', '    side: buyer', '    since: 2026-11-01', '    until: 2026-11-02', '    output: out/one.csv',
        '  - name: auto', '    side: buyer', '    since: auto', '    until: 2026-11-02', '    state: state/auto.json', '    output: out/auto.csv', ''].join('\n'));
      const result = await runCli(['jobs', 'run', '-f', 'jobs.yaml'], { env: sandboxEnv(sandbox, dir), cwd: dir });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/^one +ok +1 +0 +0 +\d+ +1 +/m);
      expect(result.stderr).toMatch(/^auto: hint: add --start DATE for the first run \(.*; in a job file, `start: 2026-11-01`\)/m);
      expect(result.stderr).toMatch(/^error: 1 of 2 jobs failed: auto\nhint: see to what the error above says \(a setting, or a state another run holds\), then run it with: reporting jobs run -f jobs\.yaml auto$/m);
    });
  });
});

interface Planned { job: string; profile: string; windows: { since: string; until: string; action: string; reason: string; reportId?: string }[] }

describe('jobs plan and run --plan', () => {
  it('sends no request; its windows are those run then fetches; after a run, all skipped (done)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), FILE());
      const logins = sandbox.requests.length;
      const plan = await runCli(['jobs', 'plan', '--json', '*@acme'], { env, cwd: dir });
      expect(plan.code, plan.stderr).toBe(0);
      expect(sandbox.requests.length).toBe(logins);
      const planned = JSON.parse(plan.stdout).jobs as Planned[];
      expect(planned.map((p) => [p.job, p.profile])).toEqual([['buyer-daily@acme', 'acme'], ['seller-apps@acme', 'acme']]);
      expect(planned[0]?.windows).toEqual(['01', '02', '03', '04', '05'].map((d) => ({ since: `2026-11-${d}`, until: `2026-11-${d}`, action: 'fetch', reason: 'new' })));
      // run --plan says the same for one command line
      const single = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-05', '--chunk', 'day', '--breakdowns', 'DAILY,CAMPAIGN',
        '--state', join(dir, 'state', 'buyer-daily@acme.json'), '-o', join(dir, 'out', 'buyer-daily@acme', '{since}.csv'), '--profile', 'acme', '--plan', '--json'], { env });
      expect(single.code, single.stderr).toBe(0);
      expect(JSON.parse(single.stdout).windows).toEqual(planned[0]?.windows);
      expect(sandbox.requests.length).toBe(logins);

      const ran = await runCli(['jobs', 'run', '--json', '*@acme'], { env, cwd: dir });
      expect(ran.code, ran.stderr).toBe(0);
      const fetched = JSON.parse(ran.stdout).jobs.map((job: { job: string; fetched: number }) => [job.job, job.fetched]);
      expect(fetched).toEqual(planned.map((p) => [p.job, p.windows.filter((w) => w.action === 'fetch').length]));
      expect(sandbox.stats().submitted).toBe(10);

      const after = JSON.parse((await runCli(['jobs', 'plan', '--json', '*@acme'], { env, cwd: dir })).stdout).jobs as Planned[];
      for (const job of after) expect(job.windows.map((w) => `${w.action} ${w.reason}`)).toEqual(Array(5).fill('skip done'));
      const text = await runCli(['jobs', 'plan', 'buyer-daily@acme'], { env, cwd: dir });
      expect(text.stdout).toBe('buyer-daily@acme: 0 windows to fetch, 5 to skip\n' + ['01', '02', '03', '04', '05'].map((d) => `  2026-11-${d}  skip  done\n`).join(''));
    });
  });

  it('after a killed jobs run, plan shows the reports to resume by ID, and the next run resumes them', async () => {
    // reports stay in progress until the clock moves: the run is killed while they wait
    let frozen = true;
    const at = Date.now();
    await withSandbox({ now: () => (frozen ? at : Date.now()) }, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), FILE());
      const child = startCli(['jobs', 'run', 'seller-apps@globex'], { env, cwd: dir });
      const done = collect(child);
      // per-profile: 2, so two of its five windows are submitted, the others wait for a slot
      await until(() => sandbox.stats().submitted === 2, 'two reports submitted');
      // the state records each ID before any wait; give the last write a moment
      await until(() => {
        try {
          return JSON.parse(readFileSync(join(dir, 'state', 'seller-apps@globex.json'), 'utf8')).windows.filter((w: { reportId?: string }) => w.reportId).length === 2;
        } catch {
          return false;
        }
      }, 'two report IDs in the state file');
      expect(sandbox.stats().submitted).toBe(2);
      child.kill('SIGKILL');
      await done;
      const ids = new Set(sandbox.reports().map((r) => r.id));
      const requests = sandbox.requests.length;
      const plan = JSON.parse((await runCli(['jobs', 'plan', '--json', 'seller-apps@globex'], { env, cwd: dir })).stdout).jobs as Planned[];
      expect(sandbox.requests.length).toBe(requests);
      const windows = plan[0]?.windows ?? [];
      expect(windows.map((w) => `${w.since} ${w.action} ${w.reason}`)).toEqual([
        '2026-11-01 resume submitted', '2026-11-02 resume submitted', '2026-11-03 fetch new', '2026-11-04 fetch new', '2026-11-05 fetch new']);
      expect(new Set(windows.flatMap((w) => (w.reportId ? [w.reportId] : [])))).toEqual(ids);
      frozen = false;
      const resumed = await runCli(['jobs', 'run', 'seller-apps@globex'], { env, cwd: dir });
      expect(resumed.code, resumed.stderr).toBe(0);
      // the two reports resumed by ID, three submitted
      expect(sandbox.stats().submitted).toBe(5);
      expect(resumed.stderr).toMatch(/resumed seller report/);
    });
  });
});

describe('jobs run --full-refresh', () => {
  it('every job with a state starts it over: its whole period fetched again, not only what the state lacks', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), FILE());
      const first = await runCli(['jobs', 'run', 'buyer-daily@acme', '-q'], { env, cwd: dir });
      expect(first.code, first.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(5);
      const again = await runCli(['jobs', 'run', 'buyer-daily@acme', '--json'], { env, cwd: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(5);
      const refreshed = await runCli(['jobs', 'run', 'buyer-daily@acme', '--full-refresh', '--json'], { env, cwd: dir });
      expect(refreshed.code, refreshed.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(10);
      expect(JSON.parse(refreshed.stdout).jobs[0]).toMatchObject({ job: 'buyer-daily@acme', exitCode: 0, fetched: 5, skipped: 0 });
      expect(readdirSync(join(dir, 'out', 'buyer-daily@acme'))).toHaveLength(5);
    });
  });
});

describe('throttling stays with the profile that got it', () => {
  it('a 429 storm on one token (at most 1 report in progress for it) barely slows the other profiles', async () => {
    // one job per profile, 8 daily windows each; each report ~0.3 s; 6 at once overall, 3 per profile
    const file = `version: 1
concurrency: 6
per-profile: 3
defaults:
  since: 2026-11-01
  until: 2026-11-08
  chunk: day
  poll-interval: 50ms
  state: state/{job}.json
  output: out/{job}/{since}.csv
jobs:
  - name: daily
    side: buyer
    profiles: [acme, globex, initech]
    breakdowns: DAILY
`;
    const measure = async (storm: boolean) => {
      let throttled: string | undefined;
      return withSandbox({ workMsPerDay: 300, maxRunningFor: (token) => (token === throttled ? 1 : undefined) }, async (sandbox, dir) => {
        const env = await loggedIn(sandbox, dir);
        if (storm) throttled = JSON.parse(readFileSync(join(dir, '.config', 'config.json'), 'utf8')).profiles.acme.token;
        writeFileSync(join(dir, 'reporting.yaml'), file);
        const result = await runCli(['jobs', 'run', '--json'], { env, cwd: dir, timeoutMs: 120_000 });
        expect(result.code, result.stderr).toBe(0);
        const ms = Object.fromEntries(JSON.parse(result.stdout).jobs.map((job: { job: string; durationMs: number }) => [job.job.split('@')[1], job.durationMs]));
        return { ms, refused: sandbox.stats().refused };
      });
    };
    const calm = await measure(false);
    const storm = await measure(true);
    const others = (run: { ms: Record<string, number> }) => Math.max(run.ms.globex ?? 0, run.ms.initech ?? 0);
    console.log(`429 isolation: calm ${JSON.stringify(calm)}; storm on acme ${JSON.stringify(storm)}; others' slowest ${others(calm)} -> ${others(storm)} ms`);
    expect(calm.refused).toBe(0);
    expect(storm.refused).toBeGreaterThan(0);
    // the throttled profile is slower; the others are not held back by it
    expect(storm.ms.acme).toBeGreaterThan(others(storm));
    expect(others(storm)).toBeLessThan(others(calm) * 1.5);
  }, 240_000);
});

describe('jobs loading into DuckDB', () => {
  it('two profiles, one table, two scopes: each profile\'s rows once (the file\'s folder holds the database); a second run changes nothing', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      mkdirSync(join(dir, 'jobs'));
      writeFileSync(join(dir, 'jobs', 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-03
  poll-interval: 20ms
  state: state/{job}.json
  load: duckdb:warehouse.duckdb
  table: buyer_daily
jobs:
  - name: buyer
    side: buyer
    profiles: [acme, globex]
    breakdowns: DAILY,CAMPAIGN
`);
      // run from another folder: the database is the job file's folder's
      const result = await runCli(['jobs', 'run', '--json', '-f', join('jobs', 'reporting.yaml')], { env, cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(dir)).not.toContain('warehouse.duckdb');
      const db = join(dir, 'jobs', 'warehouse.duckdb');
      const summary = JSON.parse(result.stdout).jobs as { job: string; exitCode: number; fetched: number }[];
      expect(summary.map((job) => [job.job, job.exitCode, job.fetched])).toEqual([['buyer@acme', 0, 3], ['buyer@globex', 0, 3]]);

      // the same report as a file, for one account: what each scope must hold, once
      const ref = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-03', '--breakdowns', 'DAILY,CAMPAIGN', '--poll-interval', '20ms',
        '-o', join(dir, 'ref.csv'), '--profile', 'acme', '-q'], { env });
      expect(ref.code, ref.stderr).toBe(0);
      const expected = parse(readFileSync(join(dir, 'ref.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
      expect(expected.length).toBeGreaterThan(3);
      const clicks = expected.reduce((sum, row) => sum + Number(row.clicks), 0);
      const scopes = await duckdbRows(db, 'SELECT _scope, count(*), count(DISTINCT (date, campaignId)), sum(clicks) FROM buyer_daily GROUP BY _scope ORDER BY _scope');
      expect(scopes).toEqual(['acme', 'globex'].map((account) =>
        `base=${sandbox.baseUrl};side=buyer;breakdowns=CAMPAIGN,DAILY;filters=-;account=${account}|${expected.length}|${expected.length}|${clicks}`));

      // again: every window done, nothing submitted, the table as it was (row for row, _loaded_at too)
      const table = await duckdbRows(db, 'SELECT * FROM buyer_daily ORDER BY ALL');
      const submitted = sandbox.stats().submitted;
      const again = await runCli(['jobs', 'run', '-f', join('jobs', 'reporting.yaml')], { env, cwd: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(sandbox.stats().submitted).toBe(submitted);
      expect(again.stderr).toMatch(/^buyer@acme +ok +0 +3 +0 /m);
      expect(await duckdbRows(db, 'SELECT * FROM buyer_daily ORDER BY ALL')).toEqual(table);
    });
  });
});

describe('Ctrl-C during jobs run', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`with many jobs left (${signal}): one hint to run the same command again, five named, not a retry line a job`, async () => {
      // the clock stands still while the run waits, then runs on (reports ready after 1 s)
      let standing: number | undefined = Date.now();
      await withSandbox({ now: () => standing ?? Date.now() }, async (sandbox, dir) => {
        writeFileSync(join(dir, 'reporting.yaml'), ['version: 1', 'concurrency: 2', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-01', '  chunk: day',
          '  poll-interval: 20ms', '  state: state/{job}.json', '  output: out/{job}/{since}.csv', 'jobs:',
          ...Array.from({ length: 8 }, (_, i) => [`  - name: j${i + 1}`, '    side: buyer', '    breakdowns: DAILY']).flat(), ''].join('\n'));
        const child = startCli(['jobs', 'run'], { env: sandboxEnv(sandbox, dir), cwd: dir });
        const done = collect(child);
        await until(() => sandbox.stats().submitted === 2, 'two reports submitted');
        child.kill(signal);
        const result = await done;
        expect(result.code).toBe(signal === 'SIGINT' ? 130 : 143);
        expect(result.stderr).not.toMatch(/^retry:/m);
        expect(result.stderr).toMatch(new RegExp(`^error: interrupted \\(${signal}\\)\nhint: 8 of 8 jobs did not finish \\(j1, j2, j3, j4, j5, and 3 more\\); run the same command again \\(a job with a state goes on from where it stopped; one without starts over\\)\n$`, 'm'));
        // the same command again: the two reports in progress resumed, six submitted, every job done
        standing = undefined;
        const again = await runCli(['jobs', 'run', '-q', '--json'], { env: sandboxEnv(sandbox, dir), cwd: dir });
        expect(again.code, again.stderr).toBe(0);
        expect((JSON.parse(again.stdout) as { jobs: { fetched: number }[] }).jobs.map((job) => job.fetched)).toEqual(Array(8).fill(1));
        expect(sandbox.stats().submitted, 'the two in progress resumed, not submitted again').toBe(8);
      });
    }, 60_000);
  }

  it('exit 130; each running job lists its reports in progress, as run does; nothing half-written', async () => {
    // reports stay in progress until the clock moves: the run is interrupted while they wait
    const at = Date.now();
    await withSandbox({ now: () => at }, async (sandbox, dir) => {
      const env = await loggedIn(sandbox, dir);
      writeFileSync(join(dir, 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-02
  chunk: day
  poll-interval: 20ms
  state: state/{job}.json
jobs:
  - name: files
    side: buyer
    profiles: [acme, globex]
    breakdowns: DAILY
    output: out/{job}/{since}.csv
  - name: table
    side: seller
    profile: initech
    breakdowns: DAILY,APP
    load: duckdb:warehouse.duckdb
`);
      const child = startCli(['jobs', 'run'], { env, cwd: dir });
      const done = collect(child);
      await until(() => sandbox.stats().submitted === 6, 'six reports submitted');
      await until(() => ['files@acme', 'files@globex', 'table'].every((job) => {
        try {
          return JSON.parse(readFileSync(join(dir, 'state', `${job}.json`), 'utf8')).windows.filter((w: { reportId?: string }) => w.reportId).length === 2;
        } catch {
          return false;
        }
      }), 'the report IDs in the state files');
      child.kill('SIGINT');
      const result = await done;
      expect(result.code).toBe(130);
      for (const job of ['files@acme', 'files@globex', 'table']) {
        expect(result.stderr).toMatch(new RegExp(`^${job}: error: interrupted \\(SIGINT\\)$`, 'm'));
        expect(result.stderr).toMatch(new RegExp(`^${job}: hint: .*reports still in progress: [0-9a-f]+ \\(2026-11-01\\), [0-9a-f]+ \\(2026-11-02\\)`, 'm'));
      }
      for (const report of sandbox.reports()) expect(result.stderr).toContain(report.id);
      expect(result.stderr).toMatch(/^files@acme +exit 130 +0 +0 +0 +0 /m);
      expect(result.stderr).toContain('retry: reporting jobs run -f reporting.yaml table\n');
      expect(result.stderr).toMatch(/^error: interrupted \(SIGINT\)\nhint: 3 of 3 jobs did not finish \(files@acme, files@globex, table\); the retry commands above run only those\n$/m);
      // nothing half-written: no output file, no temporary file, no table rows
      expect(readdirSync(dir).sort()).toEqual(['.config', 'reporting.yaml', 'state', 'warehouse.duckdb'].sort());
      expect(readdirSync(join(dir, 'state')).sort()).toEqual(['files@acme.json', 'files@globex.json', 'table.json']);
      expect(await duckdbRows(join(dir, 'warehouse.duckdb'), 'SELECT count(*) FROM seller_report')).toEqual(['0']);
    });
  });
});

describe.skipIf(!MOTO)('jobs writing to S3 (moto on loopback)', () => {
  it('output: s3://BUCKET/{job}/{since}.csv is a URL, not a path: each job\'s objects equal run\'s local files', async () => {
    const moto = await startMoto();
    try {
      await moto.s3.send(new CreateBucketCommand({ Bucket: 'reports' }));
      await withSandbox({}, async (sandbox, dir) => {
        const env = { ...(await loggedIn(sandbox, dir)), HOME: dir, ...moto.env };
        writeFileSync(join(dir, 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-02
  chunk: day
  poll-interval: 20ms
  state: state/{job}.json
jobs:
  - name: daily
    side: buyer
    profiles: [acme, globex]
    breakdowns: DAILY,CAMPAIGN
    output: s3://reports/{job}/{since}.csv
`);
        const result = await runCli(['jobs', 'run'], { env, cwd: dir });
        expect(result.code, result.stderr).toBe(0);
        expect(readdirSync(dir).sort()).toEqual(['.config', 'reporting.yaml', 'state']);
        const ref = await runCli(['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--chunk', 'day', '--breakdowns', 'DAILY,CAMPAIGN', '--poll-interval', '20ms',
          '-o', join(dir, 'ref', '{since}.csv'), '--profile', 'acme', '-q'], { env });
        expect(ref.code, ref.stderr).toBe(0);
        for (const job of ['daily@acme', 'daily@globex']) {
          for (const day of ['2026-11-01', '2026-11-02']) {
            const answer = await moto.s3.send(new GetObjectCommand({ Bucket: 'reports', Key: `${job}/${day}.csv` }));
            const body = Buffer.from(await (answer.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
            expect(body.equals(readFileSync(join(dir, 'ref', `${day}.csv`))), `${job}/${day}.csv`).toBe(true);
          }
        }
      });
    } finally {
      await moto.close();
    }
  }, 60_000);
});

describe('a password in load: ${VAR}', () => {
  it.skipIf(!POSTGRES_AVAILABLE)('loads into Postgres; neither a right nor a wrong password shows in the lines, the summary, the retry commands, --json or the state', async () => {
    const cluster = await startCluster();
    try {
      await withSandbox({}, async (sandbox, dir) => {
        const wrong = 'Wr0ng-pa55-in-env';
        const env = { ...(await loggedIn(sandbox, dir)), PG_PASS: cluster.password, PG_WRONG: wrong };
        const url = (password: string) => cluster.url('postgres', false).replace(`${cluster.user}@`, `${cluster.user}:\${${password}}@`);
        writeFileSync(join(dir, 'reporting.yaml'), `version: 1
defaults:
  since: 2026-11-01
  until: 2026-11-02
  poll-interval: 20ms
  state: state/{job}.json
  breakdowns: DAILY
  log-format: json
jobs:
  - name: good
    side: buyer
    profile: acme
    load: ${url('PG_PASS')}
  - name: bad
    side: buyer
    profile: globex
    load: ${url('PG_WRONG')}
    table: other
`);
        // (--log-format text: the run's summary and retry lines as text; the jobs' own lines stay JSON)
        for (const args of [['jobs', 'run', '-v', '--log-format', 'text'], ['jobs', 'run', '--json', '-v'], ['jobs', 'validate', '--json'], ['jobs', 'plan', '--json']]) {
          const result = await runCli(args, { env, cwd: dir });
          const everything = result.stdout + result.stderr + readdirSync(join(dir, 'state')).map((name) => readFileSync(join(dir, 'state', name), 'utf8')).join('');
          expect(everything).not.toContain(cluster.password);
          expect(everything).not.toContain(wrong);
          if (args[1] !== 'run') continue;
          expect(result.code).toBe(3);
          expect(result.stderr).toMatch(/password authentication failed/);
          if (args[2] === '--json') {
            const jobs = JSON.parse(result.stdout).jobs as { job: string; exitCode: number; error?: string; retry?: string }[];
            expect(jobs.map((job) => [job.job, job.exitCode, job.retry])).toEqual([['good', 0, undefined], ['bad', 3, 'reporting jobs run -f reporting.yaml bad']]);
            expect(jobs[1]?.error).toMatch(/password authentication failed/);
          } else {
            expect(result.stderr).toMatch(/^good +ok +/m);
            expect(result.stderr).toMatch(/^bad +exit 3 +/m);
            expect(result.stderr).toContain('retry: reporting jobs run -f reporting.yaml bad\n');
          }
        }
        expect(cluster.psql('SELECT count(*), count(DISTINCT _window_since) FROM buyer_report', 'postgres').trim()).toBe('2|2');
      });
    } finally {
      cluster.stop();
    }
  }, 90_000);
});

describe('many jobs in one process', () => {
  it('40 jobs at once: no warning on stderr (each job listens to the one Ctrl-C signal), every output written', async () => {
    await withSandbox({ readyDelayMs: 200 }, async (sandbox, dir) => {
      const names = Array.from({ length: 40 }, (_, i) => `day-${i + 1}`);
      writeFileSync(join(dir, 'many.yaml'), ['version: 1', 'concurrency: 40', 'defaults:', '  since: 2026-11-01', '  until: 2026-11-01', '  breakdowns: DAILY', '  output: out/{job}.csv', '  poll-interval: 50ms', 'jobs:',
        ...names.flatMap((name, i) => [`  - name: ${name}`, '    side: buyer', `    campaign-id: [${i + 1}]`]), ''].join('\n'));
      const result = await runCli(['jobs', 'run', '-f', 'many.yaml', '-q'], { env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token }, cwd: dir, timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toMatch(/Warning|MaxListeners/);
      expect(readdirSync(join(dir, 'out')).sort()).toEqual(names.map((name) => `${name}.csv`).sort());
    });
  }, 150_000);
});
