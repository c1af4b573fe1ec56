// One path must never serve two purposes in a run: a report written over the state file (or the
// state written over the report) loses data with exit 0. Every file a run reads or writes is named
// here with what it is for, and two that are the same file, once symlinks and `..` are resolved,
// are a usage error before the first request. (Which targets are paths is their kind's to say:
// destinations/sinks.ts for -o, engine/stores/kinds.ts for --state.) So is a path that is not a regular file (a FIFO
// given as --state would block the run forever, deaf to Ctrl-C), and a symbolic link into nowhere.

import { accessSync, constants, lstatSync, readdirSync, readlinkSync, realpathSync, statSync, type Dirent, type Stats } from 'node:fs';
import { platform } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { UsageError } from './errors.js';

export interface PathUse {
  /** how the error names it: `-o`, `--state`, `the state's lock file`, `the token store` */
  name: string;
  path: string;
  /** the flag the user gave for it, for the hint; none for the tool's own files */
  flag?: string;
  /** a folder the tool owns: any path inside it clashes (the journal) */
  folder?: boolean;
}

/** What a path is, as statSync or a folder's listing says: its type. */
export type FileKind = Pick<Stats, 'isFile' | 'isDirectory' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice' | 'isSymbolicLink'>;

/** While a pass over many paths runs (withSettledPaths): what the file system answered. */
let settled: Settled | undefined;

interface Settled {
  /** whether folders are listed (a pass over many paths), or only the answers kept (one check's) */
  lists: boolean;
  /** each folder's entries, read once, by its real path (null: it cannot be listed) */
  listings: Map<string, Map<string, Dirent> | null>;
  /** the real path found for each path that is there */
  real: Map<string, string>;
  /** paths found not there lately (a job's state, its lock and its log ask for one folder in turn):
   * a few thousand at most, forgotten together */
  absent: Set<string>;
  writable: Set<string>;
  /** folders where a file was made and removed (checkWritableTarget's probe) */
  probed: Set<string>;
  files: Map<string, string>;
  /** folderTarget's answers lately (at most ABSENT_KEPT, forgotten together) */
  targets: Map<string, string>;
  /** the tool's own files (toolFiles: every job's run names them), by configuration folder, and
   * the real path of each, with the folder it was found from (once found) */
  toolUses: Map<string, PathUse[]>;
  tools: Map<PathUse, { cwd: string; real: string } | undefined>;
}

const settle = (lists: boolean): Settled => ({ lists, listings: new Map(), real: new Map(), absent: new Set(), writable: new Set(), probed: new Set(), files: new Map(), targets: new Map(), toolUses: new Map(), tools: new Map() });
const ABSENT_KEPT = 4096;

/**
 * Runs `pass`, a synchronous check of many paths (a job file's thousands of jobs, their state
 * files and outputs), asking the file system once per folder: nothing changes the folders during
 * such a pass, and a stat, a realpath and an lstat for each of each job's paths were most of `jobs
 * validate`'s time (test/bench/RESULTS.md, "A job file of 20,000 jobs").
 */
export function withSettledPaths<T>(pass: () => T): T {
  const leave = enter();
  try {
    return pass();
  } finally {
    leave();
  }
}

/** withSettledPaths for a pass that waits (`jobs plan`, whose states may be in a bucket): nothing
 * else may run meanwhile that expects the file system as it is now, not as the pass found it. */
export async function withSettledPathsAsync<T>(pass: () => Promise<T>): Promise<T> {
  const leave = enter();
  try {
    return await pass();
  } finally {
    leave();
  }
}

/** Starts a pass, unless one runs (a pass within it is the outer one's); answers how to end it.
 * Only the pass that made the answers forgets them: two waiting passes that overlap, the first
 * ending first, must not put the first's back when the second ends (they would answer for ever). */
function enter(lists = true): () => void {
  if (settled) return () => {};
  const mine = settle(lists);
  settled = mine;
  return () => {
    if (settled === mine) settled = undefined;
  };
}

/** In a settled pass, the entry that names `path` (absolute, without `..`) in its folder's listing:
 * null when the folder holds no such name; undefined when the listing cannot say (the folder
 * cannot be listed, or no pass runs). */
function entryOf(path: string): Dirent | null | undefined {
  // (a listing's names are compared as written: not on file systems that fold case)
  if (!settled?.lists || FOLDS_CASE) return undefined;
  const parent = parentOf(path);
  if (parent === path) return undefined;
  const folder = realOf(parent);
  if (folder === null) return null;
  let entries = settled.listings.get(folder);
  if (entries === undefined) {
    try {
      // a folder one may list but not search answers stat with EACCES: not from its listing
      accessSync(folder, constants.X_OK);
      entries = new Map(readdirSync(folder, { withFileTypes: true }).map((entry) => [entry.name, entry]));
    } catch {
      entries = null;
    }
    settled.listings.set(folder, entries);
  }
  return entries === null ? undefined : entries.get(basename(path)) ?? null;
}

