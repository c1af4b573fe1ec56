// /sandbox/clock: the sandbox's clock, read (GET) or set (POST {"now": ...}) while it runs, so that
// a rehearsal of several nights keeps the reports of a running sandbox (a crashed night's report is
// still there to resume). Not part of the API contract: a control of the emulator, outside the
// fault plan and the request log's endpoints.

import { parseInstant } from '../../clock.js';
import { UsageError } from '../../errors.js';
import { HttpError, readParams, sendJson } from '../http.js';
import { single } from '../params.js';
import type { SandboxState } from '../state.js';
import type { Exchange } from './handler.js';

export const CLOCK_PATH = '/sandbox/clock';

export async function clockControl(state: SandboxState, { req, res }: Pick<Exchange, 'req' | 'res'>): Promise<void> {
  if (req.method === 'POST') {
    const params = await readParams(req);
    const now = single(params, 'now');
    if (!now) throw new HttpError(400, 'MISSING_PARAMETER', 'now is required: an ISO 8601 time (Paris time without an offset) or Unix seconds');
    try {
      state.setNow(parseInstant(now, 'now'));
    } catch (error) {
      if (error instanceof UsageError) throw new HttpError(400, 'INVALID_PARAMETER', error.message);
      throw error;
    }
  } else if (req.method !== 'GET') {
    res.setHeader('Allow', 'GET, POST');
    throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${CLOCK_PATH} takes GET or POST`);
  }
  sendJson(res, 200, { now: new Date(state.now()).toISOString() });
}
