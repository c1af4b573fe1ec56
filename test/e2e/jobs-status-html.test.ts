// `reporting jobs status --html FILE` (issue 32, item 6): the page of the fleet, made by the built
// CLI from states the sandbox's runs left (and two windows of one state changed by hand: a failure
// whose error holds markup, a report in progress). The page is read twice: as text, each cell's
// kind and letter against what the states say; and in headless Chromium (Debian's `chromium`),
// which lays it out at 1280x800, takes a screenshot whose pixels are checked cell by cell,
// reports what it parsed (no script, nothing fetched, nothing wider than the screen), and prints
// it (one landscape page). Without
// Chromium that test says SKIPPED.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { sandboxEnv, withSandbox } from '../helpers/http.js';
import { readPng } from '../helpers/png.js';
import { KINDS, type DayKind } from '../../src/fleet/page.js';

/** A job file whose name is markup too (the page names its file). */
const JOB_FILE = '<script>jobs.yaml';
const FILE = ['version: 1', 'defaults:', '  since: auto', '  start: 2026-11-19', '  until: yesterday', '  chunk: day', '  breakdowns: [DAILY]',
  '  state: state/{job}.json', '  output: out/{job}/{since}.csv', '  poll-interval: 20ms', 'jobs:',
  '  - name: buyer', '    side: buyer', '    lookback: 2d',
  '  - name: seller', '    side: seller',
  '  - name: late', '    side: buyer', '    start: 2026-11-21',
  ''].join('\n');
/** the morning of the 23rd, Paris: yesterday is the 22nd */
const NOW = '2026-11-23T06:00:00';
const HOSTILE = '<script>alert("pwned")</script> quota & more';
const DAYS = ['2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22'];
/** What the states say, day by day (set up by `fleet` below). */
const EXPECTED: Record<string, DayKind[]> = {
  buyer: ['done', 'done', 'unchanged', 'unchanged'], // fetched, then its last two days again (--lookback 2d): the same numbers
  seller: ['done', 'failed', 'progress', 'done'], // the 20th failed, the 21st's report submitted and not written
  late: ['outside', 'outside', 'missing', 'missing'], // starts on the 21st, never ran
};

interface Env { env: Record<string, string>; dir: string }

/** Runs the fleet against the sandbox and leaves the states `EXPECTED` describes. */
async function fleet(env: Record<string, string>, dir: string): Promise<void> {
  writeFileSync(join(dir, JOB_FILE), FILE);
  for (const name of ['buyer', 'seller', 'buyer']) {
    const run = await runCli(['jobs', 'run', '-f', JOB_FILE, name, '-q'], { env, cwd: dir });
    expect(run.code, run.stderr).toBe(0);
  }
  // the seller's state as a failure and an interrupted run leave it
  const path = join(dir, 'state', 'seller.json');
  expect(existsSync(`${path}.log`)).toBe(false);
  const state = JSON.parse(readFileSync(path, 'utf8')) as { windows: { since: string; status: string; error: string | null; finishedAt: string | null; reportId: string | null }[] };
  for (const window of state.windows) {
    if (window.since.startsWith('2026-11-20')) Object.assign(window, { status: 'failed', error: HOSTILE });
    if (window.since.startsWith('2026-11-21')) Object.assign(window, { status: 'submitted', finishedAt: null });
  }
  writeFileSync(path, JSON.stringify(state, null, 2));
}

/** Each row of the page: the job and its cells (kind, day, letter), read from the markup. */
function gridOf(html: string) {
  return [...html.matchAll(/<tr data-job="([^"]*)">(.*?)<\/tr>/gs)].map(([, job, row]) => ({
    job: job as string,
    cells: [...(row as string).matchAll(/<td class="c (\w+)" data-day="([\d-]+)" data-kind="(\w+)" title="([^"]*)">([^<]*)<\/td>/g)].map(([, kind, day, dataKind, title, letter]) => ({ kind, day, dataKind, title, letter })),
  }));
}

async function withFleet(body: (setup: Env) => Promise<void>): Promise<void> {
  await withSandbox({}, async (sandbox, dir) => {
    const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: NOW };
    await fleet(env, dir);
    await body({ env, dir });
  });
}

