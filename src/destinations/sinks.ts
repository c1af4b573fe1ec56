// The kinds of output (-o TARGET), by the scheme of their target: one line each in SINKS. A kind
// (sink-kind.ts) says how its target is parsed and named, when two targets are one, what is
// checked before the first request, how it opens, which secrets its client reads. Nothing outside
// the kinds' files tests for `s3://`: a new scheme is its file and one line here (or, for a test,
// one registerSink call).

import { existsSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { refuseTokenStore } from '../auth/store.js';
import { UsageError } from '../errors.js';
import { checkWritableTarget, openFileSink, stdoutSink, type PlaceFile, type WriteCheck } from '../export/sink.js';
import { replaceIfChanged, type Replaced } from '../fs/files.js';
import { realTarget } from '../paths.js';
import { S3 } from './s3.js';
import type { Opened, OpenOptions, SinkDeps, SinkKind } from './sink-kind.js';

export type { Opened, OpenOptions, Placed, RecordedObject, SinkDeps, SinkKind, UploadLedger } from './sink-kind.js';

/** `-o -` (or no -o): standard output. */
const STDOUT: SinkKind = {
  scheme: 'stdout',
  matches: (target) => target === '-',
  local: false,
  parse: () => undefined,
  identity: () => '-',
  place: () => undefined,
  check: async () => undefined,
  open: async (_target, deps) => ({ sink: stdoutSink(deps.stdout), placed: () => undefined }),
  secrets: () => [],
  describe: () => 'stdout',
  exists: () => true,
  split: () => ({ where: '', name: '-' }),
};

/** A file of this machine, written atomically (fs/atomic.ts); with a state, left untouched when
 * its content did not change. */
const FILE: SinkKind = {
  scheme: 'file',
  matches: () => true,
  local: true,
  parse: () => undefined,
  // (case folded by refuseSharedPaths, where the file system folds it)
  identity: (target, cwd) => realTarget(target, cwd),
  place: (target, cwd, shown, check) => checkWritableTarget(target, cwd, shown, check),
  check: async (target, deps) => refuseTokenStore(target, deps.cwd, deps.env ?? {}, deps.host.platform),
  open: async (target, deps, options) => {
    let placed: Replaced | undefined;
    const place: PlaceFile | undefined = options.keepUnchanged ? async (temp, path) => { placed = await replaceIfChanged(temp, path); } : undefined;
    return { sink: await openFileSink(target, deps, place), placed: () => placed };
  },
  secrets: () => [],
  describe: (target, cwd) => resolve(cwd, target),
  exists: (target) => existsSync(target),
  // (node's dirname and basename, as the writer reads the path: a trailing `/` is no name)
  split: (target) => ({ where: dirname(target), name: basename(target) }),
};

/** The kinds, the first that matches a target wins (a file matches anything). */
const SINKS: SinkKind[] = [S3, STDOUT, FILE];

/** A kind of output added before the others (a test's: one file, and this one call). */
export function registerSink(kind: SinkKind): () => void {
  SINKS.unshift(kind);
  return () => {
    const at = SINKS.indexOf(kind);
    if (at >= 0) SINKS.splice(at, 1);
  };
}

const kindOf = (target: string) => SINKS.find((kind) => kind.matches(target)) as SinkKind;

/** Opens -o's target (undefined: stdout). */
export function openOutput(target: string | undefined, deps: SinkDeps, options: OpenOptions): Promise<Opened> {
  const kind = kindOf(target ?? '-');
  kind.parse(target ?? '-');
  return kind.open(target ?? '-', deps, options);
}

/** What can be checked of -o's target with no request, before the run (`look`: creating nothing). */
export function placeOutput(target: string, cwd: string, shown: string, check: WriteCheck): void {
  kindOf(target).place(target, cwd, shown, check);
}

/** The check of -o's target just before the first request (a bucket: reachable and writable). */
export async function checkOutput(target: string, deps: SinkDeps, shown = target): Promise<void> {
  const kind = kindOf(target);
  kind.parse(target);
  await kind.check(target, deps, shown);
}

/** A command's one output (`download`, `campaigns`), checked whole before the first request. */
export async function checkOutputNow(target: string, deps: SinkDeps): Promise<void> {
  await checkOutput(target, deps);
  placeOutput(target, deps.cwd, target, 'probe');
}

/** The targets that are paths of this machine: what is checked against the run's other files. */
export const outputPaths = (targets: readonly string[]): string[] => targets.filter((target) => kindOf(target).local);

/** The target as the state records it and the closing line names it: a file's absolute path. */
export const describeOutput = (target: string, cwd: string): string => kindOf(target).describe(target, cwd);

/** Two outputs as a state records them (absolute paths or URLs; null: stdout) are one target: the
 * same text, or the same file however spelled (a symbolic link on the way, `..`): a job file read
 * through a link to its folder names its outputs through that link. */
export const sameOutput = (a: string | null, b: string | null): boolean =>
  a === b || (a !== null && b !== null && kindOf(a) === kindOf(b) && kindOf(a).identity(a, '/') === kindOf(b).identity(b, '/'));

/** An output recorded done is still there. */
export const outputExists = (target: string): boolean => kindOf(target).exists(target);

/** Where the target is and its name there, and whether that is a folder of this machine. */
export function splitOutput(target: string): { where: string; name: string; local: boolean } {
  const kind = kindOf(target);
  return { ...kind.split(target), local: kind.local };
}

/** Every secret the outputs' clients may read (AWS_SECRET_ACCESS_KEY...): masked in everything shown. */
export const sinkSecrets = (env: Readonly<Record<string, string | undefined>>): (string | undefined)[] => SINKS.flatMap((kind) => [...kind.secrets(env)]);

/**
 * -o repeated: the same target twice (`-o -` twice, one object URL twice, two files named by
 * {reportId} that are one file whatever the ID) is refused. Two spellings of one file without
 * {reportId} are refuseSharedPaths'. `expand`: a template with any report ID.
 */
export function refuseSameOutputs(all: readonly string[], expand: (template: string) => string, cwd: string): void {
  if (all.length < 2) return;
  const twice = all.find((target, i) => all.indexOf(target) !== i && !kindOf(target).local);
  if (twice !== undefined && kindOf(twice) === STDOUT) throw new UsageError('-o - is given twice: stdout can take one output', 'write the other outputs to files').about('-o');
  if (twice !== undefined) throw new UsageError(`-o ${twice} is given twice: one would overwrite the other`, 'give each -o its own object key').about('-o');
  // a file named by the report's ID: every -o gets the same ID, so any value tells two apart
  const byId = all.filter((target) => target.includes('{reportId}') && kindOf(target).local);
  const identities = byId.map((target) => { const path = expand(target); return kindOf(path).identity(path, cwd); });
  const again = identities.findIndex((identity, i) => identities.indexOf(identity) !== i);
  if (again >= 0) throw new UsageError(`-o ${byId[identities.indexOf(identities[again] as string)]} and -o ${byId[again]} name the same file: one would overwrite the other`, 'give each -o its own path').about('-o');
}
