// POST /download-reporting: a ready report's rows and summary, streamed in the chosen layout.

import { BodyWriter } from '../body.js';
import { HttpError } from '../http.js';
import { buildRows, scaledRowTexts, summaryOf } from '../report.js';
import type { SandboxState, StoredReport } from '../state.js';
import { findReport, type Handler } from './handler.js';

export const downloadReport: Handler = async (state, { req, res, params, seen }) => {
  const token = state.tokens.authorize(req.headers.authorization);
  const report = findReport(state, params, seen, state.tokens.accountOf(token));
  const status = seen.state ?? state.reports.stateOf(report, state.now());
  if (status !== 'ready') {
    throw new HttpError(400, 'NOT_READY', `report ${report.id} is not ready (status: ${status}); poll /status-reporting until it is ready`);
  }
  const { plan, faults } = state;
  const body = new BodyWriter(res, plan.takeBodyFault(faults.resetDownload), plan.takeBodyFault(faults.stallDownload), state.pending);
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  await writeReport(state, report, body);
};

/** `{"data":[...],"summary":{...}}`, compact or pretty, or with the summary first. */
async function writeReport(state: SandboxState, report: StoredReport, body: BodyWriter): Promise<void> {
  const { layout, faults } = state;
  const pretty = layout === 'pretty';
  const summary = JSON.stringify(summaryOf(report.query), null, pretty ? 2 : undefined);
  const sep = pretty ? ',\n    ' : ',';
  await body.write(layout === 'summary-first' ? `{"summary":${summary},"data":` : pretty ? '{\n  "data": ' : '{"data":');
  if (faults.malformed === 'data-not-array') {
    await body.write('{"rows":0}');
  } else {
    await body.write(pretty ? '[\n    ' : '[');
    let first = true;
    for (const row of rowTexts(state, report)) {
      if (state.closing || body.stopped) return;
      await body.write(first ? row : sep + row);
      first = false;
    }
    await body.write(pretty ? '\n  ]' : ']');
  }
  await body.write(layout === 'summary-first' ? '}' : pretty ? `,\n  "summary": ${summary}\n}\n` : `,"summary":${summary}}`);
  await body.end(faults.malformed === 'truncated');
}

/** Each row as JSON text: the report's aggregated rows, or --scale's generated ones. */
function* rowTexts(state: SandboxState, report: StoredReport): Generator<string> {
  const { scaleRows } = state.options;
  if (scaleRows !== undefined) {
    yield* scaledRowTexts(state.sourceOf(report.account), report.query, scaleRows);
    return;
  }
  const added = state.options.newField;
  for (const row of buildRows(state.sourceOf(report.account), report.query, report.restated)) {
    const text = JSON.stringify(row);
    // a count the rows did not carry before `from`, made of the row (the same row, the same value)
    if (added && typeof row.date === 'string' && row.date.slice(0, 10) >= added.from) yield `${text.slice(0, -1)},${JSON.stringify(added.name)}:${text.length}}`;
    else yield text;
  }
}
