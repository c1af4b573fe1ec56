// `state show|forget|unlock FILE`: a recurring run's state file (`run --state FILE`) looked at,
// windows forgotten so that the next run fetches them again, and a dead run's lock removed, so
// that nobody needs to edit the file by hand (edits are what the state's checks guard against).

import { DateTime } from 'luxon';
import { CliError, EXIT, UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { LockedError } from '../fs/lock.js';
import { stateStoreOf, storeDeps } from '../engine/stores/kinds.js';
import type { LockView, StateStore } from '../engine/stores/store.js';
import { FileStore } from '../engine/stores/file.js';
import { TableStore } from '../engine/stores/table.js';
import { safeLine } from '../io/safe-text.js';
import { table } from '../io/table.js';
import { RunState, readStateOf, type StateDoc, type StateEntry } from '../engine/state.js';
import { parisDate } from '../report/time.js';
import { describeWindow } from '../report/windows.js';
import { didYouMean } from '../suggest.js';
import { PARIS_ZONE } from '../paris-zone.js';

/** `key`: with a database (`--state table`), which of its states */
export type StateOptions =
  | { action: 'show'; file: string; key?: string }
  | { action: 'forget'; file: string; key?: string; windows: string[] }
  | { action: 'unlock'; file: string; key?: string; force: boolean };

export async function run(opts: StateOptions, f: Factory): Promise<void> {
  // a local file by its real path (the one a run locks), or an object in a bucket
  const store = stateStoreOf(opts.file, { ...storeDeps(f), stateKey: opts.key });
  switch (opts.action) {
    case 'show':
      return show(store, f);
    case 'forget':
      return forget(store, opts.windows, f);
    case 'unlock':
      return unlock(store, opts.force, f);
  }
}

async function existing(store: StateStore): Promise<StateDoc> {
  const doc = await readStateOf(store);
  if (!doc) {
    if (store instanceof TableStore) throw new UsageError(`there is no state in ${store.name}`, 'a run with --load DATABASE --state table creates it');
    throw new UsageError(`there is no state ${store instanceof FileStore ? 'file' : 'object'} at ${store.name}`, 'a run with --state FILE creates it');
  }
  return doc;
}

const periodOf = (entry: StateEntry) => describeWindow({ since: entry.sinceUnix, until: entry.untilUnix });

// ---------------------------------------------------------------------------------------------
// show

async function show(store: StateStore, f: Factory): Promise<void> {
  const path = store.name;
  const doc = await existing(store);
  const lock = await store.inspectLock();
  if (lock && !f.globals.quiet) f.stderr.write(`note: ${safeLine(lockNote(path, lock))}\n`);
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify(doc.windows, null, f.stdout.isTTY ? 2 : undefined)}\n`);
    return;
  }
  const { request } = doc;
  const pairs = (record: Record<string, string | string[]>) =>
    Object.entries(record).map(([name, value]) => `${name}=${Array.isArray(value) ? value.join(',') : value}`).join(' ');
  const counts = new Map<string, number>();
  for (const entry of doc.windows) counts.set(entry.status, (counts.get(entry.status) ?? 0) + 1);
  const lines: [string, string][] = [
    ['side', request.side],
    ['metrics', request.metrics.join(',')],
    ['breakdowns', request.breakdowns.join(',') || '(none)'],
    ...(Object.keys(request.filters).length ? [['filters', pairs(request.filters)] as [string, string]] : []),
    ...(Object.keys(request.params).length ? [['params', pairs(request.params)] as [string, string]] : []),
    ['format', request.format],
    // a load-only run wrote no file and nothing to stdout: its table is where the rows went
    // (-o repeated: every output, in order)
    [request.outputs ? 'outputs' : 'output', request.outputs ? request.outputs.map((output) => output ?? '(stdout)').join(', ') : request.output ?? (request.load ? '(none: a table)' : '(stdout)')],
    ...(request.load ? [['load', `${request.load.table} in ${request.load.target}`] as [string, string]] : []),
    ...(request.chunk !== undefined ? [['chunk', request.chunk ?? '(none)'] as [string, string]] : []),
    ['updated', doc.updatedAt],
    // the period the last run planned: the next --since auto --lookback counts back from its end
    ...(doc.planned ? [['planned', `${describeWindow({ since: doc.planned.sinceUnix, until: doc.planned.untilUnix })} (at ${doc.planned.at})`] as [string, string]] : []),
    // multipart uploads a run left in flight (-o s3://): the next run aborts them
    ...(doc.uploads?.length ? [['uploads', doc.uploads.map((u) => `s3://${u.bucket}/${u.key} (${u.uploadId}, since ${u.startedAt})`).join('; ')] as [string, string]] : []),
    ['windows', doc.windows.length ? `${doc.windows.length} (${[...counts].map(([status, n]) => `${n} ${status}`).join(', ')})` : '0'],
  ];
  let text = lines.map(([name, value]) => `${`${name}:`.padEnd(12)}${safeLine(value)}\n`).join('');
  if (doc.windows.length) {
    const cells = doc.windows.map((entry) => [
      periodOf(entry), entry.status, entry.reportId ?? '', String(entry.attempts), entry.rows === null ? '' : String(entry.rows), entry.outputs?.map((output) => output.file ?? '(stdout)').join(', ') ?? entry.file ?? '', entry.error ?? '',
    ]);
    text += '\n';
    // on a terminal a table; elsewhere one tab-separated line per window (`cut -f2`), as gh does
    text += f.stdout.isTTY
      ? table(['PERIOD', 'STATUS', 'REPORT', 'ATTEMPTS', 'ROWS', 'FILE', 'ERROR'], cells, f.stdout.columns, { keep: [0, 1, 2, 3, 4] })
      : cells.map((row) => `${row.map(safeLine).join('\t')}\n`).join('');
  }
  f.stdout.write(text);
}

