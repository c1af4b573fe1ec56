// What every endpoint's handler receives, and what status and download share: finding a report.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from '../http.js';
import { single, type ReceivedParams } from '../params.js';
import type { SandboxState, StoredReport } from '../state.js';

/** What a request was about, for the report log: set by the handlers, read when it is answered. */
export interface Seen {
  reportId?: string;
  state?: string;
}

/** One request, its parameters already read (query string and body). */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  params: ReceivedParams;
  seen: Seen;
}

/** Answers one endpoint; a refusal is thrown as an HttpError, which the server sends. Every handler
 * but login's starts with `state.tokens.authorize(...)`, after the parameters are read, as the API
 * does (a bad body is a 400 before a bad token is a 401). */
export type Handler = (state: SandboxState, exchange: Exchange) => void | Promise<void>;

/** The report named by the `id` parameter (of the token's account), noting its ID and state for the report log. */
export function findReport(state: SandboxState, params: ReceivedParams, seen: Seen, account: number): StoredReport {
  const id = single(params, 'id');
  if (!id) throw new HttpError(400, 'MISSING_PARAMETER', 'id is required: the report ID');
  seen.reportId = id;
  state.reports.forgetExpired(state.now());
  const report = state.reports.get(id);
  // another account's report is none of this token's business
  if (!report || report.account !== account) throw new HttpError(404, 'NOT_FOUND', `no report with id ${id}`);
  seen.state = state.reports.stateOf(report, state.now());
  return report;
}
