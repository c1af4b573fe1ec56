// The fault matrix (SPEC sections 4 and 5): `run` in every output format against every fault the
// sandbox can inject. Each cell must either produce exactly the bytes of a fault-free run, or exit
// with the SPEC's code leaving the target folder exactly as it was; and never show a secret.

import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSandbox, type SandboxOptions } from '../../src/sandbox/server.js';
import { collect, runCli, startCli } from '../helpers/cli.js';

// the cases run concurrently: each keeps its folder until the whole file is done
const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'reporting-matrix-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

const FORMATS = ['csv', 'json', 'ndjson', 'parquet', 'xlsx'] as const;
type Format = (typeof FORMATS)[number];
const PREVIOUS = 'the previous export\n';
const REPORT = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-07', '--breakdowns', 'DAILY,COUNTRY,ADUNIT', '--poll-interval', '40ms', '-v'];

interface Fault {
  name: string;
  sandbox: SandboxOptions;
  args?: string[];
  relogin?: boolean;
  /** undefined: the run must survive and match the fault-free bytes */
  exit?: number;
}

const FAULTS: Fault[] = [
  ...(['buyer', 'status', 'download'] as const).flatMap((endpoint): Fault[] => [
    { name: `503 on ${endpoint} (first 2)`, sandbox: { faults: { errors: [{ status: 503, endpoint, first: 2 }] } } },
    { name: `429 + Retry-After on ${endpoint}`, sandbox: { faults: { errors: [{ status: 429, endpoint, first: 1, retryAfter: 1 }] } } },
  ]),
  { name: '500 on every request, retries exhausted', sandbox: { faults: { errors: [{ status: 500, endpoint: 'status' }] } }, args: ['--retries', '1'], exit: 5 },
  { name: 'connection reset mid-download', sandbox: { faults: { resetDownload: { afterBytes: 5000, times: 1 } } } },
  { name: 'stalled body mid-download', sandbox: { faults: { stallDownload: { afterBytes: 5000, times: 1 } } }, args: ['--timeout', '1s'] },
  { name: 'HTML 502 page from a proxy', sandbox: { faults: { errors: [{ status: 502, endpoint: 'download', first: 1, html: true }] } } },
  { name: 'token expires mid-run, with REPORTING_EMAIL/PASSWORD', sandbox: { faults: { tokenUses: 2 } }, relogin: true },
  { name: 'token expires mid-run, without them', sandbox: { faults: { tokenUses: 2 } }, exit: 3 },
  { name: 'report ends in a failure status', sandbox: { faults: { reportStatus: 'failed' } }, exit: 6 },
  { name: 'report never ready within --max-wait', sandbox: { readyDelayMs: 60_000 }, args: ['--max-wait', '1s'], exit: 6 },
  { name: 'truncated download body', sandbox: { faults: { malformed: 'truncated' } }, exit: 5 },
  { name: 'data that is not an array', sandbox: { faults: { malformed: 'data-not-array' } }, exit: 5 },
  { name: 'status of the wrong types', sandbox: { faults: { malformed: 'wrong-types' } }, exit: 5 },
  { name: 'submit answer without report_id', sandbox: { faults: { malformed: 'no-report-id' } }, exit: 5 },
  { name: 'an unknown status', sandbox: { faults: { malformed: 'unknown-status' } }, exit: 6 },
];

const results: { fault: string; format: Format; outcome: string }[] = [];

