// A job file (`reporting.yaml`): every report of every account, declared once. Read here into
// jobs, each the words of the `run` command line it stands for, checked by `run`'s own parser
// (handed in: src/cli/run-words.ts) and placed in the file (line:column) when something is wrong.
// Nothing here sends a request; the profiles are checked by the command (it has the token store).

import { dirname, isAbsolute, resolve } from 'node:path';
import { FAILSAFE_SCHEMA, Type, load as loadYaml } from 'js-yaml';
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node, type Pair } from 'yaml';
import { CliError, EXIT, UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import { TABLE_STATE } from '../engine/stores/targets.js';
import { loadInFolder } from '../load/engines.js';

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
  /** `output:` a list: the outputs after the first */
  more?: string[];
  /** the job loads into a table (`load`, or REPORTING_LOAD): without output, nothing goes to stdout */
  loads?: boolean;
}

/** A job as the file lists it; `keys` and `keyWords` are made again from its entries when read. */
class ListedJob implements FileJob {
  readonly name: string;
  readonly base: string;
  readonly profile: string;
  readonly profileAt: At;
  readonly side: string;
  readonly words: string[];
  readonly at: At;
  readonly state?: string;
  readonly output?: string;
  readonly more?: string[];
  readonly loads?: boolean;

  constructor(fields: Omit<FileJob, 'keys' | 'keyWords'>, private readonly again: () => Pick<FileJob, 'keys' | 'keyWords'>) {
    this.name = fields.name;
    this.base = fields.base;
    this.profile = fields.profile;
    this.profileAt = fields.profileAt;
    this.side = fields.side;
    this.words = fields.words;
    this.at = fields.at;
    this.state = fields.state;
    this.output = fields.output;
    if (fields.more) this.more = fields.more;
    this.loads = fields.loads;
  }

  get keys(): Map<string, At> {
    return this.again().keys;
  }

  get keyWords(): Map<string, string[]> {
    return this.again().keyWords;
  }
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

/** Where a value is in the file: the keys and list indexes from the top. */
type Path = readonly (string | number)[];

interface Entry {
  key: string;
  value: unknown;
  /** the value's path (its key's place is the key's) */
  path: Path;
  /** where its value is: made once, on first use (an entry of defaults is every job's) */
  valueAt?: At;
}

type Plain = Record<string, unknown>;
const isList = (value: unknown): value is unknown[] => Array.isArray(value);
const isMapping = (value: unknown): value is Plain => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Places in the file, found only when asked (an error names one): the file is read for its values
 * by js-yaml, and for places by the `yaml` package, which keeps each node's range. On a job file of
 * 20,000 jobs, js-yaml takes a tenth of `yaml`'s time and a third of its memory
 * (test/bench/RESULTS.md, "A job file of 20,000 jobs"); a valid file never pays for places.
 */
class Places {
  private doc?: Document;
  private lines?: LineCounter;

  constructor(private readonly text: string) {}

  /** yaml's reading of the file: its first error, with its place, if it has one */
  parsed(): { doc: Document; atOf: (offset: number) => At } {
    if (!this.doc) {
      this.lines = new LineCounter();
      this.doc = parseDocument(this.text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: true });
    }
    const lines = this.lines as LineCounter;
    return { doc: this.doc, atOf: (offset) => { const pos = lines.linePos(offset); return { line: pos.line, col: pos.col }; } };
  }

  /** where the value at `path` starts (`key`: where its key is); an alias is the node its anchor names */
  find(path: Path, part: 'key' | 'value'): At | undefined {
    const { doc, atOf } = this.parsed();
    let node = resolved(doc.contents as Node | null, doc);
    let found: Node | null | undefined = node;
    for (const [index, step] of path.entries()) {
      if (isMap(node)) {
        const pair = node.items.find((item: Pair) => isScalar(item.key) && String(item.key.value) === String(step));
        if (!pair) return undefined;
        if (index === path.length - 1 && part === 'key') found = pair.key as Node;
        node = resolved(pair.value as Node | null, doc);
      } else if (isSeq(node) && typeof step === 'number') {
        node = resolved(node.items[step] as Node | null, doc);
      } else {
        return undefined;
      }
      if (index < path.length - 1 || part === 'value') found = node;
    }
    return found?.range ? atOf(found.range[0]) : undefined;
  }