/** dirname(path), the last one remembered: realTarget asks for one path's folder three times (its
 * link, its real path, the folder beneath), and the same string is looked up in the pass's maps
 * without its hash computed again. */
let lastPath = '';
let lastParent = '.';
function parentOf(path: string): string {
  if (path !== lastPath) {
    lastParent = dirname(path);
    lastPath = path;
  }
  return lastParent;
}

/** The real path of an existing absolute path without `..`, else null. */
function realOf(path: string): string | null {
  const known = settled?.real.get(path);
  if (known !== undefined) return known;
  if (settled?.absent.has(path)) return null;
  const entry = entryOf(path);
  let real: string | null = null;
  if (entry === null) real = null;
  // (a check that lists no folder: what is in a folder found not there is not there either)
  else if (settled && !settled.lists && parentOf(path) !== path && settled.absent.has(parentOf(path))) real = null;
  else if (entry && !entry.isSymbolicLink()) real = joinNormal(realOf(parentOf(path)) as string, [entry.name]);
  else {
    try {
      // the system's realpath(3): for a path without `..`, what node's component by component walk says, in one call
      real = realpathSync.native(path);
    } catch {
      real = null;
    }
  }
  // (a path that is not there is remembered a while only: a job's files are asked for in turn, and
  // a job file's thousands of files to be written would fill a map)
  if (real !== null) settled?.real.set(path, real);
  else if (settled) {
    if (settled.absent.size >= ABSENT_KEPT) settled.absent.clear();
    settled.absent.add(path);
  }
  return real;
}

/** Throws (accessSync's error) unless one may create files in `folder` (write and search). */
export function writableFolder(folder: string): void {
  if (settled?.writable.has(folder)) return;
  accessSync(folder, constants.W_OK | constants.X_OK);
  settled?.writable.add(folder);
}

/** Runs `probe` (a file created in `folder` and removed) unless, in a settled pass, it already
 * succeeded there: `jobs run` probes each job's output folder, and 3,000 jobs write in a few. */
export function probeFolder(folder: string, probe: () => void): void {
  if (settled?.probed.has(folder)) return;
  probe();
  settled?.probed.add(folder);
}

/** macOS's and Windows's usual file systems: `OUT` and `out` are one name there. (The system's
 * own: paths.ts asks the file system, which the process's host is.) */
const FOLDS_CASE = platform() === 'darwin' || platform() === 'win32';

/** What `path` is, following symbolic links (statSync), else why not: the error's code. */
function statOf(path: string): FileKind | string {
  const entry = settled ? entryOf(isNormalAbsolute(path) ? path : resolve(path)) : undefined;
  if (entry === null) return 'ENOENT';
  if (entry && !entry.isSymbolicLink()) return entry;
  try {
    return statSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
  }
}

/** In a settled pass, whether the folders' listings say that nothing is at the absolute `path` (a
 * read would fail with ENOENT): `jobs plan` reads thousands of states that do not exist yet. */
export function listedAbsent(path: string): boolean {
  return settled !== undefined && isAbsolute(path) && entryOf(absolutePath('/', path)) === null;
}

/** What `path` is, following symbolic links (statSync), else undefined: nothing there. */
export function kindOf(path: string): FileKind | undefined {
  const stats = statOf(path);
  return typeof stats === 'string' ? undefined : stats;
}

/** The real path of `path`, which may not exist yet: its nearest existing ancestor's real path,
 * then the rest of the path as written. */
export function realTarget(path: string, cwd: string): string {
  const absolute = linkTarget(absolutePath(cwd, path));
  return realOf(absolute) ?? beneath(absolute);
}

/** An absolute path that is not there: its folder's target (folderTarget), then its name. */
function beneath(absolute: string): string {
  const parent = parentOf(absolute);
  return parent === absolute ? absolute : joinNormal(folderTarget(parent), [basename(absolute)]);
}

/** A folder's real path, or, when it is not there, its nearest existing ancestor's real path and
 * the rest as written; in a settled pass, remembered a while (a job's five day files, its state,
 * lock and log are in two folders: each was walked up to the existing one for every file). */
function folderTarget(folder: string): string {
  const known = settled?.targets.get(folder);
  if (known !== undefined) return known;
  const target = realOf(folder) ?? beneath(folder);
  if (settled) {
    if (settled.targets.size >= ABSENT_KEPT) settled.targets.clear();
    settled.targets.set(folder, target);
  }
  return target;
}