describe('jobs status --html', () => {
  it('writes the grid of jobs by day the states describe, lettered and coloured, with the lag and the last run; stdout keeps its lines; --max-lag still exits 1, the page written', async () => {
    await withFleet(async ({ env, dir }) => {
      const out = await runCli(['jobs', 'status', '-f', JOB_FILE, '--html', 'site/status.html', '--max-lag', '12h'], { env, cwd: dir });
      expect(out.code).toBe(1);
      expect(out.stderr).toContain('1 job stale beyond --max-lag 12h: late');
      // the text lines as without --html, one a job
      expect(out.stdout.trim().split('\n').map((line) => line.split('\t')[0])).toEqual(['buyer', 'seller', 'late']);
      const html = readFileSync(join(dir, 'site', 'status.html'), 'utf8');

      const grid = gridOf(html);
      expect(grid.map((row) => row.job)).toEqual(['buyer', 'seller', 'late']);
      for (const row of grid) {
        expect(row.cells.map((cell) => cell.day), row.job).toEqual(DAYS);
        expect(row.cells.map((cell) => cell.kind), row.job).toEqual(EXPECTED[row.job]);
        expect(row.cells.map((cell) => cell.dataKind), row.job).toEqual(EXPECTED[row.job]);
        // the letter says it without the colour
        expect(row.cells.map((cell) => cell.letter), row.job).toEqual(EXPECTED[row.job]?.map((kind) => KINDS[kind].letter));
      }
      // the failure's error is in its cell's title, escaped; the report in progress is named
      const seller = grid[1]?.cells ?? [];
      expect(seller[1]?.title).toBe('seller, 2026-11-20: failed: &#60;script&#62;alert(&#34;pwned&#34;)&#60;/script&#62; quota &#38; more');
      expect(seller[2]?.title).toMatch(/^seller, 2026-11-21: in progress: report [0-9a-z]+$/);
      // nothing from the states or the job file became markup: the page's only script-looking text is escaped
      expect(html).not.toMatch(/<script/i);
      expect(html).toContain('&#60;script&#62;jobs.yaml');
      // the legend names every kind with its letter
      for (const kind of Object.values(KINDS)) expect(html).toContain(`${kind.letter ? `${kind.letter}: ` : 'blank: '}${kind.name}</b>`);
      // lag and last run: the buyer's last window done ended at midnight, 6 hours ago; its last
      // run's figures are --json's; late is stale
      const json = await runCli(['jobs', 'status', '-f', JOB_FILE, '--json'], { env, cwd: dir });
      const buyer = (JSON.parse(json.stdout) as { jobs: { job: string; lastRun: { at: string; windows: number; rows: number; bytes: number } }[] }).jobs[0]?.lastRun;
      expect(buyer?.rows).toBeGreaterThan(0);
      const rowOf = (job: string) => new RegExp(`<tr data-job="${job}">.*?</tr>`, 's').exec(html)?.[0] ?? '';
      expect(rowOf('buyer')).toContain(`<td class="lag">6h 0m</td><td class="run">${buyer?.rows} rows, ${buyer?.bytes} B<br>${buyer?.windows} windows, ${DateTime.fromISO(buyer?.at ?? '', { zone: 'Europe/Paris' }).toFormat('yyyy-MM-dd HH:mm')}</td>`);
      expect(rowOf('late')).toContain('<td class="lag stale">never STALE</td>');
      expect(html).toContain('3 jobs of &#60;script&#62;jobs.yaml · days 2026-11-19 to 2026-11-22 (Europe/Paris) · as of 2026-11-23 06:00 Paris time · 1 stale beyond --max-lag 12h');
      // self-contained: no script, no stylesheet or font from elsewhere, no URL at all
      expect(html).not.toMatch(/<(script|link|img|iframe|object|embed)\b|https?:\/\/|url\(|@import/i);
      // written atomically: nothing left beside it
      expect(readdirSync(join(dir, 'site'))).toEqual(['status.html']);
    });
  });

  it('with --json, the JSON goes to stdout as before and the page to its file; run again, the page is replaced whole', async () => {
    await withFleet(async ({ env, dir }) => {
      const page = join(dir, 'status.html');
      writeFileSync(page, 'an older page');
      const out = await runCli(['jobs', 'status', '-f', JOB_FILE, '--json', '--html', 'status.html'], { env, cwd: dir });
      expect(out.code, out.stderr).toBe(0);
      expect((JSON.parse(out.stdout) as { jobs: { job: string }[] }).jobs.map((job) => job.job)).toEqual(['buyer', 'seller', 'late']);
      expect(readFileSync(page, 'utf8')).toMatch(/^<!doctype html>\n[\s\S]*<\/html>\n$/);
      expect(gridOf(readFileSync(page, 'utf8')).map((row) => row.job)).toEqual(['buyer', 'seller', 'late']);
      expect(readdirSync(dir).filter((name) => name.includes('status.html'))).toEqual(['status.html']);
    });
  });

  it('a day done whose file was deleted since is missing (the next run fetches it again), not done', async () => {
    await withFleet(async ({ env, dir }) => {
      rmSync(join(dir, 'out', 'buyer', '2026-11-20.csv'));
      const out = await runCli(['jobs', 'status', '-f', JOB_FILE, '--html', 'status.html'], { env, cwd: dir });
      expect(out.code, out.stderr).toBe(0);
      const grid = gridOf(readFileSync(join(dir, 'status.html'), 'utf8'));
      expect(grid[0]?.cells.map((cell) => cell.kind)).toEqual(['done', 'missing', 'unchanged', 'unchanged']);
      expect(grid[0]?.cells[1]?.title).toBe('buyer, 2026-11-20: missing: done, and its file is gone: the next run fetches it again');
      expect(grid[1]?.cells.map((cell) => cell.kind)).toEqual(EXPECTED.seller);
    });
  });

  it('a page that cannot be written is a one-line usage error before any state is read; - is refused', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      writeFileSync(join(dir, JOB_FILE), FILE);
      mkdirSync(join(dir, 'folder'));
      const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: NOW };
      const folder = await runCli(['jobs', 'status', '-f', JOB_FILE, '--html', 'folder'], { env, cwd: dir });
      expect(folder.code).toBe(2);
      expect(folder.stdout).toBe('');
      expect(folder.stderr).toMatch(/^error: cannot write --html folder: it is a folder\nhint: name a file inside it, for example --html folder\/status\.html\n$/m);
      const dash = await runCli(['jobs', 'status', '-f', JOB_FILE, '--html', '-'], { env, cwd: dir });
      expect(dash.code).toBe(2);
      expect(dash.stderr).toContain('--html');
      expect(dash.stderr).toContain('a file name: the page goes to a file, the lines (or --json) to stdout');
      expect(dash.stderr + folder.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(join(dir, '-'))).toBe(false);
    });
  });
});

