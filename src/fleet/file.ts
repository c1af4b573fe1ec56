// A job file (`reporting.yaml`): every report of every account, declared once. Read here into
// jobs, each the words of the `run` command line it stands for, checked by `run`'s own parser
// (handed in: src/cli/run-words.ts) and placed in the file (line:column) when something is wrong.
// Nothing here sends a request; the profiles are checked by the command (it has the token store).

import { dirname, isAbsolute, resolve } from 'node:path';
import { resolveIn } from '../paths.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { didYouMean } from '../suggest.js';
import { TABLE_STATE } from '../engine/stores/targets.js';
import { loadInFolder } from '../load/engines.js';
import { JobFileError, Places, START, valuesOf, type At, type Path } from './places.js';

export { JobFileError, type At } from './places.js';

export const JOB_FILE = 'reporting.yaml';
/** the most reports running at once across all jobs of one process */
export const MAX_BUDGET = 64;

/** Where a key's value is read from: `path`, a file (relative: to the job file's folder), `-` or a
 * URL; `state`, the same or `table` (the --load database's); `load`, a --load target (DuckDB's
 * PATH is a path too). */
export type KeyPlace = 'path' | 'state' | 'load';

/** What one of run's flags is as a job file's key, as run's table of flags says (src/cli/options.ts). */
export interface KeyRule {
  /** a list (comma-separated, repeatable) or a repeatable value: the key takes a YAML list */
  many?: boolean;
  place?: KeyPlace;
  /** the JSON Schema's description of the key, when more than `--NAME` */
  about?: string;
}

/** One of run's long flags, as a job file's key: its name without `--`. */
export interface RunFlagInfo extends KeyRule {
  name: string;
  /** takes a value (`--since <time>`), else a switch (`--bom`, `--no-split`) */
  value: boolean;
  /** `--no-X`: the key may be `no-X: true` or `X: false` */
  negate: boolean;
  many: boolean;
  /** its short form (`-o`) */
  short?: string;
}

