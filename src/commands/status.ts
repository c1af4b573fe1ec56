// `status <id>`: print a report's status; --wait polls until it is ready.

import { checkReportIdArgument, type StatusResponse } from '../api/schemas.js';
import { ReportError } from '../errors.js';
import type { Factory } from '../factory.js';
import { safeText } from '../io/safe-text.js';
import { isFailed, reportFailed, pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';

export interface StatusOptions {
  id: string;
  waitForIt: boolean;
  wait: WaitFlags;
}

export async function run(opts: StatusOptions, f: Factory): Promise<void> {
  const { id } = opts;
  checkReportIdArgument(id);
  const { json, verbose } = f.globals;
  let last: StatusResponse | undefined;
  const poll = pollOptionsFrom(opts.wait, f, {
    onStatus: (status, polls, elapsed) => {
      last = status;
      if (verbose) f.stderr.write(`poll ${polls}: ${safeText(status.status)} after ${Math.round(elapsed / 1000)}s\n`);
    },
  });
  // stdout is the status word alone (`s=$(reporting status ID)`); the server's message goes to
  // stderr, where a failure's error already carries it
  const print = (status: StatusResponse) => {
    const message = status.message ?? status.status;
    if (json) {
      f.stdout.write(`${JSON.stringify({ reportId: id, status: status.status, message })}\n`);
      return;
    }
    f.stdout.write(`${safeText(status.status)}\n`);
    if (message !== status.status && !isFailed(status) && !f.globals.quiet) f.stderr.write(`${safeText(message)}\n`);
  };
  const client = f.client();
  if (!opts.waitForIt) {
    const status = await client.status(id);
    print(status);
    if (isFailed(status)) throw reportFailed(id, status);
    return;
  }
  try {
    print(await waitUntilReady(client, id, poll));
  } catch (error) {
    if (error instanceof ReportError && json && last) print(last);
    throw error;
  }
}
