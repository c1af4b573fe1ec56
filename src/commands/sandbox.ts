// `sandbox`: run the local emulator of the Reporting API until Ctrl-C.

import { parisTime } from '../clock.js';
import { UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { sandboxOptionsFrom, type SandboxFlags } from '../sandbox/options.js';
import { startSandbox } from '../sandbox/server.js';

export type SandboxCommandOptions = SandboxFlags;

export async function run(opts: SandboxCommandOptions, f: Factory): Promise<void> {
  const settings = sandboxOptionsFrom(opts);
  if (f.calendar.moved && opts.now === undefined) {
    f.stderr.write(`warning: REPORTING_NOW does not move the sandbox's clock; start it with --now ${f.calendar.moved.setting} to rehearse that day\n`);
  }
  if (f.globals.verbose) settings.log = (line) => { f.stderr.write(`${line}\n`); };
  const sandbox = await startSandbox(settings).catch((error: NodeJS.ErrnoException) => {
    const where = `${settings.host}:${settings.port}`;
    if (error.code === 'EADDRINUSE') throw new UsageError(`cannot listen on ${where}: the address is in use`, 'choose another --port, or --port 0 for a free one');
    throw new UsageError(`cannot listen on ${where}: ${error.message}`);
  });
  // the sandbox's clock, when --now moved it
  const now = opts.now === undefined ? undefined : parisTime(sandbox.now());
  // several accounts: each one's login and token (account 1's are also the top-level fields)
  const accounts = sandbox.accounts.length > 1 ? sandbox.accounts.map(({ email, password, token }) => ({ email, password, token })) : undefined;
  const info = { baseUrl: sandbox.baseUrl, email: sandbox.email, password: sandbox.password, token: sandbox.token, ...(now ? { now } : {}), ...(accounts ? { accounts } : {}) };
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify(info)}\n`);
  } else {
    const others = (accounts ?? []).slice(1).map((account, i) => `  account ${i + 2}: ${account.email} / ${account.password}, token ${account.token}\n`).join('');
    f.stdout.write(
      `Sandbox listening on ${info.baseUrl}\n` +
      `  email:    ${info.email}\n  password: ${info.password}\n  token:    ${info.token}\n` + others +
      `${now ? `  now:      ${now} (--now; the CLI follows with REPORTING_NOW=${now})\n` : ''}` +
      `  clock:    POST ${info.baseUrl}/sandbox/clock {"now": "2026-11-22T05:15:00"} sets it while it runs\n\n` +
      `Try:\n  reporting login --base-url ${info.baseUrl} --email ${info.email}\n` +
      `  export REPORTING_BASE_URL=${info.baseUrl} REPORTING_TOKEN=${info.token}\n` +
      `Press Ctrl-C to stop.\n`,
    );
  }
  await new Promise<void>((resolve) => {
    if (f.signal.aborted) resolve();
    f.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const stats = sandbox.stats();
  await sandbox.close();
  if (f.globals.json) {
    // a second line, after the first: scripts that read only the first are not affected
    f.stdout.write(`${JSON.stringify({ stopped: true, stats })}\n`);
  } else if (!f.globals.quiet) {
    f.stderr.write(`Sandbox stopped: ${stats.submitted} report${stats.submitted === 1 ? '' : 's'} submitted, at most ${stats.peakInProgress} in progress at once` +
      `${stats.refused > 0 ? `, ${stats.refused} refused` : ''}.\n`);
  }
}
