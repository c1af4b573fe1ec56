// Every example of README.md and docs/ is run (issue 21, item 2): the built CLI on PATH as
// `reporting`, each file in a temporary folder of its own (also its HOME, so the token store and
// anything an example writes under ~ stay there), logged in to one sandbox on 127.0.0.1 port 0.
// The rules and the markers are in test/helpers/examples.ts. One substitution is made, and only
// one: the sandbox's default address, http://127.0.0.1:8787 (what `reporting sandbox` listens on
// in the README's "try it"), becomes the test sandbox's address. Nothing else is rewritten. An
// example naming s3:// runs against moto on 127.0.0.1 (its buckets created, its endpoint and keys
// in the environment, as a user's shell would have them), or is skipped where moto is missing.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { BIN, NODE, collect, runCli } from '../helpers/cli.js';
import { extractAll, programsOf, type Block } from '../helpers/examples.js';
import { MOTO, startMoto, type Moto } from '../helpers/moto.js';
import { CreateBucketCommand } from '@aws-sdk/client-s3';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SANDBOX_DEFAULT = 'http://127.0.0.1:8787';
const { examples, errors } = extractAll(ROOT);
/** Without the duckdb command line, its examples run on test/helpers/duckdb-cli.mjs: the same
 * engine (@duckdb/node-api), the `-c` and `.read` the docs use; the summary says so. */
const DUCKDB_STANDIN = spawnSync('bash', ['-c', 'command -v duckdb'], { stdio: 'ignore' }).status !== 0
  && spawnSync(process.execPath, ['-e', "import('@duckdb/node-api')"], { cwd: ROOT, stdio: 'ignore' }).status === 0;
const runnable = examples.filter((block) => block.notRun === undefined && block.commands.length > 0);

/** Is a program on PATH (or a shell builtin)? Asked once per name. */
const known = new Map<string, boolean>();
function have(program: string): boolean {
  if (program === 'reporting') return true;
  if (program === 'duckdb' && DUCKDB_STANDIN) return true;
  if (!known.has(program)) known.set(program, spawnSync('bash', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0);
  return known.get(program) as boolean;
}
const usesBucket = (block: Block) => block.commands.some((command) => command.text.includes('s3://'));
function missingTools(block: Block): string[] {
  const bucket = usesBucket(block) && !MOTO ? ['moto_server'] : [];
  return [...new Set([...block.commands.flatMap((command) => programsOf(command.text)).filter((program) => !have(program)), ...bucket])];
}
/** The buckets the examples that run name: created on moto before they run. */
const BUCKETS = [...new Set(runnable.filter(usesBucket).flatMap((block) => block.commands.flatMap((command) => [...command.text.matchAll(/s3:\/\/([a-z0-9][a-z0-9.-]{2,62})\//g)].map((match) => match[1] as string))))];

const skipped: string[] = [];
for (const block of examples) {
  if (block.notRun !== undefined) skipped.push(`${block.file}:${block.line}: not run: ${block.notRun}`);
  else if (missingTools(block).length) skipped.push(`${block.file}:${block.line}: needs ${missingTools(block).join(', ')}, not installed here`);
}

describe('the examples of README.md and docs/', () => {
  it('follow the rules: every example runs, or says why it cannot', () => {
    expect(errors).toEqual([]);
    expect(runnable.length).toBeGreaterThan(20);
  });

  let sandbox: Sandbox;
  let moto: Moto | undefined;
  let bin: string;
  const homes = new Map<string, string>();
  const made: string[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ host: '127.0.0.1', port: 0, readyDelayMs: 0 });
    if (MOTO && BUCKETS.length) {
      moto = await startMoto();
      for (const bucket of BUCKETS) await (moto as Moto).s3.send(new CreateBucketCommand({ Bucket: bucket }));
    }
    // `reporting` on PATH, as `npm install -g .` would put it
    bin = mkdtempSync(join(tmpdir(), 'reporting-docs-bin-'));
    made.push(bin);
    const shim = join(bin, 'reporting');
    writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(NODE)} ${JSON.stringify(BIN)} "$@"\n`);
    chmodSync(shim, 0o755);
    if (DUCKDB_STANDIN) {
      const duckdb = join(bin, 'duckdb');
      writeFileSync(duckdb, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, 'test', 'helpers', 'duckdb-cli.mjs'))} "$@"\n`);
      chmodSync(duckdb, 0o755);
    }
  }, 60_000);

  afterAll(async () => {
    await sandbox?.close();
    await moto?.close();
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
    const ran = runnable.length - skipped.filter((line) => line.includes(': needs ')).length;
    const notes = DUCKDB_STANDIN ? ['  (duckdb: not installed; its examples ran on test/helpers/duckdb-cli.mjs, the same engine)'] : [];
    console.log([`docs examples: ${ran} blocks run, ${skipped.length} not run:`, ...skipped.map((line) => `  ${line}`), ...notes].join('\n'));
  });

  /** The folder (and HOME) of one doc file, logged in to the sandbox on first use. */
  async function homeOf(file: string): Promise<string> {
    let home = homes.get(file);
    if (!home) {
      home = mkdtempSync(join(tmpdir(), 'reporting-docs-'));
      made.push(home);
      const login = await runCli(['login', '--token-stdin', '--base-url', sandbox.baseUrl, '-q'], { env: { HOME: home }, input: sandbox.token, cwd: home });
      expect(login.code, login.stderr).toBe(0);
      homes.set(file, home);
    }
    return home;
  }

  for (const block of examples) {
    const title = `${block.file}:${block.line}: ${block.commands[0]?.text.slice(0, 70) ?? block.lang}`;
    const missing = block.notRun === undefined ? missingTools(block) : [];
    if (block.notRun !== undefined || missing.length || block.commands.length === 0) {
      it.skip(`${title} (${block.notRun !== undefined ? `not run: ${block.notRun}` : `needs ${missing.join(', ')}`})`, () => {});
      continue;
    }
    it(title, async () => {
      const home = await homeOf(block.file);
      const rcs = join(home, '.example-exit-codes');
      writeFileSync(rcs, '');
      const script = ['set -o pipefail'];
      block.commands.forEach((command, i) => {
        const text = command.text.split(SANDBOX_DEFAULT).join(sandbox.baseUrl);
        script.push(`printf '%s\\n' ${shellQuote(`$ ${command.text}`)} >&2`, text, `echo "${i} $?" >> ${shellQuote(rcs)}`);
      });
      const child = spawn('bash', ['-c', script.join('\n')], {
        cwd: home,
        env: { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home, NO_COLOR: '1', LANG: 'C.UTF-8', ...(moto && usesBucket(block) ? moto.env : {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const result = await collect(child, { timeoutMs: 90_000 });
      const codes = new Map(readFileSync(rcs, 'utf8').trim().split('\n').filter(Boolean).map((line) => line.split(' ').map(Number) as [number, number]));
      const tail = `\n--- stderr (last 3000 characters) ---\n${result.stderr.slice(-3000)}`;
      block.commands.forEach((command, i) => {
        expect(codes.get(i), `${block.file}:${command.line}: ${command.text}\nexpected exit ${command.exits}${tail}`).toBe(command.exits);
      });
      expect(result.stdout + result.stderr).not.toContain(sandbox.token);
    }, 120_000);
  }
});

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