function lockNote(path: string, lock: LockView): string {
  if (!lock.holder) return `${lock.path} exists but was not written by reporting (or cannot be read)`;
  const who = `process ${lock.holder.pid}${lock.local ? '' : ` on ${lock.holder.host}`}`;
  if (lock.stale) {
    return `${lock.path} was left by ${who}, which is gone: the next run takes it over (or \`reporting state unlock ${path}\`)`;
  }
  // a lease: a killed run's runs out by itself
  const lease = lock.expiresAt === undefined ? '' : `; its lease runs until ${new Date(lock.expiresAt).toISOString()} unless renewed`;
  return `a run holds ${path} (${who}, since ${lock.holder.since}${lease}): what it records may change as it goes`;
}

// ---------------------------------------------------------------------------------------------
// forget

type Selector = { text: string; all: true } | { text: string; all: false; first: string; last: string };

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const FORMS = 'a Paris date (2026-11-03: the windows starting that day), a range (2026-11-01..2026-11-07) or all';

function parseDate(text: string, selector: string): string {
  if (!DATE.test(text) || !DateTime.fromISO(text, { zone: PARIS_ZONE }).isValid) {
    throw new UsageError(`"${selector}" is not a window: give ${FORMS}`);
  }
  return text;
}

function parseSelector(text: string): Selector {
  if (text.toLowerCase() === 'all') return { text, all: true };
  const [first, last, ...rest] = text.split('..');
  if (rest.length || first === undefined) throw new UsageError(`"${text}" is not a window: give ${FORMS}`);
  const from = parseDate(first, text);
  const to = last === undefined ? from : parseDate(last, text);
  if (to < from) throw new UsageError(`"${text}" ends before it starts`, `write the earlier date first: ${to}..${from}`);
  return { text, all: false, first: from, last: to };
}

/** The recorded windows each selector names (those starting on its days); one naming none is a usage error. */
function select(path: string, doc: StateDoc, selectors: readonly Selector[]): StateEntry[] {
  const chosen = new Set<StateEntry>();
  for (const selector of selectors) {
    const matching = doc.windows.filter((entry) => {
      if (selector.all) return true;
      const day = parisDate(entry.sinceUnix);
      return day >= selector.first && day <= selector.last;
    });
    if (!selector.all && matching.length === 0) {
      // the nearest in time first: a tie in spelling goes to the closest day
      const away = (entry: StateEntry) => Math.abs(Date.parse(parisDate(entry.sinceUnix)) - Date.parse(selector.first));
      const recorded = [...new Set([...doc.windows].sort((a, b) => away(a) - away(b)).flatMap((entry) => [parisDate(entry.sinceUnix), periodOf(entry)]))];
      throw new UsageError(
        `no window starting ${selector.first === selector.last ? `on ${selector.first}` : `in ${selector.text}`} is recorded in ${path}${didYouMean(selector.text, recorded)}`,
        `\`reporting state show ${path}\` lists the windows recorded`,
      );
    }
    for (const entry of matching) chosen.add(entry);
  }
  return doc.windows.filter((entry) => chosen.has(entry));
}

