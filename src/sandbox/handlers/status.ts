// POST /status-reporting: where a report is (progress, ready, or the state it failed in).

import { sendJson } from '../http.js';
import { findReport, type Handler } from './handler.js';

export const reportStatus: Handler = (state, { req, res, params, seen }) => {
  const token = state.tokens.authorize(req.headers.authorization);
  const report = findReport(state, params, seen, state.tokens.accountOf(token));
  const status = seen.state ?? state.reports.stateOf(report, state.now());
  if (state.faults.malformed === 'wrong-types') {
    sendJson(res, 200, { response: { status: 1, message: null, report_id: 42 } });
    return;
  }
  const shown = state.faults.malformed === 'unknown-status' && status === 'ready' ? 'archived' : status;
  const message = shown === 'progress' || shown === 'ready' ? shown
    : report.failure ?? `report ${report.id} ended in status ${shown}`;
  sendJson(res, 200, { response: { status: shown, message, report_id: report.id } });
};