/** The key of a flag as written (`--since`, `-o`, `--no-split`), if a job file has it. */
export function keyOfFlag(flags: readonly RunFlagInfo[], written: string): string | undefined {
  return flags.find((flag) => `--${flag.name}` === written || flag.short === written)?.name;
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

const OWN_KEYS = ['name', 'side', 'profile', 'profiles'];
const TOP_KEYS = ['version', 'concurrency', 'per-profile', 'defaults', 'jobs'];
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/** A key's value as its flag reads it, from the job file's folder. */
function inFolder(place: KeyPlace | undefined, value: string, folder: string): string {
  if (place === 'load') return loadInFolder(value, folder);
  if (place === undefined || value === '-' || URL_LIKE.test(value) || isAbsolute(value) || (place === 'state' && value === TABLE_STATE)) return value;
  return resolveIn(folder, value);
}

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

/** A job's keys and words, from the file read again (made here, away from the reader, which holds
 * the whole document: a closure made there keeps it all) */
const later = (source: Source, name: string) => () => placedJob(source, name);

/** `placed`: each job with its keys' places and words (else they are read again when asked). */
function readJobs(source: Source, placed: boolean): JobFile {
  const reader = new Reader(source);
  const { root, file } = reader;
  if (!isMapping(root)) return reader.fail(reader.valueAt([]), 'a job file is a mapping with version, jobs, and optionally concurrency, per-profile and defaults', 'see docs/jobs.md');
  const top = entriesOf(root, []);
  const topKey = (name: string) => top.find((e) => e.key === name);
  for (const entry of top) {
    if (!TOP_KEYS.includes(entry.key)) reader.fail(reader.keyAt(entry), `unknown key "${entry.key}"${didYouMean(entry.key, TOP_KEYS)}`, `a job file's keys are ${TOP_KEYS.join(', ')}`);
  }
  const version = topKey('version');
  if (!version) reader.fail(START, 'version is missing', 'start the file with: version: 1');
  else if (version.value !== 1) reader.fail(reader.at(version), 'version is 1 (the only version of the job file)');
  const concurrency = reader.count(topKey('concurrency'), MAX_BUDGET);
  const perProfile = reader.count(topKey('per-profile'), MAX_BUDGET);
  reader.readDefaults(topKey('defaults'));
  const jobsEntry = topKey('jobs');
  if (!jobsEntry) return reader.fail(START, 'jobs is missing', 'add jobs: a list of jobs, each with a name and a side');
  const list = jobsEntry.value;
  if (!isList(list) || list.length === 0) return reader.fail(reader.at(jobsEntry), 'jobs is a list of jobs, each with a name and a side');
  const jobs = list.flatMap((item, index) => reader.jobsOf(item, [...jobsEntry.path, index], placed));
  refuseDuplicates(file, jobs);
  return { file, folder: reader.folder, concurrency, perProfile, jobs, secrets: [...reader.secrets] };
}

/** A job's keys over the defaults', key by key (`split: false` and `no-split` are one key). */
type Merged = Map<string, { entry: Entry; invert: boolean; flag?: RunFlagInfo }>;

/** One reading of a job file: its values checked, each mistake thrown at its place. */
class Reader {
  readonly file: string;
  readonly places: Places;
  readonly root: unknown;
  readonly folder: string;
  /** the values `${VAR}` read from the environment */
  readonly secrets = new Set<string>();
  private readonly byName: Map<string, RunFlagInfo>;
  private readonly known: string[];
  private defaults: Entry[] = [];
  // a key's words that every job shares (`--since=2026-11-01`, not `--state=.../{job}.json`) are
  // kept once: 20,000 jobs' copies were a third of the file's memory
  private readonly shared = new Map<string, string[]>();
  /** the words of a value every job shares, and its values (paths made absolute), by flag and
   * text: found once, not for each of 20,000 jobs (commonKey) */
  private readonly common = new Map<string, { words: string[]; values: readonly string[] }>();
  /** the same, by the entry of defaults it is: found without making its text's key for each job */
  private readonly commonDefaults = new Map<Entry, { words: string[]; values: readonly string[] }>();

  constructor(private readonly source: Source) {
    this.file = source.file;
    this.places = new Places(source.text);
    this.root = valuesOf(source.text, source.file, this.places);
    this.folder = dirname(resolve(source.cwd, source.file));
    this.byName = new Map(source.flags.map((flag) => [flag.name, flag]));
    this.known = [...OWN_KEYS, ...source.flags.map((flag) => flag.name)];
  }

  fail(at: At | undefined, message: string, hint?: string): never {
    throw new JobFileError(this.file, at, message, hint);
  }

  valueAt(path: Path): At {
    return this.places.at(path, 'value');
  }

  keyAt(entry: Entry): At {
    return this.places.at(entry.path, 'key');
  }

  /** where an entry's value is (made once: an entry of defaults is every job's) */
  at(entry: Entry): At {
    return (entry.valueAt ??= this.valueAt(entry.path));
  }

  count(entry: Entry | undefined, max: number): number | undefined {
    if (!entry) return undefined;
    const value = entry.value;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) this.fail(this.at(entry), `${entry.key} wants a whole number from 1 to ${max}`);
    return value as number;
  }

  readDefaults(defaultsEntry: Entry | undefined): void {
    if (!defaultsEntry || defaultsEntry.value === null) return;
    if (!isMapping(defaultsEntry.value)) this.fail(this.at(defaultsEntry), 'defaults is a mapping of run options (since: auto, chunk: day, ...)');
    this.defaults = entriesOf(defaultsEntry.value as Plain, defaultsEntry.path);
    for (const entry of this.defaults) {
      if (entry.key === 'name') this.fail(this.keyAt(entry), 'name belongs to each job, not to defaults');
      this.canonical(entry);
    }
  }

  /** a key as run's flag: `split: false` is `no-split: true` */
  canonical(entry: Entry): { flag?: RunFlagInfo; key: string; invert: boolean } {
    if (OWN_KEYS.includes(entry.key)) return { key: entry.key, invert: false };
    const flag = this.byName.get(entry.key);
    if (flag) return { flag, key: flag.name, invert: false };
    const negated = this.byName.get(`no-${entry.key}`);
    if (negated?.negate) return { flag: negated, key: negated.name, invert: true };
    const hint = entry.key.startsWith('-') ? 'keys are run\'s long flag names without the dashes' : 'keys are run\'s long flag names (see `reporting run --help`), and name, side, profile or profiles';
    return this.fail(this.keyAt(entry), `unknown option "${entry.key}"${didYouMean(entry.key.replace(/^-+/, ''), this.known)}`, hint);
  }

  /** `${VAR}` from the environment; a missing one is an error at its value */
  expandEnv(text: string, at: At): string {
    if (!text.includes('${')) return text;
    return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const value = this.source.env[name];
      if (value === undefined) this.fail(at, `\${${name}} is not set in the environment`, `set ${name}, or write the value in the file`);
      if ((value as string).trim() !== '') this.secrets.add(value as string);
      return value as string;
    });
  }

  scalarText(entry: Entry): string | number | boolean | null {
    const value = entry.value;
    if (value === null || value === undefined) return null;
    if (typeof value === 'object') return this.fail(this.at(entry), `${entry.key} wants one value, not a ${isList(value) ? 'list' : 'mapping'}`);
    if (typeof value === 'string') return this.expandEnv(value, this.at(entry));
    if (typeof value === 'number' || typeof value === 'boolean') return value;
    return String(value);
  }

  /** an entry's value, or each item of its list, with its place (looked up when read) */
  items(entry: Entry): { text: string | number | boolean | null; at: () => At }[] {
    if (!isList(entry.value)) return [{ text: this.scalarText(entry), at: () => this.at(entry) }];
    return entry.value.map((item, index) => {
      const itemAt = () => this.valueAt([...entry.path, index]);
      if (typeof item === 'object' && item !== null) return this.fail(itemAt(), `${entry.key}'s list holds values, not lists or mappings`);
      return { text: typeof item === 'string' && item.includes('${') ? this.expandEnv(item, itemAt()) : (item as string | number | boolean | null | undefined) ?? null, at: itemAt };
    });
  }

  same(words: string[]): string[] {
    const key = words.join('\0');
    const known = this.shared.get(key);
    if (known) return known;
    this.shared.set(key, words);
    return words;
  }

  /** one item of `jobs`: its job, or one job per profile of `profiles` */
  jobsOf(item: unknown, jobPath: Path, placed: boolean): FileJob[] {
    const jobAt = this.valueAt(jobPath);
    if (!isMapping(item)) this.fail(jobAt, 'a job is a mapping: name, side, and run options');
    const own = entriesOf(item as Plain, jobPath);
    const merged: Merged = new Map();
    for (const entry of [...this.defaults, ...own]) {
      const { key, invert, flag } = this.canonical(entry);
      const name = key === 'profiles' ? 'profile' : key;
      // a job's run option with no value drops the default's (`output:` in a job that only loads);
      // its profile, side or name with none is refused, as before (another account's token)
      if (entry.value === null && flag !== undefined && !this.defaults.includes(entry) && merged.has(name)) merged.delete(name);
      else merged.set(name, { entry, invert, flag });
    }
    const nameEntry = own.find((e) => e.key === 'name');
    if (!nameEntry) return this.fail(jobAt, 'a job needs a name', 'add name: buyer-daily, for example');
    const base = this.scalarText(nameEntry);
    if (typeof base !== 'string' || !NAME.test(base)) return this.fail(this.at(nameEntry), `a job's name is letters, digits, ".", "_" and "-" (no "@", "*" or spaces), not ${JSON.stringify(base)}`);
    const sideEntry = merged.get('side')?.entry;
    if (!sideEntry) return this.fail(jobAt, `job "${base}" has no side`, 'add side: buyer, or side: seller');
    const side = String(this.scalarText(sideEntry) ?? '');
    const profileEntry = merged.get('profile')?.entry;
    const several = profileEntry?.key === 'profiles';
    return this.profilesOf(profileEntry, jobAt).map(({ name: profile, at: profileAt }) => {
      const name = several ? `${base}@${profile}` : base;
      // each key's place and words are made again when asked (an error names one): kept for
      // 20,000 jobs, they and the document were most of the file's memory
      if (placed) return { name, base, profile, profileAt, side, ...this.expand(merged, side, name, profile, true), at: jobAt };
      const { words, state, output, more, loads } = this.expand(merged, side, name, profile);
      return new ListedJob({ name, base, profile, profileAt, side, words, at: jobAt, state, output, more, loads }, later(this.source, name));
    });
  }

  profilesOf(profileEntry: Entry | undefined, jobAt: At): { name: string; at: At }[] {
    if (!profileEntry) return [{ name: 'default', at: jobAt }];
    if (profileEntry.key === 'profile' && isList(profileEntry.value)) this.fail(this.at(profileEntry), 'profile names one profile: write profiles: [a, b] for several (one job each)');
    const profiles = this.items(profileEntry).map(({ text, at: itemAt }) => {
      if (typeof text !== 'string' || !NAME.test(text)) return this.fail(itemAt(), `a profile name, not ${JSON.stringify(text)}`);
      return { name: text, at: itemAt() };
    });
    if (profiles.length === 0) this.fail(this.at(profileEntry), 'profiles lists at least one profile');
    return profiles;
  }

  /** one job's `run` words, each key's words and place */
  expand(merged: Merged, side: string, name: string, profile: string, placed = false) {
    const fill = (text: string) => text.replaceAll('{job}', name).replaceAll('{profile}', profile);
    const words = [side];
    // (the maps of places and words only when asked: a job listed needs neither, and 20,000 jobs'
    // maps were garbage to collect)
    const keys = placed ? new Map<string, At>() : NO_KEYS;
    const keyWords = placed ? new Map<string, string[]>() : NO_WORDS;
    const found: Found = {};
    let loadWords: string[] | undefined;
    for (const [key, { entry, invert, flag }] of merged) {
      // (a place is made only for the map of places, or for an error: 20,000 jobs' places were a
      // fifth of the file's memory)
      if (placed) keys.set(key, this.at(entry));
      if (!flag) continue;
      const mine = flag.value ? this.valueWords(key, entry, flag, fill, found) : this.switchWords(entry, flag, invert);
      if (placed) keyWords.set(key, mine);
      if (key === 'load') loadWords = mine;
      for (const word of mine) words.push(word);
    }
    const loads = loadWords ? loadWords.length > 0 : Boolean(this.source.env.REPORTING_LOAD?.trim());
    // (made to its size: 20,000 jobs' words are a good part of the file's memory)
    return { words: words.slice(), keys, keyWords, state: found.state, output: found.output, ...(found.more ? { more: found.more } : {}), loads };
  }

  /** a switch's words: `bom: true` is `--bom`, `split: false` is `--no-split` */
  switchWords(entry: Entry, flag: RunFlagInfo, invert: boolean): string[] {
    const value = this.scalarText(entry);
    if (typeof value !== 'boolean') this.fail(this.at(entry), `${entry.key} is a switch: true or false, not ${JSON.stringify(value)}`);
    return this.same(value !== invert ? [`--${flag.name}`] : []);
  }

  /** a value's words (each item of a list): `--name=value`, `{job}` and `{profile}` filled */
  valueWords(key: string, entry: Entry, flag: RunFlagInfo, fill: (text: string) => string, found: Found): string[] {
    if (isList(entry.value) && !flag.many) this.fail(this.at(entry), `${entry.key} takes one value, not a list`);
    const ofDefaults = this.commonDefaults.get(entry);
    const common = ofDefaults ? undefined : commonKey(flag.name, entry.value);
    const known = ofDefaults ?? (common === undefined ? undefined : this.common.get(common));
    if (known) {
      for (const value of known.values) foundValue(key, value, found);
      return known.words;
    }
    let personal = false;
    const values: string[] = [];
    const word = (text: string | number | boolean | null, itemAt: () => At) => {
      if (text === null || typeof text === 'boolean') return this.fail(itemAt(), `${entry.key} wants a value${text === null ? '' : `, not ${text}`}`);
      const filled = fill(String(text));
      if (filled !== String(text)) personal = true;
      const value = inFolder(flag.place, filled, this.folder);
      values.push(value);
      foundValue(key, value, found);
      return `--${flag.name}=${value}`;
    };
    // (one value read as items reads it, without a list of one item made for it)
    const mine = isList(entry.value) ? this.items(entry).map(({ text, at: itemAt }) => word(text, itemAt)) : [word(this.scalarText(entry), () => this.at(entry))];
    if (personal) return mine;
    const words = this.same(mine);
    if (common !== undefined) {
      if (this.common.size >= COMMON_KEPT) this.common.clear();
      this.common.set(common, { words, values });
      if (this.defaults.includes(entry)) this.commonDefaults.set(entry, { words, values });
    }
    return words;
  }
}

