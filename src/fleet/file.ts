// A job file (`reporting.yaml`): every report of every account, declared once. Read here into
// jobs, each the words of the `run` command line it stands for, checked by `run`'s own parser
// (handed in: src/cli/run-words.ts) and placed in the file (line:column) when something is wrong.
// Nothing here sends a request; the profiles are checked by the command (it has the token store).

import { dirname, isAbsolute, resolve } from 'node:path';
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node, type Pair, type YAMLMap } from 'yaml';
import { CliError, EXIT, UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';

export const JOB_FILE = 'reporting.yaml';
/** the most reports running at once across all jobs of one process */
export const MAX_BUDGET = 64;

export interface RunFlagInfo {
  name: string;
  value: boolean;
  negate: boolean;
  many: boolean;
}

/** A place in the file, as errors name it. */
export interface At {
  line: number;
  col: number;
}

export interface FileJob {
  /** the expanded name: `NAME`, or `NAME@PROFILE` for a job of several profiles */
  name: string;
  /** the name as written */
  base: string;
  profile: string;
  /** where its profile is named (the item of `profiles`) */
  profileAt: At;
  side: string;
  /** `run`'s words after `reporting run` (side first), paths made absolute */
  words: string[];
  /** where the job starts, and where each of its keys' values is */
  at: At;
  keys: Map<string, At>;
  /** each run flag's words, by key (the key's value alone is checked against its place) */
  keyWords: Map<string, string[]>;
  /** the state file and output as resolved (absolute), for the checks between jobs */
  state?: string;
  output?: string;
  /** the job loads into a table (`load`, or REPORTING_LOAD): without output, nothing goes to stdout */
  loads?: boolean;
}

export interface JobFile {
  /** the file as named (errors and retry commands name it so) */
  file: string;
  folder: string;
  concurrency?: number;
  perProfile?: number;
  jobs: FileJob[];
  /** the values `${VAR}` read from the environment: masked wherever a job's words are shown */
  secrets: string[];
}

/** A mistake in the job file: `FILE:LINE:COL: message`, exit 2. */
export class JobFileError extends UsageError {
  constructor(file: string, at: At | undefined, message: string, hint?: string) {
    super(`${file}${at ? `:${at.line}:${at.col}` : ''}: ${message}`, hint);
  }
}

const OWN_KEYS = ['name', 'side', 'profile', 'profiles'];
const TOP_KEYS = ['version', 'concurrency', 'per-profile', 'defaults', 'jobs'];
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** keys whose values are paths: relative ones are relative to the file's folder (and `load:
 * duckdb:PATH`'s PATH) */
const PATH_KEYS = new Set(['state', 'output']);
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

interface Entry {
  key: string;
  value: Node | null;
  at: At;
}

/** Reads a job file's text: the file's structure and every key, each job's values as `run` words.
 * `env` fills `${VAR}`; `flags` are run's long flags (the keys a job may hold). */
export function readJobFile(text: string, file: string, cwd: string, env: Record<string, string | undefined>, flags: readonly RunFlagInfo[]): JobFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const atOf = (offset: number): At => {
    const pos = lines.linePos(offset);
    return { line: pos.line, col: pos.col };
  };
  const where = (node: Node | null | undefined, fallback?: At): At | undefined => (node?.range ? atOf(node.range[0]) : fallback);
  const fail = (at: At | undefined, message: string, hint?: string): never => {
    throw new JobFileError(file, at, message, hint);
  };
  const first = doc.errors[0];
  if (first) fail(atOf(first.pos[0]), `not valid YAML: ${first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`);
  const root = doc.contents;
  if (!isMap(root)) return fail(where(root as Node | null, { line: 1, col: 1 }), 'a job file is a mapping with version, jobs, and optionally concurrency, per-profile and defaults', 'see docs/jobs.md');
  const top = entriesOf(root, atOf, doc);
  const topKey = (name: string) => top.find((e) => e.key === name);
  for (const entry of top) {
    if (!TOP_KEYS.includes(entry.key)) fail(entry.at, `unknown key "${entry.key}"${didYouMean(entry.key, TOP_KEYS)}`, `a job file's keys are ${TOP_KEYS.join(', ')}`);
  }
  const version = topKey('version');
  if (!version) fail({ line: 1, col: 1 }, 'version is missing', 'start the file with: version: 1');
  else if (!isScalar(version.value) || version.value.value !== 1) fail(where(version.value, version.at), 'version is 1 (the only version of the job file)');
  const count = (entry: Entry | undefined, max: number) => {
    if (!entry) return undefined;
    const value = isScalar(entry.value) ? entry.value.value : undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) fail(where(entry.value, entry.at), `${entry.key} wants a whole number from 1 to ${max}`);
    return value as number;
  };
  const concurrency = count(topKey('concurrency'), MAX_BUDGET);
  const perProfile = count(topKey('per-profile'), MAX_BUDGET);

  const byName = new Map(flags.map((flag) => [flag.name, flag]));
  const known = [...OWN_KEYS, ...flags.map((flag) => flag.name)];
  /** a key as run's flag: `split: false` is `no-split: true` */
  const canonical = (entry: Entry): { flag?: RunFlagInfo; key: string; invert: boolean } => {
    if (OWN_KEYS.includes(entry.key)) return { key: entry.key, invert: false };
    const flag = byName.get(entry.key);
    if (flag) return { flag, key: flag.name, invert: false };
    const negated = byName.get(`no-${entry.key}`);
    if (negated?.negate) return { flag: negated, key: negated.name, invert: true };
    const hint = entry.key.startsWith('-') ? 'keys are run\'s long flag names without the dashes' : 'keys are run\'s long flag names (see `reporting run --help`), and name, side, profile or profiles';
    return fail(entry.at, `unknown option "${entry.key}"${didYouMean(entry.key.replace(/^-+/, ''), known)}`, hint);
  };

  const defaultsEntry = topKey('defaults');
  let defaults: Entry[] = [];
  if (defaultsEntry && defaultsEntry.value !== null) {
    if (!isMap(defaultsEntry.value)) fail(where(defaultsEntry.value, defaultsEntry.at), 'defaults is a mapping of run options (since: auto, chunk: day, ...)');
    defaults = entriesOf(defaultsEntry.value as YAMLMap, atOf, doc);
    for (const entry of defaults) {
      if (entry.key === 'name') fail(entry.at, 'name belongs to each job, not to defaults');
      canonical(entry);
    }
  }

  const jobsEntry = topKey('jobs');
  if (!jobsEntry) return fail({ line: 1, col: 1 }, 'jobs is missing', 'add jobs: a list of jobs, each with a name and a side');
  const list = jobsEntry.value;
  if (!isSeq(list) || list.items.length === 0) return fail(where(list, jobsEntry.at), 'jobs is a list of jobs, each with a name and a side');
  const folder = dirname(resolve(cwd, file));

  /** `${VAR}` from the environment; a missing one is an error at its value */
  const secrets = new Set<string>();
  const expandEnv = (text: string, at: At | undefined) => text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const value = env[name];
    if (value === undefined) fail(at, `\${${name}} is not set in the environment`, `set ${name}, or write the value in the file`);
    if ((value as string).trim() !== '') secrets.add(value as string);
    return value as string;
  });
  const scalarText = (entry: Entry): string | number | boolean | null => {
    if (entry.value === null || (isScalar(entry.value) && entry.value.value === null)) return null;
    if (!isScalar(entry.value)) return fail(where(entry.value, entry.at), `${entry.key} wants one value, not a ${isSeq(entry.value) ? 'list' : 'mapping'}`);
    const value = entry.value.value;
    if (typeof value === 'string') return expandEnv(value, where(entry.value, entry.at));
    if (typeof value === 'number' || typeof value === 'boolean') return value;
    return String(value);
  };
  const items = (entry: Entry): { text: string | number | boolean | null; at: At | undefined }[] => {
    if (!isSeq(entry.value)) return [{ text: scalarText(entry), at: where(entry.value, entry.at) }];
    return entry.value.items.map((listed) => {
      const item = resolved(listed as Node, doc);
      const at = where(item, entry.at);
      if (!isScalar(item)) return fail(at, `${entry.key}'s list holds values, not lists or mappings`);
      return { text: typeof item.value === 'string' ? expandEnv(item.value, at) : (item.value as number | boolean | null), at };
    });
  };

  const jobs: FileJob[] = [];
  for (const listed of list.items) {
    const item = resolved(listed as Node, doc);
    const jobAt = where(item, jobsEntry.at) as At;
    if (!isMap(item)) fail(jobAt, 'a job is a mapping: name, side, and run options');
    const own = entriesOf(item as YAMLMap, atOf, doc);
    // the job's keys win over the defaults', key by key (`split: false` and `no-split` are one key)
    const merged = new Map<string, { entry: Entry; invert: boolean; flag?: RunFlagInfo }>();
    for (const entry of [...defaults, ...own]) {
      const { key, invert, flag } = canonical(entry);
      merged.set(key === 'profiles' ? 'profile' : key, { entry, invert, flag });
    }
    const nameEntry = own.find((e) => e.key === 'name');
    if (!nameEntry) return fail(jobAt, 'a job needs a name', 'add name: buyer-daily, for example');
    const base = scalarText(nameEntry);
    if (typeof base !== 'string' || !NAME.test(base)) return fail(where(nameEntry.value, nameEntry.at), `a job's name is letters, digits, ".", "_" and "-" (no "@", "*" or spaces), not ${JSON.stringify(base)}`);
    const sideEntry = merged.get('side')?.entry;
    if (!sideEntry) return fail(jobAt, `job "${base}" has no side`, 'add side: buyer, or side: seller');
    const side = String(scalarText(sideEntry) ?? '');
    const profileEntry = merged.get('profile')?.entry;
    let profiles: { name: string; at: At | undefined }[] = [{ name: 'default', at: jobAt }];
    if (profileEntry) {
      if (profileEntry.key === 'profile' && isSeq(profileEntry.value)) fail(where(profileEntry.value, profileEntry.at), 'profile names one profile: write profiles: [a, b] for several (one job each)');
      profiles = items(profileEntry).map(({ text, at }) => {
        if (typeof text !== 'string' || !NAME.test(text)) return fail(at, `a profile name, not ${JSON.stringify(text)}`);
        return { name: text, at };
      });
      if (profiles.length === 0) fail(where(profileEntry.value, profileEntry.at), 'profiles lists at least one profile');
    }
    const several = profileEntry?.key === 'profiles';
    for (const { name: profile, at: profileAt } of profiles) {
      const name = several ? `${base}@${profile}` : base;
      const fill = (text: string) => text.replaceAll('{job}', name).replaceAll('{profile}', profile);
      const words = [side];
      const keys = new Map<string, At>();
      const keyWords = new Map<string, string[]>();
      let state: string | undefined;
      let output: string | undefined;
      for (const [key, { entry, invert, flag }] of merged) {
        const at = where(entry.value, entry.at) as At;
        keys.set(key, at);
        if (!flag) continue;
        const mine: string[] = [];
        keyWords.set(key, mine);
        if (!flag.value) {
          const value = scalarText(entry);
          if (typeof value !== 'boolean') fail(at, `${entry.key} is a switch: true or false, not ${JSON.stringify(value)}`);
          if (value !== invert) mine.push(`--${flag.name}`);
          words.push(...mine);
          continue;
        }
        if (isSeq(entry.value) && !flag.many) fail(at, `${entry.key} takes one value, not a list`);
        for (const { text, at: itemAt } of items(entry)) {
          if (text === null || typeof text === 'boolean') fail(itemAt, `${entry.key} wants a value${text === null ? '' : `, not ${text}`}`);
          let value = fill(String(text));
          if (PATH_KEYS.has(key) && value !== '-' && !URL_LIKE.test(value) && !isAbsolute(value)) value = resolve(folder, value);
          // a DuckDB file is a path too; a postgres:// URL is left as written
          const duckdb = key === 'load' ? /^duckdb:(.+)$/is.exec(value.trim()) : null;
          // `..` kept: the file system resolves it after the symbolic link before it (paths.ts realFilePath)
          if (duckdb?.[1] && !duckdb[1].startsWith(':') && !isAbsolute(duckdb[1])) value = `duckdb:${folder.replace(/\/$/, '')}/${duckdb[1]}`;
          if (key === 'state') state = value;
          if (key === 'output') output = value;
          mine.push(`--${flag.name}=${value}`);
        }
        words.push(...mine);
      }
      const loads = keyWords.has('load') ? (keyWords.get('load') ?? []).length > 0 : Boolean(env.REPORTING_LOAD?.trim());
      jobs.push({ name, base, profile, profileAt: profileAt ?? jobAt, side, words, at: jobAt, keys, keyWords, state, output, loads });
    }
  }
  refuseDuplicates(file, jobs);
  return { file, folder, concurrency, perProfile, jobs, secrets: [...secrets] };
}