  /** a place found when first read (`line`, `col`) */
  at(path: Path, part: 'key' | 'value'): At {
    return new Place(this, path, part);
  }
}

/** A place in the file, looked up when first read: 20,000 jobs' places, unread, are a few fields each. */
class Place implements At {
  private known?: At;

  constructor(private readonly places: Places, private readonly path: Path, private readonly part: 'key' | 'value') {}

  get line(): number {
    return this.found().line;
  }

  get col(): number {
    return this.found().col;
  }

  /** the node's place; a value with none is placed at its key, else at what holds it */
  private found(): At {
    if (!this.known) {
      let place = this.places.find(this.path, this.part) ?? (this.part === 'value' ? this.places.find(this.path, 'key') : undefined);
      for (let length = this.path.length - 1; !place && length >= 0; length--) place = this.places.find(this.path.slice(0, length), 'value');
      this.known = place ?? START;
    }
    return this.known;
  }
}

const START: At = { line: 1, col: 1 };

/** A plain scalar of YAML 1.2's core schema, resolved as the `yaml` package resolves it (js-yaml's
 * own core schema also reads `0b101`, `-0x10` and `+0b1` as numbers, which `yaml` keeps as text). */
const plain = <T>(tag: string, pattern: RegExp, construct: (text: string) => T) =>
  new Type(`tag:yaml.org,2002:${tag}`, { kind: 'scalar', resolve: (text: string | null) => text !== null && pattern.test(text), construct });
const YAML_CORE = FAILSAFE_SCHEMA.extend({
  implicit: [
    new Type('tag:yaml.org,2002:null', { kind: 'scalar', resolve: (text: string | null) => text === null || /^(?:~|null|Null|NULL|)$/.test(text), construct: () => null }),
    plain('bool', /^(?:true|True|TRUE|false|False|FALSE)$/, (text) => /^t/i.test(text)),
    plain('int', /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/, (text) => (text.startsWith('0o') ? parseInt(text.slice(2), 8) : text.startsWith('0x') ? parseInt(text.slice(2), 16) : Number(text))),
    plain('float', /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
      (text) => (/\.(?:nan)$/i.test(text) ? Number.NaN : /inf$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text))),
  ],
});

/**
 * The file's values: js-yaml with YAML 1.2's core schema as `yaml` reads it (`2026-11-01` stays
 * text). What js-yaml does not take (a tag, a directive such as `%YAML 1.1`) is read by `yaml`,
 * as before; a file neither takes is described with yaml's words and place.
 */
function valuesOf(text: string, file: string, places: Places): unknown {
  if (!/^%/m.test(text)) {
    try {
      return loadYaml(text, { schema: YAML_CORE, filename: file });
    } catch {
      // yaml's reading below: its value, or its words for the mistake
    }
  }
  const { doc, atOf } = places.parsed();
  const first = doc.errors[0];
  if (first) throw new JobFileError(file, atOf(first.pos[0]), `not valid YAML: ${first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`);
  return doc.toJS();
}

/** Reads a job file's text: the file's structure and every key, each job's values as `run` words.
 * `env` fills `${VAR}`; `flags` are run's long flags (the keys a job may hold). */
export function readJobFile(text: string, file: string, cwd: string, env: Record<string, string | undefined>, flags: readonly RunFlagInfo[]): JobFile {
  return readJobs({ text, file, cwd, env, flags }, false);
}

/** What a job file is read from. */
interface Source {
  text: string;
  file: string;
  cwd: string;
  env: Record<string, string | undefined>;
  flags: readonly RunFlagInfo[];
}

/** The file read again with every job's places and keys' words (an error asks for one job's): once
 * per file, the jobs by name. */
let placedRead: { source: Source; jobs: Map<string, FileJob> } | undefined;
function placedJob(source: Source, name: string): FileJob {
  if (placedRead?.source !== source) placedRead = { source, jobs: new Map(readJobs(source, true).jobs.map((job) => [job.name, job])) };
  return placedRead.jobs.get(name) as FileJob;
}

