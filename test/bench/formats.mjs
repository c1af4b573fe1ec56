#!/usr/bin/env node
// npm run bench -- formats (issue 32, item 2): `reporting download ID -o out.EXT` of every field
// (a download does not know the request: every field, as `--columns all`) from
// `reporting sandbox --scale N`, to CSV, Parquet and XLSX, interleaved run by run so that the
// ratios to CSV are measured in the same minute; peak RSS (VmHWM) and CPU of the CLI, and the
// 1-minute load average before each run. DuckDB reads the Parquet file back (its row count).
//
//   node test/bench/formats.mjs [--sizes 1000000,3000000] [--runs 3] [--formats csv,parquet,xlsx]
//                               [--node PATH] [--bin PATH (another build's bin/reporting.js)] [--no-write]
//
// Targets: Parquet <= 1.5x the CSV time and <= 200 MB, XLSX <= 3x, at 1M and at 3M rows (flat),
// with a 5% margin; with --node, the same memory targets on that Node.

import { readFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, measure, root, startSandbox } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const SIZES = option('sizes', '1000000,3000000').split(',').map(Number);
const RUNS = Number(option('runs', '3'));
const FORMATS = option('formats', 'csv,parquet,xlsx').split(',');
const NODE = option('node', process.execPath);
const CLI = option('bin', BIN);
const MARGIN = 1.05;
const TARGETS = { parquet: { ratio: 1.5, mb: 200 }, xlsx: { ratio: 3, mb: 200 } };
const QUERY = 'since=1793487600&until=1795215599&breakdowns[0]=DAILY';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => Math.round(bytes / 2 ** 20);
const load = () => loadavg().map((l) => l.toFixed(1)).join(', ');
const lines = [];
const log = (line = '') => { console.log(line); lines.push(line); };

async function submit(info) {
  const response = await fetch(`${info.baseUrl}/buyer-reporting`, {
    method: 'POST', headers: { Authorization: info.token, 'Content-Type': 'application/x-www-form-urlencoded' }, body: QUERY,
  });
  return (await response.json()).response.report_id;
}

/** Rows in a Parquet file, as DuckDB (not our writer) counts them. */
async function parquetRows(file) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const [[count]] = (await connection.runAndReadAll(`SELECT count(*) FROM '${file.replace(/'/g, "''")}'`)).getRows();
  connection.closeSync();
  instance.closeSync();
  return Number(count);
}

const verdict = (ok, withMargin) => (withMargin ? 'met, with 5% margin' : ok ? 'met, WITHOUT 5% margin' : 'MISSED');

