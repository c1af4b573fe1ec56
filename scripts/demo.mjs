#!/usr/bin/env node
// npm run demo: start the sandbox in-process on a free port, log in through the CLI, run last
// week's buyer report by day and country, and show the CSV it wrote. Touches nothing outside demo/.

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DateTime } from 'luxon';
import { startSandbox } from '../dist/sandbox/server.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'reporting.js');
const demoDir = join(root, 'demo');
mkdirSync(demoDir, { recursive: true });

const sandbox = await startSandbox({ host: '127.0.0.1', port: 0, readyDelayMs: 1500 });
// a token store of the demo's own, so a real profile is never touched
const env = { ...process.env, REPORTING_CONFIG_DIR: join(demoDir, '.config'), REPORTING_PROFILE: 'demo' };
delete env.REPORTING_TOKEN;
delete env.REPORTING_BASE_URL;

// asynchronous, so that this process's event loop keeps serving the sandbox meanwhile
async function cli(args, input = '') {
  console.log(`\n$ reporting ${args.join(' ')}`);
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['pipe', 'inherit', 'inherit'] });
  child.stdin.end(input);
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0) {
    console.error(`demo: reporting exited with ${code}`);
    process.exitCode = 1;
    return false;
  }
  return true;
}

try {
  console.log(`Sandbox started at ${sandbox.baseUrl} (demo account ${sandbox.email})`);
  // last week: Monday to Sunday, in Paris
  const monday = DateTime.now().setZone('Europe/Paris').startOf('week').minus({ weeks: 1 });
  const since = monday.toISODate();
  const until = monday.plus({ days: 6 }).toISODate();
  const ok = await cli(['login', '--base-url', sandbox.baseUrl, '--email', sandbox.email, '--password-stdin'], `${sandbox.password}\n`)
    && await cli(['run', 'buyer', '--since', since, '--until', until, '--breakdowns', 'DAILY,COUNTRY',
      '--metrics', 'displays,clicks,revenueEuro', '-o', 'demo/buyer-{since}.csv']);
  if (ok) {
    const file = join(demoDir, `buyer-${since}.csv`);
    const lines = readFileSync(file, 'utf8').split('\n');
    console.log(`\nWrote ${relative(process.cwd(), file)} (${lines.length - 2} rows). Its first lines:\n`);
    console.log(lines.slice(0, 6).map((line) => `  ${line}`).join('\n'));
    console.log('\nNext: `npx reporting sandbox` to keep one running, and `npx reporting --help` (or put `reporting` on your PATH: README, "Try it in two minutes").');
  }
} finally {
  await sandbox.close();
}