/** A state or output value, as the checks between jobs want it. */
function foundValue(key: string, value: string, found: Found): void {
  if (key === 'state') found.state = value;
  if (key === 'output' && found.output === undefined) found.output = value;
  else if (key === 'output') (found.more ??= []).push(value);
}

/** (the maps expand leaves empty for a job whose places and words are not asked: never filled) */
const NO_KEYS = new Map<string, At>();
const NO_WORDS = new Map<string, string[]>();

/** A value's words are every job's when it holds no `{job}`, `{profile}` or `${VAR}`: named by
 * the flag and the value's text (each item's), else undefined (a value made for each job, or one
 * that fails). */
const COMMON_KEPT = 4096;
function commonKey(flag: string, value: unknown): string | undefined {
  const one = (item: unknown) => (typeof item === 'number' || (typeof item === 'string' && !item.includes('{job}') && !item.includes('{profile}') && !item.includes('${')) ? String(item) : undefined);
  if (!isList(value)) {
    const text = one(value);
    return text === undefined ? undefined : `${flag}\0=${text}`;
  }
  const texts: string[] = [];
  for (const item of value) {
    const text = one(item);
    if (text === undefined) return undefined;
    texts.push(text);
  }
  return `${flag}\0${JSON.stringify(texts)}`;
}

