// The targets a job file's jobs claim (`jobs run|list|plan|validate`, src/commands/jobs.ts): two jobs
// whose state, output or table is one target, however spelled, are refused before any request.

import { basename, dirname, join } from 'node:path';
import type { Secrets } from '../api/redact.js';
import type { Context } from '../context.js';
import type { Job } from '../engine/job.js';
import { accountOf } from '../engine/load.js';
import { targetFolders } from '../engine/plan.js';
import { TABLE_STATE } from '../engine/stores/targets.js';
import { isStatePath } from '../engine/stores/kinds.js';
import { databaseIdentity, tableIdentity } from '../load/engines.js';
import { scopeOf } from '../load/load.js';
import { realTarget, resolveIn } from '../paths.js';
import { JobFileError, type FileJob, type JobFile } from './file.js';

/** What the claims read of the process: the folder, the host's file system, the environment. */
export type ClaimsContext = Pick<Context, 'cwd' | 'host' | 'env'> & { secrets: Pick<Secrets, 'redact'> };

/** What a job claims: its state file, each window's file or object, its table and scope. */
const KINDS = ['state', 'file', 'object', 'table'] as const;
type ClaimKind = (typeof KINDS)[number];

/**
 * Two jobs of the file whose targets are one target, however spelled, would each replace the
 * other's rows or file: refused, both named, before any request. Files (each window's output, the
 * state) by their real path (src/paths.ts realTarget: symbolic links and `..` resolved); tables by
 * their database, name and scope (load/target.ts databaseIdentity, tableIdentity; the scope is
 * the table destination's, src/load/load.ts scopeOf, so one table may hold several profiles' rows).
 * Each job's claims are made as it is checked (each kept as a number: the job's index and the
 * kind); the first clash is refused once all are checked.
 */
export class SharedTargets {
  /** tables and objects: the claim (a number) under the target's identity */
  private readonly seen = new Map<string, number>();
  /** files, by real folder: the names one job claims there (a list many jobs share), until a second
   * job claims in that folder; then each name's claim */
  private readonly files = new Map<string, { claim: number; names: readonly string[] } | Map<string, number>>();
  private clash?: JobFileError;
  private readonly baseUrls = new Map<string, string | undefined>();
  private readonly realFolders = new Map<string, string>();

  /** `baseUrlOf`: a profile's base URL (it throws when the profile has none) */
  constructor(private readonly file: JobFile, private readonly f: ClaimsContext, private readonly baseUrlOf: (profile: string) => string) {}

  claim(index: number, prepared: Job): void {
    if (this.clash) return;
    const f = this.f;
    const job = this.file.jobs[index] as FileJob;
    const state = prepared.flags.state;
    // a state in the --load database (`state: table`) is the table's and scope's, claimed below
    if (state === TABLE_STATE) {
      // (nothing of this machine)
    } else if (state && !isStatePath(state)) {
      // (a state in a bucket: by its URL)
      this.take(index, `state\0${state}`, 'state', state);
    } else if (state) {
      const real = realTarget(state, f.cwd);
      this.takeFiles(index, 'state', dirname(real), [basename(real)], () => state);
    }
    const places = targetFolders(prepared);
    for (const [folder, names] of places.files) this.takeFiles(index, 'file', folder, names, (name) => join(folder, name));
    for (const target of places.others) this.take(index, `object\0${target}`, 'object', target);
    const load = prepared.load;
    if (!load) return;
    const baseUrl = this.baseUrl(job.profile);
    if (baseUrl === undefined) return;
    const scope = scopeOf(prepared.request, baseUrl, accountOf(load, { env: f.env, profileName: job.profile }));
    // (the table as shown, its password masked: made only for the error)
    this.take(index, JSON.stringify(['table', databaseIdentity(load.target, f.cwd, f.host.platform), tableIdentity(load.table, load.target), scope]), 'table',
      () => `${load.table.join('.')} (${f.secrets.redact(load.target.shown)})`);
  }

  /** the first clash found, if any */
  refuse(): void {
    if (this.clash) throw this.clash;
  }

