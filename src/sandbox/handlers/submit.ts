// POST /buyer-reporting and /seller-reporting: a report request becomes a report in `progress`.

import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Side } from '../../report/catalog.js';
import { HttpError, sendJson } from '../http.js';
import type { SandboxState, StoredReport } from '../state.js';
import { validate } from '../validate.js';
import { planWork, restatedFrom } from '../work.js';
import type { Handler } from './handler.js';

export function submitReport(side: Side): Handler {
  return (state, { req, res, params, seen }) => {
    const token = state.tokens.authorize(req.headers.authorization);
    const query = validate(side, params);
    const at = state.now();
    refuseOverLimit(state, res, token, at);
    state.reports.forgetExpired(at);
    const id = randomBytes(12).toString('hex');
    const work = planWork(query, state.model);
    const revision = state.reports.nextRevision();
    const account = state.tokens.accountOf(token);
    const report: StoredReport = { id, account, query, submittedAt: at, doneAt: at + work.progressMs };
    if (work.failure !== undefined) report.failure = work.failure;
    const { restateMs } = state.options;
    if (restateMs !== undefined) report.restated = { from: restatedFrom(at, restateMs), revision };
    state.reports.add(report);
    state.ledger.submitted(token, {
      id, side, since: query.since, until: query.until, breakdowns: [...query.breakdowns],
      submittedAt: at, doneAt: report.doneAt, outcome: state.reports.outcomeOf(report), revision, account,
    });
    seen.reportId = id;
    seen.state = 'progress';
    const response = state.faults.malformed === 'no-report-id' ? { status: 'OK' } : { status: 'OK', report_id: id };
    sendJson(res, 200, { response });
  };
}

/** --max-running: a token with that many reports in progress is answered 429, with Retry-After
 * saying when the first of them is done. */
function refuseOverLimit(state: SandboxState, res: ServerResponse, token: string, at: number): void {
  const maxRunning = state.options.maxRunningFor?.(token) ?? state.options.maxRunning;
  if (maxRunning === undefined) return;
  const running = state.ledger.inProgress(token, at);
  if (running.length < maxRunning) return;
  state.ledger.refused();
  const wait = Math.max(1, Math.ceil(((running[0] ?? at) - at) / 1000));
  res.setHeader('Retry-After', String(wait));
  throw new HttpError(429, 'TOO_MANY_REPORTS', `too many reports in progress: ${running.length} of at most ${maxRunning}; retry in ${wait} s`);
}