/** A path that resolve() would give back as it is: absolute, no `.` or `..` part, no `//`, no `/`
 * at the end (a job file's paths are made so: thousands of them are checked). */
const UNCLEAN = /\/\/|\/\.\.?(?:\/|$)|.\/$/;
const POSIX = sep === '/';

const isNormalAbsolute = (path: string) => POSIX && path.charCodeAt(0) === 47 && !UNCLEAN.test(path);

/** resolve(cwd, path), without its work for a path that is already absolute and normal. */
function absolutePath(cwd: string, path: string): string {
  return isNormalAbsolute(path) ? path : resolve(cwd, path);
}

/** resolve(folder, path), without its work where it would only join them: `folder` absolute and
 * normal, `path` absolute and normal, or relative without `.`, `..`, `//` or a `/` at the end (a
 * job file's `state/{job}.json`, for each of thousands of jobs). */
export function resolveIn(folder: string, path: string): string {
  if (isNormalAbsolute(path)) return path;
  if (path === '' || !isNormalAbsolute(folder) || !isNormalAbsolute(`/${path}`)) return resolve(folder, path);
  return `${folder === '/' ? '' : folder}/${path}`;
}

/** join(real, ...names) for a normal absolute path and names of one part each (a folder's entries). */
function joinNormal(real: string, names: readonly string[]): string {
  if (!POSIX) return join(real, ...names);
  return `${real === '/' ? '' : real}/${names.join('/')}`;
}

/** Where a symbolic link to a file not created yet points (followed a few times), else `path`. */
function linkTarget(path: string): string {
  let at = path;
  for (let hops = 0; hops < 8; hops++) {
    const entry = entryOf(at);
    if (entry === null || (entry && !entry.isSymbolicLink())) break;
    try {
      if (!lstatSync(at).isSymbolicLink()) break;
      at = resolve(dirname(at), readlinkSync(at));
    } catch {
      break;
    }
  }
  return at;
}

/**
 * The file a path names, as one string whatever its spelling: the real path of the file, or, when
 * it does not exist yet, where DuckDB will create it (a dangling symlink followed, the real path
 * of its folder). `..` is resolved by the file system, after the symlink before it, as DuckDB's
 * open does, not by the text (realpathSync.native: node's own realpathSync collapses `..` first).
 */
export function realFilePath(path: string): string {
  // (in a settled pass, once per path: a job file's thousands of jobs name a few database files)
  if (!settled) return realFileNow(path);
  let real = settled.files.get(path);
  if (real === undefined) settled.files.set(path, real = realFileNow(path));
  return real;
}

function realFileNow(path: string, hops = 0): string {
  try {
    return realpathSync.native(path);
  } catch {
    // no such file (yet)
  }
  if (hops < 32) {
    try {
      const target = readlinkSync(path);
      return realFileNow(isAbsolute(target) ? target : `${dirname(path)}/${target}`, hops + 1);
    } catch {
      // not a symlink
    }
  }
  try {
    return `${realpathSync.native(dirname(path)).replace(/\/$/, '')}/${basename(path)}`;
  } catch {
    return resolve(path);
  }
}

/**
 * Throws a UsageError when two of `uses` are the same file (or one is inside a folder another
 * owns). Case-insensitive file systems (macOS, Windows) fold case.
 */
export function refuseSharedPaths(uses: readonly PathUse[], cwd: string, platform: NodeJS.Platform): void {
  // the answers kept for this check (its uses share folders: the tool's five files sit in one,
  // often not made yet, which each of them walked up again: 45 realpaths a job of a fleet)
  const leave = enter(false);
  try {
    refuseShared(uses, cwd, platform);
  } finally {
    leave();
  }
}

function refuseShared(uses: readonly PathUse[], cwd: string, platform: NodeJS.Platform): void {
  const folds = platform === 'darwin' || platform === 'win32';
  const seen: { use: PathUse; real: string; inside: string }[] = [];
  for (const use of uses) {
    // (-o's targets are checked by checkWritableTarget, with the messages of a file that cannot be written)
    if (use.flag === '--state') refuseSpecialFile(use, absolutePath(cwd, use.path));
    const found = realOfUse(use, cwd);
    const real = folds ? found.toLowerCase() : found;
    // (what is inside a folder starts so)
    const inside = use.folder ? `${real}/` : '';
    for (const earlier of seen) {
      const same = earlier.real === real
        || (earlier.use.folder && real.startsWith(earlier.inside))
        || (use.folder && earlier.real.startsWith(inside));
      if (!same || (earlier.use.name === use.name && earlier.use.path === use.path)) continue;
      throw clash(earlier.use, use);
    }
    seen.push({ use, real, inside });
  }
}

