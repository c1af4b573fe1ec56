// A real S3 server on loopback for the object-storage tests: moto's server (Python), started on
// 127.0.0.1 on a free port. MOTO is undefined where it is missing: those tests are skipped.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { PYTHON } from './python.js';

/** The command that starts moto's server: the real Python running `moto.server` (pyenv's shims
 * print to stderr when many run at once), else `moto_server` on the PATH. */
export const MOTO: string[] | undefined = (() => {
  if (PYTHON && spawnSync(PYTHON, ['-c', 'import moto.server'], { stdio: 'ignore' }).status === 0) return [PYTHON, '-m', 'moto.server'];
  if (spawnSync('moto_server', ['--help'], { stdio: 'ignore' }).status === 0) return ['moto_server'];
  return undefined;
})();

/** Keys the tests hand the CLI: fake, and never to appear in its output. */
export const KEY_ID = 'AKIATESTREPORTING01';
export const SECRET = 'reporting-test-secret-9f3e1c7a55b2d04e';

export interface Moto {
  endpoint: string;
  /** a client of the test's own, to create buckets and read objects back */
  s3: S3Client;
  /** what the CLI needs in its environment to reach this server */
  env: Record<string, string>;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function ready(endpoint: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}`);
    try {
      await fetch(`${endpoint}/moto-api/`);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('moto_server did not answer within 30 s');
}

/** Starts moto on 127.0.0.1; `auth: true` makes it check credentials (every key is unknown to it). */
export async function startMoto(options: { auth?: boolean } = {}): Promise<Moto> {
  if (!MOTO) throw new Error('moto_server is not installed');
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const [command, ...args] = MOTO as [string, ...string[]];
  const child = spawn(command, [...args, '-H', '127.0.0.1', '-p', String(port)], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...(options.auth ? { INITIAL_NO_AUTH_ACTION_COUNT: '0' } : {}) },
    stdio: 'ignore',
  });
  await ready(endpoint, child);
  // the test's own client: no notice about future Node versions in the test output
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const s3 = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  return {
    endpoint,
    s3,
    env: {
      AWS_ACCESS_KEY_ID: KEY_ID, AWS_SECRET_ACCESS_KEY: SECRET, AWS_ENDPOINT_URL_S3: endpoint,
      // the credential chain must never ask the instance metadata service (not loopback)
      AWS_EC2_METADATA_DISABLED: 'true',
    },
    async close() {
      s3.destroy();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
