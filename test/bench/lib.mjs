// What the benchmark scripts share: running a command while sampling its peak RSS, and starting
// the sandbox as a separate process.

import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
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
    const child = spawn(command, commandArgs, { stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'], env: options.env ?? process.env, ...(options.cwd ? { cwd: options.cwd } : {}) });
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

/** moto's S3 server on 127.0.0.1 (a free port), with a bucket made by `bucket`: its endpoint, the
 * process (its CPU is read from /proc by objects.mjs), and an SDK client of the bench's own. Exits
 * the bench when moto is not installed. */
export async function startMotoServer(bucket) {
  const python = spawnSync('python3', ['-c', 'import moto.server, sys; print(sys.executable)'], { encoding: 'utf8' });
  if (python.status !== 0) {
    console.error('moto is not installed (python3 -c "import moto.server" failed)');
    process.exit(1);
  }
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn(python.stdout.trim(), ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  for (;;) {
    try {
      await fetch(`${endpoint}/moto-api/`);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const s3 = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return { endpoint, child, s3 };
}