async function runCase(format: Format, fault?: Fault) {
  const sandbox = await startSandbox({ port: 0, readyDelayMs: 100, ...fault?.sandbox });
  try {
    const dir = folder();
    const target = join(dir, `out.${format}`);
    writeFileSync(target, PREVIOUS);
    const env: Record<string, string> = { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
    if (fault?.relogin) Object.assign(env, { REPORTING_EMAIL: sandbox.email, REPORTING_PASSWORD: sandbox.password });
    const result = await runCli([...REPORT, ...(fault?.args ?? []), '-o', target], { env, timeoutMs: 60_000 });
    const files = readdirSync(dir).filter((name) => name !== '.config').sort();
    const written = readFileSync(target, 'latin1'); // byte for byte, binary formats included
    // secrets: neither on stdout or stderr (with -v), nor in any file written
    for (const secret of [sandbox.token, sandbox.password]) {
      expect(result.stdout + result.stderr).not.toContain(secret);
      expect(written).not.toContain(secret);
    }
    return { result, files, written };
  } finally {
    await sandbox.close();
  }
}

describe('the fault matrix: run × output format × fault', () => {
  const reference = new Map<Format, string>();

  afterAll(() => {
    if (results.length === 0) return;
    const survived = results.filter((r) => r.outcome === 'identical output').length;
    const failedCleanly = results.length - survived;
    const lines = ['', `fault matrix: ${results.length} runs (${FAULTS.length} faults × ${FORMATS.length} formats):`];
    for (const fault of FAULTS) {
      const cells = FORMATS.map((format) => results.find((r) => r.fault === fault.name && r.format === format)?.outcome ?? 'not run');
      lines.push(`  ${fault.name.padEnd(52)} ${cells.join(' | ')}`);
    }
    lines.push(`  survived with identical output: ${survived}; failed with the SPEC's exit code, folder untouched: ${failedCleanly}`);
    console.info(lines.join('\n'));
  });

  it.each(FORMATS)('a fault-free run writes the reference %s', async (format) => {
    const { result, files, written } = await runCase(format);
    expect(result.code).toBe(0);
    expect(files).toEqual([`out.${format}`]);
    expect(written).not.toBe(PREVIOUS);
    reference.set(format, written);
  });

  const cases = FAULTS.flatMap((fault) => FORMATS.map((format) => [fault.name, format, fault] as const));
  it.concurrent.each(cases)('%s, %s', async (_name, format, fault) => {
    const { result, files, written } = await runCase(format, fault);
    expect(files).toEqual([`out.${format}`]);
    if (fault.exit === undefined) {
      expect(result.code, result.stderr).toBe(0);
      expect(written).toBe(reference.get(format));
      results.push({ fault: fault.name, format, outcome: 'identical output' });
    } else {
      expect(result.code, result.stderr).toBe(fault.exit);
      expect(written).toBe(PREVIOUS);
      const errors = result.stderr.split('\n').filter((line) => line.startsWith('error: '));
      expect(errors).toHaveLength(1);
      expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
      results.push({ fault: fault.name, format, outcome: `exit ${result.code}, untouched` });
    }
  });
});

describe('interruption', () => {
  it.each([
    ['SIGINT', 'polling', 130],
    ['SIGTERM', 'polling', 143],
    ['SIGINT', 'downloading', 130],
    ['SIGTERM', 'downloading', 143],
  ] as const)('%s while %s: exit %i, the previous file intact, no temporary file', async (signal, phase, code) => {
    const sandbox = await startSandbox({
      port: 0,
      readyDelayMs: phase === 'polling' ? 60_000 : 50,
      faults: phase === 'downloading' ? { stallDownload: { afterBytes: 3000, times: 1 } } : {},
    });
    try {
      const dir = folder();
      const target = join(dir, 'out.csv');
      writeFileSync(target, PREVIOUS);
      const child = startCli([...REPORT.filter((arg) => arg !== '-v'), '-o', target], {
        env: { REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token },
      });
      const done = collect(child);
      const started = Date.now();
      while (Date.now() - started < 20_000) {
        const downloading = readdirSync(dir).some((name) => name.includes('.reporting-tmp-'));
        if (phase === 'downloading' ? downloading : sandbox.requests.some((r) => r.endpoint === 'status')) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      child.kill(signal);
      const result = await done;
      expect(result.code).toBe(code);
      expect(result.stderr).toContain(`error: interrupted (${signal})`);
      expect(readFileSync(target, 'utf8')).toBe(PREVIOUS);
      expect(readdirSync(dir).filter((name) => name !== '.config')).toEqual(['out.csv']);
    } finally {
      await sandbox.close();
    }
  });
});
