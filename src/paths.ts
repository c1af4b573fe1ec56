// One path must never serve two purposes in a run: a report written over the state file (or the
// state written over the report) loses data with exit 0. Every file a run reads or writes is named
// here with what it is for, and two that are the same file, once symlinks and `..` are resolved,
// are a usage error before the first request. So is a path that is not a regular file (a FIFO
// given as --state would block the run forever, deaf to Ctrl-C), and a symbolic link into nowhere.

import { lstatSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
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

/** The real path of `path`, which may not exist yet: its nearest existing ancestor's real path,
 * then the rest of the path as written. */
export function realTarget(path: string, cwd: string): string {
  const absolute = linkTarget(resolve(cwd, path));
  const rest: string[] = [];
  let at = absolute;
  for (;;) {
    try {
      return join(realpathSync(at), ...rest.reverse());
    } catch {
      const parent = dirname(at);
      if (parent === at) return absolute;
      rest.push(basename(at));
      at = parent;
    }
  }
}

/** Where a symbolic link to a file not created yet points (followed a few times), else `path`. */
function linkTarget(path: string): string {
  let at = path;
  for (let hops = 0; hops < 8; hops++) {
    try {
      if (!lstatSync(at).isSymbolicLink()) return at;
      at = resolve(dirname(at), readlinkSync(at));
    } catch {
      return at;
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
export function realFilePath(path: string, hops = 0): string {
  try {
    return realpathSync.native(path);
  } catch {
    // no such file (yet)
  }
  if (hops < 32) {
    try {
      const target = readlinkSync(path);
      return realFilePath(isAbsolute(target) ? target : `${dirname(path)}/${target}`, hops + 1);
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
  const fold = (path: string) => (platform === 'darwin' || platform === 'win32' ? path.toLowerCase() : path);
  const seen: { use: PathUse; real: string }[] = [];
  for (const use of uses) {
    // (-o's targets are checked by checkWritableTarget, with the messages of a file that cannot be written)
    if (use.flag === '--state') refuseSpecialFile(use, resolve(cwd, use.path));
    const real = fold(realTarget(use.path, cwd));
    for (const earlier of seen) {
      const same = earlier.real === real
        || (earlier.use.folder && real.startsWith(`${earlier.real}/`))
        || (use.folder && earlier.real.startsWith(`${real}/`));
      if (!same || (earlier.use.name === use.name && earlier.use.path === use.path)) continue;
      throw clash(earlier.use, use);
    }
    seen.push({ use, real });
  }
}

const isFolder = (path: string) => { try { return statSync(path).isDirectory(); } catch { return false; } };

const KINDS: [(stats: Stats) => boolean, string][] = [
  [(stats) => stats.isDirectory(), 'a folder'],
  [(stats) => stats.isFIFO(), 'a named pipe (FIFO)'],
  [(stats) => stats.isSocket(), 'a socket'],
  [(stats) => stats.isCharacterDevice() || stats.isBlockDevice(), 'a device'],
];

/** A file the user named must be a regular file, or not exist yet (a symbolic link to one is
 * followed: the file it names is read and replaced). */
function refuseSpecialFile(use: PathUse, path: string): void {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // a link to a file not created yet is fine where the file can be created (its folder exists)
    const target = linkTarget(path);
    const dangling = code === 'ENOENT' && target !== path && !isFolder(dirname(target));
    if (dangling) throw new UsageError(`${use.name} ${use.path} is a symbolic link into a folder that does not exist`, `give ${use.flag} the path of a file (or remove the link)`);
    return;
  }
  if (stats.isFile()) return;
  const kind = KINDS.find(([is]) => is(stats))?.[1] ?? 'not a regular file';
  throw new UsageError(`${use.name} ${use.path} is ${kind}, not a regular file`, `give ${use.flag} the path of a file (it is created on the first run)`);
}

function clash(a: PathUse, b: PathUse): UsageError {
  const given = [a, b].filter((use) => use.flag);
  const own = [a, b].find((use) => !use.flag);
  if (own && given[0]) {
    return new UsageError(`refusing to write over ${own.name} ${resolve(own.path)}: ${given[0].name} names it`, `choose another ${given[0].flag} path`);
  }
  if (own || !a.flag || !b.flag) return new UsageError(`${a.name} and ${b.name} are the same file: ${a.path}`);
  return new UsageError(`${a.name} and ${b.name} name the same file (${a.path === b.path ? a.path : `${a.path}, ${b.path}`}): one would overwrite the other`, `give ${a.flag} and ${b.flag} different paths`);
}

/** The tool's own files under the configuration folder: the token store (conf's config.json), its
 * lock, and the journal's folder. No output or state file may be one of them. */
export function toolFiles(configDir: string): PathUse[] {
  const store = join(configDir, 'config.json');
  return [
    { name: 'the token store', path: store },
    { name: "the token store's lock file", path: `${store}.lock` },
    { name: 'the journal', path: join(configDir, 'journal'), folder: true },
    { name: "the uploads' records", path: join(configDir, 'uploads'), folder: true },
  ];
}

/** What a run touches: its state file, that file's lock and log, its outputs, and the tool's own files. */
export function runFiles(state: string | undefined, outputs: readonly string[], configDir: string): PathUse[] {
  return [
    ...(state ? [
      { name: '--state', flag: '--state', path: state },
      { name: "the state's lock file", path: `${state}.lock` },
      { name: "the state's log", path: `${state}.log` },
    ] : []),
    // an object in a bucket is not a path of this machine
    ...outputs.filter((path) => !isObjectUrl(path)).map((path) => ({ name: '-o', flag: '-o', path })),
    ...toolFiles(configDir),
  ];
}

/** `-o s3://BUCKET/KEY`: an object in a bucket (src/destinations/objects.ts), not a path. */
export const isObjectUrl = (target: string): boolean => target.startsWith('s3://');

export interface ObjectUrl {
  url: string;
  bucket: string;
  key: string;
}

/** `s3://BUCKET/KEY`, or a usage error saying what is missing. */
export function parseObjectUrl(url: string): ObjectUrl {
  const match = /^s3:\/\/([^/]*)\/?(.*)$/.exec(url);
  const bucket = match?.[1] ?? '';
  const key = match?.[2] ?? '';
  const hint = 'write -o s3://BUCKET/path/to/report.csv';
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new UsageError(`-o ${url}: ${bucket ? `"${bucket}" is not a bucket name (3-63 lowercase letters, digits, dots, hyphens)` : 'no bucket named'}`, hint);
  if (!key || key.endsWith('/')) throw new UsageError(`-o ${url}: no object key${key ? ' (it ends with /)' : ''}`, hint);
  return { url, bucket, key };
}