async function forget(store: StateStore, words: readonly string[], f: Factory): Promise<void> {
  const path = store.name;
  const selectors = words.map(parseSelector);
  // the request recorded, to open the file as a run would (locked; another run's: LockedError)
  const { request } = await existing(store);
  const state = await RunState.open(store, request, { now: f.calendar.now });
  let forgotten: StateEntry[];
  try {
    // chosen under the lock: what the file holds now
    forgotten = select(path, state.doc, selectors);
    if (forgotten.length) await state.forget(forgotten.map((entry) => ({ since: entry.sinceUnix, until: entry.untilUnix })));
  } finally {
    await state.close();
  }
  if (f.globals.json) {
    // the records as they were, field for field as in the file
    f.stdout.write(`${JSON.stringify(forgotten)}\n`);
  } else {
    for (const entry of forgotten) {
      const what = [entry.status, entry.reportId && `report ${entry.reportId}`, entry.file && `file ${entry.file}`].filter(Boolean).join(', ');
      f.stdout.write(`forgot ${safeLine(periodOf(entry))} (${safeLine(what)})\n`);
    }
  }
  if (f.globals.quiet) return;
  if (forgotten.length === 0) {
    f.stderr.write(`${path} records no window: nothing to forget\n`);
    return;
  }
  const files = forgotten.filter((entry) => entry.file !== null).length;
  f.stderr.write(`${forgotten.length} window${forgotten.length === 1 ? '' : 's'} forgotten: the next run covering ${forgotten.length === 1 ? 'it' : 'them'} fetches ${forgotten.length === 1 ? 'it' : 'them'} again\n`);
  if (files) f.stderr.write(`the ${files === 1 ? 'file' : `${files} files`} written for ${forgotten.length === 1 ? 'it is' : 'them are'} left as ${files === 1 ? 'it is' : 'they are'} until then\n`);
}

// ---------------------------------------------------------------------------------------------
// unlock

const seconds = (ms: number) => `${Math.max(0, Math.round(ms / 1000))} s`;

async function unlock(store: StateStore, force: boolean, f: Factory): Promise<void> {
  const path = store.name;
  const lock = await store.inspectLock();
  if (!lock) {
    if (f.globals.json) f.stdout.write(`${JSON.stringify({ lock: `${path}.lock`, removed: false, holder: null })}\n`);
    else if (!f.globals.quiet) f.stderr.write(`${path} is not locked: nothing to remove\n`);
    return;
  }
  const { holder } = lock;
  // a database session's lock (--state table): the server's, ended only with the session
  if (lock.session) await store.removeLock(lock);
  let why: string;
  if (!holder) {
    if (!force) throw new UsageError(`${lock.path} was not written by reporting (or cannot be read): left as it is`, `if no run uses ${path}, add --force to remove it`);
    why = 'not written by reporting; --force';
  } else if (lock.stale) {
    why = lock.local ? 'not running any more' : lock.expiresAt !== undefined ? `its lease ran out, not renewed for ${seconds(lock.ageMs)}` : `on another host, untouched for ${seconds(lock.ageMs)}`;
  } else if (lock.local) {
    // a process we can see running is never unlocked, --force or not: stop it instead
    throw new LockedError(path, holder, `unlock removes a lock only when its holder is gone: stop process ${holder.pid} first, or let it finish`);
  } else if (!force) {
    throw new LockedError(path, holder, `its holder on ${holder.host} ${lock.expiresAt !== undefined ? 'renewed' : 'touched'} it ${seconds(lock.ageMs)} ago (a run does every ${seconds(lock.renewEveryMs)}); if no run is going there, add --force`);
  } else {
    why = lock.expiresAt !== undefined ? `its lease renewed ${seconds(lock.ageMs)} ago; --force` : `on another host, touched ${seconds(lock.ageMs)} ago; --force`;
  }
  if (!await store.removeLock(lock)) {
    const now = await store.inspectLock();
    if (now?.holder) throw new LockedError(path, now.holder);
    throw new CliError(`${lock.path} changed while it was being removed`, EXIT.usage, 'look again: `reporting state show` says who holds it');
  }
  if (f.globals.json) {
    f.stdout.write(`${JSON.stringify({ lock: lock.path, removed: true, holder: holder ?? null })}\n`);
    return;
  }
  f.stdout.write(`removed ${safeLine(lock.path)}${holder ? ` of process ${holder.pid}${lock.local ? '' : ` on ${safeLine(holder.host)}`} since ${safeLine(holder.since)}` : ''} (${why})\n`);
}