/** A use's real path; in a settled pass, the tool's own files' once (every job's run names them). */
function realOfUse(use: PathUse, cwd: string): string {
  if (!settled?.tools.has(use)) return realTarget(use.path, cwd);
  const known = settled.tools.get(use);
  if (known?.cwd === cwd) return known.real;
  const real = realTarget(use.path, cwd);
  settled.tools.set(use, { cwd, real });
  return real;
}

const KINDS: [(stats: FileKind) => boolean, string][] = [
  [(stats) => stats.isDirectory(), 'a folder'],
  [(stats) => stats.isFIFO(), 'a named pipe (FIFO)'],
  [(stats) => stats.isSocket(), 'a socket'],
  [(stats) => stats.isCharacterDevice() || stats.isBlockDevice(), 'a device'],
];

/** A file the user named must be a regular file, or not exist yet (a symbolic link to one is
 * followed: the file it names is read and replaced). */
function refuseSpecialFile(use: PathUse, path: string): void {
  const stats = statOf(path);
  if (typeof stats === 'string') {
    // a link to a file not created yet is fine where the file can be created (its folder exists);
    // another failure (ENOTDIR, EACCES) is reading the state's to say
    const target = linkTarget(path);
    if (stats === 'ENOENT' && target !== path && !kindOf(dirname(target))?.isDirectory()) throw new UsageError(`${use.name} ${use.path} is a symbolic link into a folder that does not exist`, `give ${use.flag} the path of a file (or remove the link)`).about(use.flag);
    return;
  }
  if (stats.isFile()) return;
  const kind = KINDS.find(([is]) => is(stats))?.[1] ?? 'not a regular file';
  throw new UsageError(`${use.name} ${use.path} is ${kind}, not a regular file`, `give ${use.flag} the path of a file (it is created on the first run)`).about(use.flag);
}

function clash(a: PathUse, b: PathUse): UsageError {
  const given = [a, b].filter((use) => use.flag);
  const own = [a, b].find((use) => !use.flag);
  if (own && given[0]) {
    return new UsageError(`refusing to write over ${own.name} ${resolve(own.path)}: ${given[0].name} names it`, `choose another ${given[0].flag} path`).about(given[0].flag);
  }
  if (own || !a.flag || !b.flag) return new UsageError(`${a.name} and ${b.name} are the same file: ${a.path}`).about(a.flag ?? b.flag);
  return new UsageError(`${a.name} and ${b.name} name the same file (${a.path === b.path ? a.path : `${a.path}, ${b.path}`}): one would overwrite the other`, `give ${a.flag} and ${b.flag} different paths`).about(a.flag);
}

/** The tool's own files under the configuration folder: the token store (conf's config.json), its
 * lock, and the journal's folder. No output or state file may be one of them. */
export function toolFiles(configDir: string): PathUse[] {
  // (in a settled pass, the same uses for every job: their real paths are found once, realOfUse)
  const known = settled?.toolUses.get(configDir);
  if (known) return known;
  const store = join(configDir, 'config.json');
  const uses = [
    { name: 'the token store', path: store },
    { name: "the token store's lock file", path: `${store}.lock` },
    { name: 'the journal', path: join(configDir, 'journal'), folder: true },
    { name: "the submitted reports' requests", path: join(configDir, 'requests'), folder: true },
    { name: "the uploads' records", path: join(configDir, 'uploads'), folder: true },
  ];
  if (settled) {
    settled.toolUses.set(configDir, uses);
    for (const use of uses) settled.tools.set(use, undefined);
  }
  return uses;
}

/** What a run touches: its state file, that file's lock and log, its outputs, and the tool's own files. */
const ORDINALS = ['second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth'];

/** `state`: a state file of this machine; `outputs`: -o's files of this machine (sinks.ts
 * outputPaths: an object in a bucket is not a path); `more`: the files of each -o after the first
 * (run's -o repeated): no two outputs may be one file. */
export function runFiles(state: string | undefined, outputs: readonly string[], configDir: string, more: readonly (readonly string[])[] = []): PathUse[] {
  return [
    ...(state ? [
      { name: '--state', flag: '--state', path: state },
      { name: "the state's lock file", path: `${state}.lock` },
      { name: "the state's log", path: `${state}.log` },
    ] : []),
    ...outputs.map((path) => ({ name: '-o', flag: '-o', path })),
    ...more.flatMap((files, i) => files.map((path) => ({ name: `the ${ORDINALS[i] ?? `#${i + 2}`} -o`, flag: '-o', path }))),
    ...toolFiles(configDir),
  ];
}