/** Measures; answers the section of RESULTS.md (markdown lines). */
export async function formats() {
  const work = mkdtempSync(join(tmpdir(), 'reporting-formats-'));
  const nodeVersion = NODE === process.execPath ? process.version : (await measure(NODE, ['--version'])).stdout.trim();
  log(`## Formats near CSV (\`npm run bench -- formats\`; issue 32, item 2)`);
  log('');
  log(`\`reporting download ID -o out.EXT\` (every field) from \`reporting sandbox --scale N\` over loopback, ${RUNS} runs, formats interleaved within each run; ${cpus().length} cores, Node ${nodeVersion}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; load average before: ${load()}.`);
  log('');
  log('| rows | format | wall (median) | vs CSV (median of runs) | per run (wall, vs CSV, load) | peak RSS (max) | CPU (median) | file |');
  log('|---|---|---|---|---|---|---|---|');
  const env = { ...process.env, REPORTING_CONFIG_DIR: join(work, 'config') };
  const summary = [];
  try {
    for (const rows of SIZES) {
      const { child, info } = await startSandbox(['--scale', String(rows), '--delay', '10ms']);
      const runs = FORMATS.map(() => []);
      const sizes = {};
      let duckRows;
      try {
        const runEnv = { ...env, REPORTING_BASE_URL: info.baseUrl, REPORTING_TOKEN: info.token };
        for (let run = 0; run < RUNS; run++) {
          for (const [f, format] of FORMATS.entries()) {
            const id = await submit(info);
            await new Promise((resolve) => setTimeout(resolve, 50));
            const out = join(work, `r${rows}.${format}`);
            const before = loadavg()[0];
            const m = await measure(NODE, [CLI, 'download', id, '-o', out, '-q'], { env: runEnv });
            runs[f].push({ seconds: m.seconds, peak: m.peak, cpu: m.cpu, load: before });
            sizes[format] = statSync(out).size;
            if (format === 'parquet' && run === RUNS - 1) duckRows = await parquetRows(out);
            rmSync(out);
            console.error(`  ${rows} ${format} run ${run + 1}: ${m.seconds.toFixed(2)} s, ${mib(m.peak)} MiB, CPU ${m.cpu.toFixed(2)} s, load ${before.toFixed(2)}`);
          }
        }
      } finally {
        child.kill('SIGTERM');
      }
      const csv = runs[FORMATS.indexOf('csv')];
      for (const [f, format] of FORMATS.entries()) {
        const r = runs[f];
        const ratios = csv ? r.map((x, i) => x.seconds / csv[i].seconds) : [];
        const ratio = ratios.length ? median(ratios) : undefined;
        const peak = Math.max(...r.map((x) => x.peak));
        summary.push({ rows, format, ratio, peak });
        const perRun = r.map((x, i) => `${x.seconds.toFixed(1)} s${ratios.length ? `, ${ratios[i].toFixed(2)}x` : ''}, load ${x.load.toFixed(1)}`).join('; ');
        const note = format === 'parquet' && duckRows !== undefined ? `${mib(sizes[format])} MiB; DuckDB reads ${duckRows} rows` : `${mib(sizes[format])} MiB`;
        log(`| ${rows.toLocaleString('en-US')} | ${format} | ${median(r.map((x) => x.seconds)).toFixed(2)} s | ${ratio === undefined ? '' : `${ratio.toFixed(2)}x`} | ${perRun} | ${mib(peak)} MiB (${Math.round(peak / 1e6)} MB) | ${median(r.map((x) => x.cpu)).toFixed(2)} s | ${note} |`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  log('');
  for (const s of summary) {
    const target = TARGETS[s.format];
    if (!target) continue;
    const time = s.ratio === undefined ? '' : `${s.ratio.toFixed(2)}x the CSV time (target <= ${target.ratio}x: ${verdict(s.ratio <= target.ratio, s.ratio * MARGIN <= target.ratio)}), `;
    log(`- ${s.rows.toLocaleString('en-US')} rows, ${s.format}: ${time}peak ${Math.round(s.peak / 1e6)} MB (target <= ${target.mb} MB: ${verdict(s.peak <= target.mb * 1e6, s.peak * MARGIN <= target.mb * 1e6)}).`);
  }
  log(`- Load average after: ${load()}.`);
  log('');
  return lines;
}

/** Replaces the section headed `title` (up to the next `## `) in RESULTS.md, or appends it. */
export function writeSection(title, section) {
  const path = join(root, 'test', 'bench', 'RESULTS.md');
  const previous = readFileSync(path, 'utf8');
  const start = previous.indexOf(title);
  // the section's figures are replaced; its subsections (### ..., the history written by hand) stay
  const section2 = start >= 0 ? previous.indexOf('\n## ', start + 1) : -1;
  const subsection = start >= 0 ? previous.indexOf('\n### ', start + 1) : -1;
  const next = subsection >= 0 && (section2 < 0 || subsection < section2) ? subsection : section2;
  const text = `${section.join('\n')}\n${next >= 0 && next === subsection ? '\n' : ''}`;
  const updated = start < 0 ? `${previous.trimEnd()}\n\n${text}` : `${previous.slice(0, start)}${text}${next >= 0 ? previous.slice(next + 1) : ''}`;
  writeFileSync(path, updated);
  console.log('Written to test/bench/RESULTS.md');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const section = await formats();
  if (!args.includes('--no-write')) writeSection('## Formats near CSV (', section);
}
