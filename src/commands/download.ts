// `download <id>`: checks the status first (the contract forbids downloading before `ready`).

import { checkReportIdArgument } from '../api/schemas.js';
import { configDir } from '../auth/store.js';
import { ReportError, UsageError } from '../errors.js';
import { droppedWarning, expandTemplate, isTabular, planOutput, refuseBinaryOnTerminal, resolveRequestedColumns, type OutputOptions, type OutputPlan } from '../export/output.js';
import { Journal, type ReportAbout } from '../engine/journal.js';
import { readStateOf } from '../engine/state.js';
import { stateStoreOf, storeDeps } from '../engine/stores/kinds.js';
import { checkOutputNow } from '../destinations/sinks.js';
import type { Factory } from '../factory.js';
import { SIDES, columnNames } from '../report/catalog.js';
import type { ColumnCase } from '../report/column-case.js';
import { createReporter } from '../io/progress.js';
import { shellCommand } from '../io/shell.js';
import { describeSaved, outputDeps, saveReport, targetOf } from '../engine/download.js';
import { isFailed, reportFailed, pollOptionsFrom, waitUntilReady, type WaitFlags } from '../report/poll.js';

export interface DownloadOptions {
  id: string;
  /** poll until ready first */
  waitForIt: boolean;
  output: OutputOptions;
  wait: WaitFlags;
  /** false with --no-validate: --columns may name any field */
  validate: boolean;
  /** --state FILE: the state of the run that submitted the report, which says its request and columns */
  state?: string;
}

/** Where the request of a report is known from, said when it is not. */
const UNKNOWN_REQUEST = 'reporting buyer or seller did not submit it from this configuration folder in the last 7 days';

/** What is known of the report's request: from the state file given (with the columns its files
 * have: null, every field), or from the journal of an interrupted run (less than an hour old). */
interface Known {
  about: ReportAbout;
  columns?: string[] | null;
  /** the state's --column-case */
  columnCase?: ColumnCase;
}

async function knownRequest(opts: DownloadOptions, f: Factory): Promise<Known | undefined> {
  if (opts.state !== undefined) {
    // a file, or an object in a bucket (read, never locked nor written)
    const doc = await readStateOf(stateStoreOf(opts.state, storeDeps(f)));
    if (!doc) throw new UsageError(`no state file ${opts.state}`, 'give --state the file of the run that submitted the report, or drop it');
    if (!doc.windows.some((window) => window.reportId === opts.id)) {
      throw new UsageError(`report ${opts.id} is not in the state file ${opts.state}`, 'give the state file of the run that submitted it, or drop --state (then the columns are every field unless named with --columns)');
    }
    const { side, metrics, breakdowns, columns, columnCase } = doc.request;
    return { about: { side, metrics, breakdowns }, columns: columns ?? null, columnCase };
  }
  // an interrupted run's report (the journal, an hour), else one `buyer` or `seller` submitted
  // here in the last 7 days
  const journal = new Journal(configDir(f.env, f.host.platform), f.now);
  const about = journal.findReport(opts.id)?.about ?? journal.requestOf(opts.id);
  return about ? { about } : undefined;
}

/** The output plan once the request is known, or known to be unknown: by default the columns the
 * state's files have, else the requested ones, else (no journal entry, no state) every field; and
 * by default the state's column case. */
function planColumns(given: OutputPlan, known: Known | undefined, caseGiven: boolean): OutputPlan {
  const plan = !caseGiven && known?.columnCase ? { ...given, csv: { ...given.csv, columnCase: known.columnCase } } : given;
  if (known && plan.columnsBy === 'default' && known.columns !== undefined && isTabular(plan.format)) {
    const shaped: OutputPlan = known.columns === null ? { ...plan, columnsBy: 'all' } : { ...plan, columnsBy: 'named', csv: { ...plan.csv, columns: [...known.columns] } };
    return resolveRequestedColumns(shaped, known.about);
  }
  return resolveRequestedColumns(plan, known?.about);
}

export async function run(opts: DownloadOptions, f: Factory): Promise<void> {
  const { id } = opts;
  checkReportIdArgument(id);
  const { json, quiet } = f.globals;
  if (opts.output.output) await checkOutputNow(expandTemplate(opts.output.output, { reportId: id }), outputDeps(f));
  // the side of a report is not known before its download: --columns may name a field of either
  const known = await knownRequest(opts, f);
  const plan = planColumns(planOutput({ ...opts.output, json, validate: opts.validate }, ['reportId'], columnNames(SIDES)), known, opts.output.columnCase !== undefined);
  refuseBinaryOnTerminal(plan, f.stdout);
  // the columns are every field because the request is not known here: said, in one line
  if (!known && !quiet && plan.columnsBy === 'default' && isTabular(plan.format)) {
    f.stderr.write(`note: report ${id}'s request is not known here (${UNKNOWN_REQUEST}): every field is written; --state FILE or --columns names the columns\n`);
  }
  const poll = pollOptionsFrom(opts.wait, f);
  const target = targetOf(plan, { reportId: id });

  const client = f.client();
  const reporter = await createReporter(f, quiet);
  const again = shellCommand(['reporting', 'download', id, '--wait', ...(target ? ['-o', target] : [])]);
  const first = await client.status(id);
  if (first.status === 'progress' && !opts.waitForIt) {
    throw new ReportError(`report ${id} is not ready yet (status: progress)`, id, `add --wait to wait for it: ${again}`);
  }
  if (isFailed(first)) throw reportFailed(id, first);
  if (first.status === 'progress') {
    // stopped on every path: the error starts on its own line, the terminal is restored
    await waitUntilReady(client, id, { ...poll, resumeHint: () => `pick it up later with: ${again}`, onStatus: (status, polls, elapsed) => reporter.waiting(status.status, polls, elapsed) })
      .finally(() => reporter.stop());
  }
  const saved = await saveReport(f, client, id, plan, target, f.globals.retries, reporter);
  if (!quiet) reporter.note(describeSaved(saved, id, undefined, plan.format));
  // fields the chosen columns left out that held values: named, never dropped silently
  const dropped = droppedWarning(plan);
  if (dropped && !quiet) reporter.note(`warning: ${dropped}`);
  if (json && saved.path) {
    const droppedFields = plan.csv.dropped?.size ? { droppedFields: [...plan.csv.dropped] } : {};
    f.stdout.write(`${JSON.stringify({ reportId: id, rows: saved.rows, file: saved.path, format: plan.format, summary: saved.summary ?? null, ...droppedFields })}\n`);
  }
}