/** Chromium, if installed (Debian's package is `chromium`). */
const CHROMIUM = ['chromium', 'chromium-browser', 'google-chrome'].find((name) => spawnSync('bash', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0);
if (!CHROMIUM) console.log('SKIPPED: jobs status --html in Chromium: chromium is not installed (Debian: apt-get install chromium; .ci/run installs it where it may)');

/** Headless Chromium, offline: every host name resolves to nothing and any request goes to a
 * closed local port, so the page could fetch nothing even if it tried (it is checked not to). */
function chromium(dir: string, args: string[]) {
  const result = spawnSync(CHROMIUM as string, [
    '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--force-device-scale-factor=1', '--window-size=1280,800',
    `--user-data-dir=${join(dir, 'chromium-profile')}`, '--no-first-run', '--no-default-browser-check', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-domain-reliability', '--dns-prefetch-disable',
    '--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=127.0.0.1:9', ...args,
  ], { encoding: 'utf8', timeout: 60_000, cwd: dir });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

/** A page (this test's, not the product's) that frames the status page at 1280x800 and writes
 * what Chromium made of it: each cell's kind, letter, colour and box; scripts; resources fetched. */
const HARNESS = (page: string) => `<!doctype html><html><head><style>html,body{margin:0}iframe{border:0;width:1280px;height:800px;display:block}</style></head>
<body><iframe id="page" src="${page}"></iframe><script>
window.addEventListener('load', () => {
  const frame = document.getElementById('page');
  const d = frame.contentDocument, w = frame.contentWindow;
  const rows = [...d.querySelectorAll('tr[data-job]')].map((tr) => ({ job: tr.dataset.job, cells: [...tr.querySelectorAll('td[data-day]')].map((td) => {
    const r = td.getBoundingClientRect();
    return { day: td.dataset.day, kind: td.classList[1], letter: td.textContent, background: w.getComputedStyle(td).backgroundColor, x: r.x, y: r.y, width: r.width, height: r.height };
  }) }));
  const out = { rows, scripts: d.scripts.length, elements: [...new Set([...d.querySelectorAll('*')].map((e) => e.localName))].sort(), resources: w.performance.getEntriesByType('resource').length, scrollWidth: d.documentElement.scrollWidth, title: d.title };
  const pre = document.createElement('pre'); pre.id = 'result'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script></body></html>`;

interface Seen { rows: { job: string; cells: { day: string; kind: string; letter: string; background: string; x: number; y: number; width: number; height: number }[] }[]; scripts: number; elements: string[]; resources: number; scrollWidth: number }

const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));

