// What the benchmark scripts share: running a command while sampling its peak RSS, and starting
// the sandbox as a separate process.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(root, 'bin', 'reporting.js');

/** User + system CPU seconds of a running process (/proc/PID/stat, clock ticks of 1/100 s). */
export function cpuOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

function peakOf(pid) {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs a command, sampling its peak RSS and CPU time; resolves with wall seconds, peak bytes, CPU
 * seconds (user + system, as last sampled: within 25 ms of the end), output. */
export function measure(command, commandArgs, options = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, commandArgs, { stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'], env: options.env ?? process.env });
    let peak = 0;
    let cpu = 0;
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setInterval(() => { peak = Math.max(peak, peakOf(child.pid)); cpu = cpuOf(child.pid) ?? cpu; }, 25);
    child.on('error', reject);
    child.on('exit', () => { peak = Math.max(peak, peakOf(child.pid)); });
    child.on('close', (code) => {
      clearInterval(timer);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0) reject(new Error(`${command} ${commandArgs.join(' ')} exited ${code}: ${stderr.slice(0, 500)}`));
      else resolve({ seconds, peak, cpu, stdout, stderr });
    });
  });
}

/** `reporting sandbox --port 0 --json ...extra`: the process and its connection details. */
export async function startSandbox(extra) {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--json', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      if (buffered.includes('\n')) resolve(buffered.split('\n')[0]);
    });
    child.on('exit', (code) => reject(new Error(`sandbox exited ${code}`)));
  });
  return { child, info: JSON.parse(line) };
}