/** A job's keys and words, from the file read again (made here, away from readJobs' scope, which
 * holds the whole document: a closure made there keeps it all) */
const later = (source: Source, name: string) => () => placedJob(source, name);

/** `placed`: each job with its keys' places and words (else they are read again when asked). */
function readJobs(source: Source, placed: boolean): JobFile {
  const { text, file, cwd, env, flags } = source;
  const places = new Places(text);
  const root = valuesOf(text, file, places);
  const valueAt = (path: Path) => places.at(path, 'value');
  const keyAt = (entry: Entry) => places.at(entry.path, 'key');
  const fail = (at: At | undefined, message: string, hint?: string): never => {
    throw new JobFileError(file, at, message, hint);
  };
  if (!isMapping(root)) return fail(valueAt([]), 'a job file is a mapping with version, jobs, and optionally concurrency, per-profile and defaults', 'see docs/jobs.md');
  const top = entriesOf(root, []);
  const topKey = (name: string) => top.find((e) => e.key === name);
  for (const entry of top) {
    if (!TOP_KEYS.includes(entry.key)) fail(keyAt(entry), `unknown key "${entry.key}"${didYouMean(entry.key, TOP_KEYS)}`, `a job file's keys are ${TOP_KEYS.join(', ')}`);
  }
  /** where an entry's value is (made once: an entry of defaults is every job's) */
  const at = (entry: Entry) => (entry.valueAt ??= valueAt(entry.path));
  const version = topKey('version');
  if (!version) fail(START, 'version is missing', 'start the file with: version: 1');
  else if (version.value !== 1) fail(at(version), 'version is 1 (the only version of the job file)');
  const count = (entry: Entry | undefined, max: number) => {
    if (!entry) return undefined;
    const value = entry.value;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) fail(at(entry), `${entry.key} wants a whole number from 1 to ${max}`);
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
    return fail(keyAt(entry), `unknown option "${entry.key}"${didYouMean(entry.key.replace(/^-+/, ''), known)}`, hint);
  };

  const defaultsEntry = topKey('defaults');
  let defaults: Entry[] = [];
  if (defaultsEntry && defaultsEntry.value !== null) {
    if (!isMapping(defaultsEntry.value)) fail(at(defaultsEntry), 'defaults is a mapping of run options (since: auto, chunk: day, ...)');
    defaults = entriesOf(defaultsEntry.value as Plain, defaultsEntry.path);
    for (const entry of defaults) {
      if (entry.key === 'name') fail(keyAt(entry), 'name belongs to each job, not to defaults');
      canonical(entry);
    }
  }

  const jobsEntry = topKey('jobs');
  if (!jobsEntry) return fail(START, 'jobs is missing', 'add jobs: a list of jobs, each with a name and a side');
  const list = jobsEntry.value;
  if (!isList(list) || list.length === 0) return fail(at(jobsEntry), 'jobs is a list of jobs, each with a name and a side');
  const folder = dirname(resolve(cwd, file));

  /** `${VAR}` from the environment; a missing one is an error at its value */
  const secrets = new Set<string>();
  const expandEnv = (text: string, at: At) => (!text.includes('${') ? text : text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const value = env[name];
    if (value === undefined) fail(at, `\${${name}} is not set in the environment`, `set ${name}, or write the value in the file`);
    if ((value as string).trim() !== '') secrets.add(value as string);
    return value as string;
  }));
  const scalarText = (entry: Entry): string | number | boolean | null => {
    const value = entry.value;
    if (value === null || value === undefined) return null;
    if (typeof value === 'object') return fail(at(entry), `${entry.key} wants one value, not a ${isList(value) ? 'list' : 'mapping'}`);
    if (typeof value === 'string') return expandEnv(value, at(entry));
    if (typeof value === 'number' || typeof value === 'boolean') return value;
    return String(value);
  };
  /** an entry's value, or each item of its list, with its place (looked up when read) */
  const items = (entry: Entry): { text: string | number | boolean | null; at: () => At }[] => {
    if (!isList(entry.value)) return [{ text: scalarText(entry), at: () => at(entry) }];
    return entry.value.map((item, index) => {
      const itemAt = () => valueAt([...entry.path, index]);
      if (typeof item === 'object' && item !== null) return fail(itemAt(), `${entry.key}'s list holds values, not lists or mappings`);
      return { text: typeof item === 'string' && item.includes('${') ? expandEnv(item, itemAt()) : (item as string | number | boolean | null | undefined) ?? null, at: itemAt };
    });
  };

  // a key's words that every job shares (`--since=2026-11-01`, not `--state=.../{job}.json`) are
  // kept once: 20,000 jobs' copies were a third of the file's memory
  const shared = new Map<string, string[]>();
  const same = (words: string[]): string[] => {
    const key = words.join('\0');
    const known = shared.get(key);
    if (known) return known;
    shared.set(key, words);
    return words;
  };

  /** the job's keys over the defaults', key by key (`split: false` and `no-split` are one key) */
  const mergedOf = (own: readonly Entry[]) => {
    const merged = new Map<string, { entry: Entry; invert: boolean; flag?: RunFlagInfo }>();
    for (const entry of [...defaults, ...own]) {
      const { key, invert, flag } = canonical(entry);
      merged.set(key === 'profiles' ? 'profile' : key, { entry, invert, flag });
    }
    return merged;
  };
  /** one job's `run` words, each key's words and place */
  const expand = (merged: ReturnType<typeof mergedOf>, side: string, name: string, profile: string, placed = false) => {
    const fill = (text: string) => text.replaceAll('{job}', name).replaceAll('{profile}', profile);
    const words = [side];
    const keys = new Map<string, At>();
    const keyWords = new Map<string, string[]>();
    let state: string | undefined;
    let output: string | undefined;
    let more: string[] | undefined;
    for (const [key, { entry, invert, flag }] of merged) {
      // (a place is made only for the map of places, or for an error: 20,000 jobs' places were a
      // fifth of the file's memory)
      if (placed) keys.set(key, at(entry));
      const valuePlace = () => at(entry);
      if (!flag) continue;
      if (!flag.value) {
        const value = scalarText(entry);
        if (typeof value !== 'boolean') fail(valuePlace(), `${entry.key} is a switch: true or false, not ${JSON.stringify(value)}`);
        const mine = same(value !== invert ? [`--${flag.name}`] : []);
        keyWords.set(key, mine);
        words.push(...mine);
        continue;
      }
      if (isList(entry.value) && !flag.many) fail(valuePlace(), `${entry.key} takes one value, not a list`);
      let personal = false;
      const mine = items(entry).map(({ text, at: itemAt }) => {
        if (text === null || typeof text === 'boolean') return fail(itemAt(), `${entry.key} wants a value${text === null ? '' : `, not ${text}`}`);
        let value = fill(String(text));
        if (value !== String(text)) personal = true;
        // (`state: table` is the --load database's, not a path)
        if (PATH_KEYS.has(key) && value !== '-' && !URL_LIKE.test(value) && !isAbsolute(value) && !(key === 'state' && value === TABLE_STATE)) value = resolve(folder, value);
        // a database file is a path too (DuckDB's); a URL is left as written
        if (key === 'load') value = loadInFolder(value, folder);
        if (key === 'state') state = value;
        if (key === 'output' && output === undefined) output = value;
        else if (key === 'output') (more ??= []).push(value);
        return `--${flag.name}=${value}`;
      });
      keyWords.set(key, personal ? mine : same(mine));
      words.push(...mine);
    }
    const loads = keyWords.has('load') ? (keyWords.get('load') ?? []).length > 0 : Boolean(env.REPORTING_LOAD?.trim());
    // (made to its size: 20,000 jobs' words are a good part of the file's memory)
    return { words: words.slice(), keys, keyWords, state, output, ...(more ? { more } : {}), loads };
  };

  const jobs: FileJob[] = [];
  for (const [index, item] of list.entries()) {
    const jobPath = [...jobsEntry.path, index];
    const jobAt = valueAt(jobPath);
    if (!isMapping(item)) fail(jobAt, 'a job is a mapping: name, side, and run options');
    const own = entriesOf(item as Plain, jobPath);
    const merged = mergedOf(own);
    const nameEntry = own.find((e) => e.key === 'name');
    if (!nameEntry) return fail(jobAt, 'a job needs a name', 'add name: buyer-daily, for example');
    const base = scalarText(nameEntry);
    if (typeof base !== 'string' || !NAME.test(base)) return fail(at(nameEntry), `a job's name is letters, digits, ".", "_" and "-" (no "@", "*" or spaces), not ${JSON.stringify(base)}`);
    const sideEntry = merged.get('side')?.entry;
    if (!sideEntry) return fail(jobAt, `job "${base}" has no side`, 'add side: buyer, or side: seller');
    const side = String(scalarText(sideEntry) ?? '');
    const profileEntry = merged.get('profile')?.entry;
    let profiles: { name: string; at: At }[] = [{ name: 'default', at: jobAt }];
    if (profileEntry) {
      if (profileEntry.key === 'profile' && isList(profileEntry.value)) fail(at(profileEntry), 'profile names one profile: write profiles: [a, b] for several (one job each)');
      profiles = items(profileEntry).map(({ text, at: itemAt }) => {
        if (typeof text !== 'string' || !NAME.test(text)) return fail(itemAt(), `a profile name, not ${JSON.stringify(text)}`);
        return { name: text, at: itemAt() };
      });
      if (profiles.length === 0) fail(at(profileEntry), 'profiles lists at least one profile');
    }
    const several = profileEntry?.key === 'profiles';
    for (const { name: profile, at: profileAt } of profiles) {
      const name = several ? `${base}@${profile}` : base;
      const { words, state, output, more, loads } = expand(merged, side, name, profile);
      // each key's place and words are made again when asked (an error names one): kept for
      // 20,000 jobs, they and the document were most of the file's memory
      if (placed) {
        jobs.push({ name, base, profile, profileAt, side, ...expand(merged, side, name, profile, true), at: jobAt });
        continue;
      }
      jobs.push(new ListedJob({ name, base, profile, profileAt, side, words, at: jobAt, state, output, more, loads }, later(source, name)));
    }
  }
  refuseDuplicates(file, jobs);
  return { file, folder, concurrency, perProfile, jobs, secrets: [...secrets] };
}

