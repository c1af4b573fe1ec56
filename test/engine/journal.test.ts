import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDir } from '../../src/auth/store.js';
import { HOST } from '../helpers/host.js';
import { JOURNAL_TTL_MS, Journal, journalKey, journalRequestOf, type JournalRequest } from '../../src/engine/journal.js';
import { buildReportRequest } from '../../src/report/request.js';
import { bundleForChild } from '../helpers/bundle.js';
import { FIXED_NOW } from '../helpers/ctx.js';
import { tempDir } from '../helpers/tmp.js';

const REQUEST: JournalRequest = {
  side: 'buyer', since: 1763593200, until: 1763679599, metrics: ['displays', 'clicks'], breakdowns: ['DAILY'],
  filters: { campaignId: ['42', '7'] }, params: {}, baseUrl: 'http://127.0.0.1:8787', profile: 'default',
};

function clock(start = FIXED_NOW) {
  let now = start;
  return { now: () => now, advance: (ms: number) => { now += ms; } };
}

describe('the resume journal', () => {
  it('is keyed by the normalised request: same arguments, same key; any change, another key', () => {
    const key = journalKey(REQUEST);
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(journalKey({ ...REQUEST, filters: { campaignId: ['7', '42'] }, baseUrl: 'http://127.0.0.1:8787/' })).toBe(key);
    const others: Partial<JournalRequest>[] = [
      { side: 'seller' }, { since: REQUEST.since + 1 }, { until: REQUEST.until - 1 }, { metrics: ['clicks', 'displays'] },
      { breakdowns: ['DAILY', 'COUNTRY'] }, { filters: { campaignId: ['42'] } }, { params: { timezone: 'UTC' } },
      { baseUrl: 'http://127.0.0.1:9999' }, { profile: 'staging' },
    ];
    for (const change of others) expect(journalKey({ ...REQUEST, ...change })).not.toBe(key);
  });

  it('builds the key from what `run` parsed, the same for the same command line within the hour', () => {
    const flags = { since: 'yesterday', until: 'yesterday', metrics: [], breakdowns: ['daily'], filters: {}, params: [], validate: true };
    const first = journalRequestOf(buildReportRequest('buyer', flags, FIXED_NOW), 'http://127.0.0.1:8787', 'default');
    const again = journalRequestOf(buildReportRequest('buyer', flags, FIXED_NOW + 30 * 60_000), 'http://127.0.0.1:8787', 'default');
    expect(journalKey(again)).toBe(journalKey(first));
    expect(JSON.stringify(first)).not.toMatch(/token/i);
  });

  it('recalls a report submitted less than an hour ago, then forgets it after the hour', async () => {
    const dir = tempDir();
    const time = clock();
    const journal = new Journal(dir, time.now);
    const key = journalKey(REQUEST);
    expect(journal.recall(key)).toBeUndefined();
    await journal.remember(key, '5f0c01');
    time.advance(JOURNAL_TTL_MS - 1);
    expect(journal.recall(key)).toEqual({ reportId: '5f0c01', submittedAt: FIXED_NOW });
    time.advance(1);
    expect(journal.recall(key)).toBeUndefined();
    // and the expired entry is gone from the disk
    expect(readdirSync(join(dir, 'journal'))).toEqual([]);
  });

  it('forget() drops the entry once the report is written', async () => {
    const dir = tempDir();
    const journal = new Journal(dir, clock().now);
    const key = journalKey(REQUEST);
    await journal.remember(key, 'abc');
    journal.forget(key);
    expect(journal.recall(key)).toBeUndefined();
    journal.forget(key); // twice is fine (two runs finishing)
  });

  it('lives beside the token store, owner-only, and holds no secret', async () => {
    const config = join(tempDir(), 'config');
    const dir = configDir({ REPORTING_CONFIG_DIR: config }, HOST.platform);
    const journal = new Journal(dir, clock().now);
    await journal.remember(journalKey(REQUEST), '5f0c01');
    const folder = join(config, 'journal');
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    const [name] = readdirSync(folder);
    expect(name).toBe(`${journalKey(REQUEST)}.json`);
    const path = join(folder, name as string);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ v: 1, reportId: '5f0c01', submittedAt: FIXED_NOW });
  });

  it('is safe under parallel runs: many writers, every entry whole, expired ones pruned', async () => {
    const dir = tempDir();
    const time = clock();
    const journal = new Journal(dir, time.now);
    const stale = journalKey({ ...REQUEST, profile: 'old' });
    await journal.remember(stale, 'old');
    time.advance(JOURNAL_TTL_MS);
    const keys = Array.from({ length: 20 }, (_, i) => journalKey({ ...REQUEST, since: REQUEST.since + i }));
    // 20 requests, each written 5 times at once (the same request started in parallel)
    await Promise.all(keys.flatMap((key, i) => Array.from({ length: 5 }, (_, n) => new Journal(dir, time.now).remember(key, `r${i}-${n}`))));
    for (const [i, key] of keys.entries()) expect(journal.recall(key)?.reportId).toMatch(new RegExp(`^r${i}-[0-4]$`));
    expect(readdirSync(join(dir, 'journal')).sort()).toEqual(keys.map((key) => `${key}.json`).sort());
  });

  it('is safe under parallel processes: 6 runs of one request writing at once, the entry always whole', async () => {
    const dir = tempDir();
    const bundleDir = tempDir('reporting-bundle-');
    const bundled = await bundleForChild('src/engine/journal.ts', bundleDir);
    const key = journalKey(REQUEST);
    const script = `
      const { Journal } = await import(process.argv[1]);
      const journal = new Journal(process.argv[2], Date.now);
      for (let i = 0; i < 30; i++) await journal.remember(process.argv[3], process.argv[4] + '-' + i);
    `;
    const children = Array.from({ length: 6 }, (_, n) => spawn(process.execPath, ['--input-type=module', '-e', script, bundled, dir, key, `run${n}`], { stdio: 'inherit' }));
    const journal = new Journal(dir, Date.now);
    let reads = 0;
    const exits = children.map((child) => new Promise<number | null>((resolve) => child.on('exit', resolve)));
    let running = true;
    void Promise.all(exits).then(() => { running = false; });
    while (running) {
      // whenever read, the entry is one run's whole entry, never a mix or a torn file
      let text: string | undefined;
      try {
        text = readFileSync(join(dir, 'journal', `${key}.json`), 'utf8');
      } catch {
        text = undefined; // not written yet
      }
      if (text !== undefined) {
        expect((JSON.parse(text) as { reportId: string }).reportId).toMatch(/^run[0-5]-\d+$/);
        reads++;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(await Promise.all(exits)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(reads).toBeGreaterThan(0);
    expect(journal.recall(key)?.reportId).toMatch(/^run[0-5]-29$/);
    expect(readdirSync(join(dir, 'journal'))).toEqual([`${key}.json`]);
  });

  it('an unreadable entry is nothing to resume, not an error', async () => {
    const dir = tempDir();
    const journal = new Journal(dir, clock().now);
    const key = journalKey(REQUEST);
    await journal.remember(key, 'x');
    writeFileSync(join(dir, 'journal', `${key}.json`), '{"v":1,"reportId":');
    expect(journal.recall(key)).toBeUndefined();
  });

  it('an entry edited to hold a report ID of an unsafe shape (a path, an option) is nothing to resume', async () => {
    const dir = tempDir();
    const journal = new Journal(dir, clock().now);
    const key = journalKey(REQUEST);
    mkdirSync(join(dir, 'journal'));
    for (const reportId of ['../../etc', '-rf', 'a b', 'x\u001b]0;t']) {
      writeFileSync(join(dir, 'journal', `${key}.json`), JSON.stringify({ v: 1, reportId, submittedAt: clock().now() }));
      expect(journal.recall(key), reportId).toBeUndefined();
    }
  });
});
