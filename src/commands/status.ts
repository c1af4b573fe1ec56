import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { addWaitOptions, optionsOf } from './options.js';

export interface StatusOptions {
  wait?: boolean;
  pollInterval?: string;
  maxWait: string;
}

export const statusCommand: CommandSpec = {
  name: 'status',
  summary: "print a report's status; --wait polls until it is ready",
  define(command: Command, ctx: Context) {
    command.argument('<id>', 'report ID').option('--wait', 'poll until the report is ready (exit 6 if it fails or --max-wait passes)');
    addWaitOptions(command, 'the report').addHelpText('after', `
A status other than progress or ready means the report failed: exit 6.

Examples:
  reporting status 87a72010101115
  reporting status 87a72010101115 --wait --max-wait 10m
  reporting status 87a72010101115 --json | jq -r .status`);
    command.action(async (id: string, _options: StatusOptions, cmd: Command) => run(id, optionsOf<StatusOptions>(cmd), ctx));
  },
};

export async function run(id: string, options: StatusOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { withSession } = await import('../session.js');
  const { pollOptionsFrom, reportFailed, waitUntilReady } = await import('../report/poll.js');
  const { ReportError } = await import('../errors.js');
  let last: { status: string; message?: string | null } | undefined;
  const poll = pollOptionsFrom(options, ctx, {
    onStatus: (status, polls, elapsed) => {
      last = status;
      if (options.verbose) ctx.stderr.write(`poll ${polls}: ${status.status} after ${Math.round(elapsed / 1000)}s\n`);
    },
  });
  const print = (status: { status: string; message?: string | null }) => {
    const message = status.message ?? status.status;
    ctx.stdout.write(options.json
      ? `${JSON.stringify({ reportId: id, status: status.status, message })}\n`
      : `${status.status}${message !== status.status ? `: ${message}` : ''}\n`);
  };
  await withSession(ctx, options, async (session) => {
    const client = session.client();
    if (!options.wait) {
      const status = await client.status(id);
      print(status);
      if (status.status !== 'progress' && status.status !== 'ready') {
        throw reportFailed(id, status);
      }
      return;
    }
    try {
      print(await waitUntilReady(client, id, poll));
    } catch (error) {
      if (error instanceof ReportError && options.json && last) print(last);
      throw error;
    }
  });
}