/** A mapping's entries, each with its path (its places are found when asked). */
function entriesOf(map: Plain, path: Path): Entry[] {
  return Object.entries(map).map(([key, value]) => ({ key, value, path: [...path, key] }));
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
    // (a job's places are made when asked: only for the error)
    const at = () => (key && job.keys.get(key)) || job.at;
    if (other && other !== job) throw new JobFileError(file, at(), `jobs "${other.name}" (line ${other.at.line}) and "${job.name}" ${what === 'name' ? 'have the same name' : `write the same ${what} ${value}`}`, what === 'name' ? 'give each job its own name' : `put {job} in its path, e.g. ${what === 'state file' ? 'state: state/{job}.json' : 'output: out/{job}/{since}.csv'}`);
    seen.set(`${what}\0${value}`, job);
  };
  for (const job of jobs) {
    check(job, 'name', job.name);
    // (a state in the database is the load table's and scope's: the table's check is the run's)
    check(job, 'state file', job.state === TABLE_STATE ? undefined : job.state, 'state');
    // no output is stdout (unless the job only loads into a table): one job may write there, not two
    if (job.output !== undefined || !job.loads) check(job, 'output', job.output ?? '-', 'output');
    for (const other of job.more ?? []) check(job, 'output', other, 'output');
  }
}

/** A job file's text, or a one-line error. */
export function missingJobFile(file: string, code: string | undefined): CliError {
  return code === 'ENOENT'
    ? new UsageError(`no job file ${file}`, `write one (see docs/jobs.md), or name it with -f FILE or REPORTING_JOBS`)
    : new CliError(`cannot read the job file ${file} (${code ?? 'unknown error'})`, EXIT.usage);
}