/** What a job's words say of its targets, for the checks between jobs: the state file, the
 * output, the outputs after the first. */
interface Found {
  state?: string;
  output?: string;
  more?: string[];
}

/** A mapping's entries, each with its path (its places are found when asked). */
function entriesOf(map: Plain, path: Path): Entry[] {
  return Object.entries(map).map(([key, value]) => ({ key, value, path: [...path, key] }));
}

/** Two jobs of one name, state file or output: one would overwrite the other's. */
function refuseDuplicates(file: string, jobs: readonly FileJob[]): void {
  // (a map for each kind of value: 20,000 jobs' keys are not made again as `kind\0value`)
  const seen = new Map<string, Map<string, FileJob>>();
  const check = (job: FileJob, what: string, value: string | undefined, key?: string) => {
    if (value === undefined) return;
    let values = seen.get(what);
    if (!values) seen.set(what, values = new Map());
    const other = values.get(value);
    // (a job's places are made when asked: only for the error)
    const at = () => (key && job.keys.get(key)) || job.at;
    if (other && other !== job) throw new JobFileError(file, at(), `jobs "${other.name}" (line ${other.at.line}) and "${job.name}" ${what === 'name' ? 'have the same name' : `write the same ${what} ${value}`}`, what === 'name' ? 'give each job its own name' : `put {job} in its path, e.g. ${what === 'state file' ? 'state: state/{job}.json' : 'output: out/{job}/{since}.csv'}`);
    values.set(value, job);
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

/** A job file's text, or a one-line error; a relative name says the folder it was looked for in. */
export function missingJobFile(file: string, code: string | undefined, cwd: string): CliError {
  return code === 'ENOENT'
    ? new UsageError(`no job file ${file}${isAbsolute(file) ? '' : ` in ${cwd}`}`, `write one (see docs/jobs.md), or name it with -f FILE or REPORTING_JOBS`)
    : new CliError(`cannot read the job file ${file} (${code ?? 'unknown error'})`, EXIT.usage);
}