  private take(index: number, key: string, kind: ClaimKind, shown: string | (() => string)): void {
    const claimed = this.seen.get(key);
    if (claimed === undefined) this.seen.set(flat(key), claimOf(index, kind));
    else this.compare(index, claimed, kind, typeof shown === 'string' ? shown : shown(), key.slice(key.indexOf('\0') + 1));
  }

  /** `names` in `folder` (as the job names it): by the folder's real path, case folded where the
   * file system folds it */
  private takeFiles(index: number, kind: ClaimKind, folder: string, names: readonly string[], shown: (name: string) => string): void {
    const f = this.f;
    const fold = f.host.platform === 'darwin' || f.host.platform === 'win32';
    const absolute = resolveIn(f.cwd, folder);
    let real = this.realFolders.get(absolute);
    if (real === undefined) this.realFolders.set(absolute, real = flat(fold ? realTarget(absolute, f.cwd).toLowerCase() : realTarget(absolute, f.cwd)));
    const held = this.files.get(real);
    const claim = claimOf(index, kind);
    const own = fold ? names.map((name) => name.toLowerCase()) : names;
    if (!held) {
      this.files.set(real, { claim, names: own });
      return;
    }
    let each = held;
    if (!(each instanceof Map)) {
      const first = each;
      each = new Map(first.names.map((name) => [name, first.claim]));
      this.files.set(real, each);
    }
    for (const [at, name] of own.entries()) {
      const claimed = each.get(name);
      if (claimed === undefined) each.set(name, claim);
      else this.compare(index, claimed, kind, shown(names[at] as string), join(real, name));
    }
  }

  /** `index` claims what `claimed` claimed: a clash, unless it is the same job. `real`: the target
   * as one string (what the other job named it, when it is not this job's kind of claim). */
  private compare(index: number, claimed: number, kind: ClaimKind, shown: string, real: string): void {
    const otherIndex = Math.floor(claimed / KINDS.length);
    if (otherIndex === index || this.clash) return;
    const jobs = this.file.jobs;
    const [job, other] = [jobs[index], jobs[otherIndex]] as [FileJob, FileJob];
    const otherKind = KINDS[claimed % KINDS.length] as ClaimKind;
    const otherShown = otherKind === 'state' ? other.state ?? shown : kind === 'state' ? real : shown;
    const place = (one: FileJob, against: FileJob) => (against.base === one.base ? one.profileAt : one.at);
    const at = place(other, job);
    const what = describe(kind, shown);
    const rows = kind === 'table' ? 'rows' : 'data';
    this.clash = new JobFileError(this.file.file, place(job, other), `jobs "${other.name}" (${this.file.file}:${at.line}:${at.col}) and "${job.name}" ${kind === otherKind ? what : `${describe(otherKind, otherShown)}, and ${what},`}: each would replace the other's ${rows}`,
      kind === 'table' ? "give each its own table, or its own scope (e.g. scope: '{job}')" : kind === 'state' ? 'put {job} in its path, e.g. state: state/{job}.json' : 'put {job} in its path, e.g. output: out/{job}/{since}.csv');
  }

  private baseUrl(profile: string): string | undefined {
    if (!this.baseUrls.has(profile)) {
      try {
        this.baseUrls.set(profile, this.baseUrlOf(profile));
      } catch {
        this.baseUrls.set(profile, undefined); // no base URL: the job fails with that error when it runs
      }
    }
    return this.baseUrls.get(profile);
  }
}

/** `text` as one piece of memory: a string made by joining others is kept by V8 as the tree of
 * its pieces, which for 140,000 claimed paths was 40 MB; converting it to a number (NaN here)
 * makes V8 copy it into one flat string, in place. */
function flat(text: string): string {
  Number(text);
  return text;
}

const claimOf = (index: number, kind: ClaimKind) => index * KINDS.length + KINDS.indexOf(kind);

function describe(kind: ClaimKind, shown: string): string {
  if (kind === 'state') return `use the same state file ${shown}`;
  if (kind === 'table') return `load into the same table ${shown} with the same scope`;
  return `write the same ${kind} ${shown}`;
}
