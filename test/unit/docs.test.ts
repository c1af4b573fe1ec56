// The docs cannot drift (issue 21, item 2), the parts that need no sandbox: every relative link
// and anchor of README.md and docs/ resolves, the examples follow the rules of
// test/helpers/examples.ts (test/e2e/docs.test.ts runs them), and the figures docs/reliability.md
// gives are the ones the tests use.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandsOf, docFiles, extract, extractAll, programsOf } from '../helpers/examples.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^ {0,3}(```|~~~)/.test(line)) fenced = !fenced;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (!fenced && heading) anchors.add(slug(heading[1] as string));
  }
  return anchors;
}

describe('the docs', () => {
  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of docFiles(ROOT)) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path ? join(dirname(join(ROOT, file)), path) : join(ROOT, file);
        if (!existsSync(resolved)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('have a README short enough to read in five minutes, linking every file of docs/', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThan(150);
    for (const file of docFiles(ROOT).filter((path) => path.startsWith('docs/'))) expect(readme, file).toContain(`](${file}`);
  });

  it('give their examples as the rules say: each one runs, or is marked with why not', () => {
    const { examples, errors } = extractAll(ROOT);
    expect(errors).toEqual([]);
    expect(examples.filter((block) => block.notRun === undefined).length).toBeGreaterThan(20);
  });

  it('give the figures of the tests they describe', () => {
    const page = read('docs/reliability.md');
    const fuzz = read('test/reliability/fuzz.test.ts');
    const concurrency = read('test/reliability/concurrency.test.ts');
    expect(page).toContain('1,000 random command lines');
    expect(fuzz).toContain('numRuns: 1000, seed');
    expect(page).toContain('2,000 random time expressions');
    expect(fuzz).toContain('numRuns: 2000, seed');
    expect(page).toContain('20 processes');
    expect(concurrency).toContain('const PARALLEL = 20;');
    expect(page).toContain('50 concurrent report cycles');
    expect(concurrency).toContain('length: 50 }');
    // counts that grow with the suite are printed by the tests, not copied here
    for (const file of docFiles(ROOT)) expect(read(file), file).not.toMatch(/\b\d+ (faults|runs(?! sharing)|tests)\b/);
  });
});

describe('the example rules', () => {
  it('fail a block that shows a command but can be neither run nor skipped: a forgotten marker', () => {
    const cron = '```cron\n15 6 * * * reporting run buyer --since yesterday --until yesterday\n```\n';
    expect(extract(cron, 'x.md').errors).toEqual([expect.stringContaining('x.md:1: a cron block shows a reporting command')]);
    expect(extract(`<!-- not run: a crontab -->\n${cron}`, 'x.md')).toMatchObject({ errors: [], examples: [{ notRun: 'a crontab' }] });
    const yaml = '```yaml\ncommand: [reporting, run, buyer]\n```\n';
    expect(extract(yaml, 'x.md').errors).toHaveLength(1);
  });

  it('fail a marker without a reason, one not followed by a block, and a misspelled one', () => {
    expect(extract('<!-- not run: -->\n```sh\nreporting whoami\n```\n', 'x.md').errors).toEqual([expect.stringContaining('needs a reason')]);
    expect(extract('<!-- not run: why -->\n\nText.\n```sh\nreporting whoami\n```\n', 'x.md').errors).toEqual([expect.stringContaining('just before a fenced block')]);
    expect(extract('<!-- not-run why -->\n```sh\nreporting whoami\n```\n', 'x.md').errors).toEqual([expect.stringContaining('spelled')]);
    expect(extract('<!-- not run: why -->\n```json\n{}\n```\n', 'x.md').errors).toEqual([expect.stringContaining('not an example')]);
    // prose may quote the marker in inline code
    expect(extract('Mark it `<!-- not run: REASON -->` before the fence.\n', 'x.md').errors).toEqual([]);
  });

  it('fail a shell example that would write outside the test folder', () => {
    expect(extract('```sh\nreporting run buyer --since today --until today -o /data/x.csv\n```\n', 'x.md').errors).toEqual([expect.stringContaining('absolute path')]);
    expect(extract('```sh\nreporting run buyer --since today --until today -o x.csv > /dev/null\n```\n', 'x.md').errors).toEqual([]);
  });

  it('join continuation lines, drop comments, and read the exit code a comment states', () => {
    const commands = commandsOf([
      '# a comment line',
      'reporting run buyer --since a \\',
      '  --until b -o "x#y.csv"   # exits 6: not ready',
      '',
      "echo '# not a comment' | cat",
    ].join('\n'), 10);
    expect(commands).toEqual([
      { line: 12, text: 'reporting run buyer --since a --until b -o "x#y.csv"', exits: 6 },
      { line: 15, text: "echo '# not a comment' | cat", exits: 0 },
    ]);
  });

  it('names the programs a command needs', () => {
    expect(programsOf(`id=$(reporting buyer --since x) && REPORTING_TOKEN=t reporting status "$id" | jq -r '.a | .b'`)).toEqual(['reporting', 'jq']);
    expect(programsOf('duckdb ads.db -c ".read daily.sql"')).toEqual(['duckdb']);
  });
});
