import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { CommandSpec } from './index.js';
import type { GlobalOptions } from '../cli.js';
import type { SandboxFlags } from '../sandbox/options.js';
import { UsageError } from '../errors.js';

export interface SandboxCommandOptions extends SandboxFlags {
  json?: boolean;
  verbose?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export const sandboxCommand: CommandSpec = {
  name: 'sandbox',
  summary: 'run a local emulator of the Reporting API (for trying the CLI and testing scripts)',
  define(command: Command, ctx: Context) {
    command
      .option('--port <port>', 'port to listen on (0 picks a free one)', '8787')
      .option('--host <host>', 'address to listen on', '127.0.0.1')
      .option('--seed <n>', 'seed of the synthetic data', '42')
      .option('--delay <duration>', 'how long a report stays in progress (default 1s; with --work, the least, 0 by default)')
      .option('--work <duration>', 'work model: time in progress per day of period (+10% per breakdown but RANGE, DAILY, MONTHLY)')
      .option('--max-running <n>', 'answer 429 with Retry-After to submits beyond N reports in progress per token')
      .option('--fail-over-days <n>', 'reports touching more than N days end in failed ("too much data")')
      .option('--restate <duration>', 'numbers of the days within DURATION before now change with every submission (e.g. 3d)')
      .option('--report-ttl <duration>', 'forget report IDs this long after submission (status and download answer 404)')
      .option('--now <instant>', 'the sandbox clock starts at this ISO 8601 instant (for --restate and --report-ttl)')
      .option('--latency <duration>', 'fault: delay before every answer')
      .option('--error <spec>', 'fault: STATUS[,endpoint=NAME][,first=N|,rate=R][,retry-after=S][,html] (repeatable)', collect, [])
      .option('--reset-download <spec>', 'fault: BYTES[,times=N]: reset the connection after BYTES of a download')
      .option('--stall-download <spec>', 'fault: BYTES[,times=N]: go silent after BYTES of a download')
      .option('--token-uses <n>', 'fault: tokens expire after N uses')
      .option('--report-status <status>', 'fault: reports end in this status instead of ready (e.g. failed)')
      .option('--malformed <kind>', 'fault: answer malformed JSON: truncated, wrong-types, no-report-id, data-not-array, unknown-status')
      .option('--scale <rows>', 'every download returns this many rows, streamed')
      .option('--layout <layout>', 'JSON layout of downloads: compact, pretty, summary-first', 'compact')
      .addHelpText('after', `
Examples:
  reporting sandbox
  reporting sandbox --port 0 --json
  reporting sandbox --error 503,endpoint=download,first=2 --token-uses 5
  reporting sandbox --scale 1000000 --delay 200ms
  reporting sandbox --work 0.5s --max-running 8 --fail-over-days 31
  reporting sandbox --restate 3d --report-ttl 1h --now 2026-11-21T06:00:00+01:00`)
      .action(async (options: SandboxCommandOptions, cmd: Command) => {
        await run({ ...cmd.optsWithGlobals<GlobalOptions & SandboxCommandOptions>(), ...options }, ctx);
      });
  },
};

export async function run(options: SandboxCommandOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { sandboxOptionsFrom } = await import('../sandbox/options.js');
  const { startSandbox } = await import('../sandbox/server.js');
  const settings = sandboxOptionsFrom(options);
  if (options.verbose) settings.log = (line) => { ctx.stderr.write(`${line}\n`); };
  const sandbox = await startSandbox(settings).catch((error: NodeJS.ErrnoException) => {
    const where = `${settings.host}:${settings.port}`;
    if (error.code === 'EADDRINUSE') throw new UsageError(`cannot listen on ${where}: the address is in use`, 'choose another --port, or --port 0 for a free one');
    throw new UsageError(`cannot listen on ${where}: ${error.message}`);
  });
  const info = { baseUrl: sandbox.baseUrl, email: sandbox.email, password: sandbox.password, token: sandbox.token };
  if (options.json) {
    ctx.stdout.write(`${JSON.stringify(info)}\n`);
  } else {
    ctx.stdout.write(
      `Sandbox listening on ${info.baseUrl}\n` +
      `  email:    ${info.email}\n  password: ${info.password}\n  token:    ${info.token}\n\n` +
      `Try:\n  reporting login --base-url ${info.baseUrl} --email ${info.email}\n` +
      `  export REPORTING_BASE_URL=${info.baseUrl} REPORTING_TOKEN=${info.token}\n` +
      `Press Ctrl-C to stop.\n`,
    );
  }
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const stats = sandbox.stats();
  await sandbox.close();
  if (options.json) {
    // a second line, after the first: scripts that read only the first are not affected
    ctx.stdout.write(`${JSON.stringify({ stopped: true, stats })}\n`);
  } else if (!options.quiet) {
    ctx.stderr.write(`Sandbox stopped: ${stats.submitted} reports submitted, at most ${stats.peakInProgress} in progress at once` +
      `${stats.refused > 0 ? `, ${stats.refused} refused` : ''}.\n`);
  }
}