describe('jobs status --html in headless Chromium', () => {
  it.skipIf(!CHROMIUM)('the screenshot shows each job\'s days as its state says, a month of days fits a laptop screen and one landscape page, and the page runs nothing and fetches nothing', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { ...sandboxEnv(sandbox, dir), REPORTING_NOW: NOW };
      await fleet(env, dir);
      // and a job of weekly windows since October: more days than the page shows
      writeFileSync(join(dir, JOB_FILE), FILE.replace('jobs:\n', 'jobs:\n  - name: weekly\n    side: seller\n    chunk: week\n    start: 2026-10-01\n'));
      const run = await runCli(['jobs', 'run', '-f', JOB_FILE, 'weekly', '-q'], { env, cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      const out = await runCli(['jobs', 'status', '-f', JOB_FILE, '--html', 'status.html'], { env, cwd: dir });
      expect(out.code, out.stderr).toBe(0);

      writeFileSync(join(dir, 'harness.html'), HARNESS(pathToFileURL(join(dir, 'status.html')).href));
      const dom = chromium(dir, ['--allow-file-access-from-files', '--dump-dom', pathToFileURL(join(dir, 'harness.html')).href]);
      const seen = JSON.parse((/<pre id="result">(.*?)<\/pre>/s.exec(dom)?.[1] ?? 'null').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')) as Seen;
      expect(seen, dom.slice(0, 2000)).not.toBeNull();
      // the page ran no script and fetched nothing; the job file's name stayed text
      expect(seen.scripts).toBe(0);
      expect(seen.resources).toBe(0);
      expect(seen.elements).not.toContain('script');
      // 31 days, the last one yesterday: the weekly job's from October 23rd, the others' own days
      const days = Array.from({ length: 31 }, (_, i) => new Date(Date.UTC(2026, 9, 23 + i)).toISOString().slice(0, 10));
      expect(seen.rows.map((row) => row.job)).toEqual(['weekly', 'buyer', 'seller', 'late']);
      for (const row of seen.rows) {
        expect(row.cells.map((cell) => cell.day)).toEqual(days);
        const expected = row.job === 'weekly' ? days.map(() => 'done') : days.map((day) => (DAYS.includes(day) ? EXPECTED[row.job]?.[DAYS.indexOf(day)] : 'outside'));
        expect(row.cells.map((cell) => cell.kind), row.job).toEqual(expected);
        expect(row.cells.map((cell) => cell.letter), row.job).toEqual(expected.map((kind) => KINDS[kind as DayKind].letter));
        expect(row.cells.map((cell) => cell.background), row.job).toEqual(expected.map((kind) => `rgb(${rgb(KINDS[kind as DayKind].background).join(', ')})`));
      }
      // a laptop's screen: the whole grid in 1280x800, no sideways scroll, cells big enough to read
      expect(seen.scrollWidth).toBeLessThanOrEqual(1280);
      for (const cell of seen.rows.flatMap((row) => row.cells)) {
        expect(cell.x + cell.width).toBeLessThanOrEqual(1280);
        expect(cell.y + cell.height).toBeLessThanOrEqual(800);
        expect(Math.min(cell.width, cell.height)).toBeGreaterThanOrEqual(20);
      }

      // the screenshot: each cell's colour where Chromium laid it out (its left edge, beside the letter)
      chromium(dir, ['--screenshot=shot.png', pathToFileURL(join(dir, 'status.html')).href]);
      const png = readFileSync(join(dir, 'shot.png'));
      expect(statSync(join(dir, 'shot.png')).size).toBeGreaterThan(20_000);
      const image = readPng(png);
      expect([image.width, image.height]).toEqual([1280, 800]);
      for (const row of seen.rows) {
        const colours = row.cells.map((cell) => image.pixel(cell.x + 4, cell.y + cell.height / 2));
        const expected = row.cells.map((cell) => rgb(KINDS[cell.kind as DayKind].background));
        colours.forEach((colour, i) => expect(colour.every((value, c) => Math.abs(value - (expected[i]?.[c] ?? -99)) <= 3), `${row.job} ${row.cells[i]?.day}: ${colour.join(',')} for ${row.cells[i]?.kind}`).toBe(true));
      }

      // printed: one landscape page (the print CSS's @page) for these five jobs and 31 days
      chromium(dir, ['--no-pdf-header-footer', '--print-to-pdf=status.pdf', pathToFileURL(join(dir, 'status.html')).href]);
      const pdf = readFileSync(join(dir, 'status.pdf')).toString('latin1');
      expect(pdf.startsWith('%PDF-')).toBe(true);
      expect([...pdf.matchAll(/\/Count (\d+)/g)].map((m) => m[1])).toEqual(['1']);
      const boxes = [...pdf.matchAll(/\/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]/g)].map((m) => [Number(m[1]), Number(m[2])]);
      expect(boxes.length).toBeGreaterThan(0);
      for (const [width, height] of boxes) expect(width as number).toBeGreaterThan(height as number);
    });
  }, 120_000);
});