/** A map's entries; a value that is an alias (`breakdowns: *b`) is the node its anchor names. */
function entriesOf(map: YAMLMap, atOf: (offset: number) => At, doc: Document): Entry[] {
  return map.items.map((pair: Pair) => {
    const keyNode = pair.key as Node | null;
    const at = keyNode?.range ? atOf(keyNode.range[0]) : { line: 1, col: 1 };
    const key = isScalar(keyNode) ? String(keyNode.value) : '';
    return { key, value: resolved(pair.value as Node | null, doc), at };
  });
}

/** The node an alias names (an anchor defined earlier in the file), else the node itself. */
function resolved<N extends Node | null>(node: N, doc: Document): N | Node {
  return isAlias(node) ? (node.resolve(doc) as Node | undefined) ?? node : node;
}

/** Two jobs of one name, state file or output: one would overwrite the other's. */
function refuseDuplicates(file: string, jobs: readonly FileJob[]): void {
  const seen = new Map<string, FileJob>();
  const check = (job: FileJob, what: string, value: string | undefined, key?: string) => {
    if (value === undefined) return;
    const other = seen.get(`${what}\0${value}`);
    const at = (key && job.keys.get(key)) || job.at;
    if (other) throw new JobFileError(file, at, `jobs "${other.name}" (line ${other.at.line}) and "${job.name}" ${what === 'name' ? 'have the same name' : `write the same ${what} ${value}`}`, what === 'name' ? 'give each job its own name' : `put {job} in its path, e.g. ${what === 'state file' ? 'state: state/{job}.json' : 'output: out/{job}/{since}.csv'}`);
    seen.set(`${what}\0${value}`, job);
  };
  for (const job of jobs) {
    check(job, 'name', job.name);
    check(job, 'state file', job.state, 'state');
    // no output is stdout (unless the job only loads into a table): one job may write there, not two
    if (job.output !== undefined || !job.loads) check(job, 'output', job.output ?? '-', 'output');
  }
}

/** A job file's text, or a one-line error. */
export function missingJobFile(file: string, code: string | undefined): CliError {
  return code === 'ENOENT'
    ? new UsageError(`no job file ${file}`, `write one (see docs/jobs.md), or name it with -f FILE or REPORTING_JOBS`)
    : new CliError(`cannot read the job file ${file} (${code ?? 'unknown error'})`, EXIT.usage);
}
