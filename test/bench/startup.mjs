#!/usr/bin/env node
// Start-up (issue 32, item 3): `reporting --version`, `--help` and a command's and a subcommand's
// --help against `node -e 0`, interleaved (one run of each in turn, so that the machine's load
// weighs on all alike), after 3 warm-up rounds; medians, and the ratio of each to `node -e 0`'s.
// The load average is taken before and after: on this shared machine the ratios are the figure
// to compare, and a target counts as met with a margin when the ratio is 5% under it.
//
//   npm run bench:startup [-- --runs 31] [-- --before /other/build/bin/reporting.js]
//
// --before adds that build's --version, --help and buyer --help to the same interleaved runs
// (a clone at an older commit, built). npm run bench runs the start-up part too.

import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'reporting.js');
const CASES = [
  ['node -e 0', ['-e', '0']],
  ['reporting --version', [BIN, '--version'], 1.2],
  ['reporting --help', [BIN, '--help'], 1.35],
  ['reporting buyer --help', [BIN, 'buyer', '--help'], 1.35],
  ['reporting state show --help', [BIN, 'state', 'show', '--help'], 1.35],
];
const MARGIN = 1.05;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((l) => l.toFixed(1)).join(', ');

function timeOnce(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Measures, and returns the section of RESULTS.md (markdown lines). */
export function startup(runs = 31, beforeBin = undefined) {
  const cases = beforeBin === undefined ? CASES : [...CASES, ...[['--version'], ['--help'], ['buyer', '--help']].map((args) => [`reporting ${args.join(' ')} (before)`, [beforeBin, ...args]])];
  const loadBefore = load();
  const times = cases.map(() => []);
  for (let i = 0; i < 3; i++) cases.forEach(([, args]) => timeOnce(args)); // warm the file cache
  for (let run = 0; run < runs; run++) cases.forEach(([, args], i) => times[i].push(timeOnce(args)));
  const base = median(times[0]);
  const lines = [
    `## Start-up (median of ${runs} runs, interleaved; load average ${loadBefore} before, ${load()} after)`,
    '',
    '| command | median | ratio to `node -e 0` | target |',
    '|---|---|---|---|',
  ];
  cases.forEach(([name, , target], i) => {
    const ratio = median(times[i]) / base;
    const verdict = !target ? '' : ratio * MARGIN <= target ? 'met, with 5% margin' : ratio <= target ? 'met, WITHOUT 5% margin' : 'MISSED';
    lines.push(`| \`${name}\` | ${median(times[i]).toFixed(1)} ms | ${ratio.toFixed(2)}x | ${target ? `<= ${target}x ${verdict}` : ''} |`);
  });
  lines.push('');
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const option = (name) => { const at = process.argv.indexOf(`--${name}`); return at >= 0 ? process.argv[at + 1] : undefined; };
  for (const line of startup(Number(option('runs') ?? 31), option('before'))) console.log(line);
}
