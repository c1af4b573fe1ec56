// An exclusive lock on a file: `FILE.lock`, holding who took it (pid, host, a random nonce, when).
// The one lock of the project: the state file holds it for a whole run (and refuses a second run
// at once), the token store for one read-modify-write (and waits its turn).
//
// A lock is created whole in one step (written to a temporary file, then hard-linked into place,
// which fails if the lock exists), so nobody ever reads half a lock. A lock whose holder died
// (SIGKILL, power loss) is taken over: on this host, the holder's PID is checked for liveness, not
// the file's age, so a long nightly run is never mistaken for a dead one, and a killed one blocks
// nothing. A lock from another host (a Kubernetes pod before this one, a shared volume) cannot be
// checked that way: its holder touches it every 30 s, and one left untouched for 5 minutes is
// taken over. A lock meant to be held only briefly (`maxHoldMs`: the token store's) from another
// host, or in a form this version did not write, is taken over once older than that, or when it
// is dated in the future (a clock set back, a copied folder).
//
// Taking over is serialised by a second lock, `FILE.lock.takeover`: only its holder may remove a
// dead lock, after checking again that the lock is still the dead one. So two processes that both
// find the same dead lock never remove each other's fresh one, and never both enter.

import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { z } from 'zod';
import { CliError, EXIT } from '../errors.js';
import type { Host } from '../host.js';
import { tempPathFor } from './atomic.js';
import { backoffDelay, POLICY, sleepFor, type Sleep } from '../retry.js';

/** a lock's wait is not cut short (the token store's is brief; a state's has its own, --lock-wait) */
const NEVER = new AbortController().signal;

/** how often a holder touches its lock, and how long a lock of another host may stay untouched */
export const HEARTBEAT_MS = 30_000;
export const FOREIGN_STALE_MS = 5 * 60_000;
/** with maxHoldMs: a lock dated further ahead than this is taken over at once */
const FUTURE_SLACK_MS = 2_000;
/** a takeover lasts microseconds: a `.takeover` lock this old was left by a process killed meanwhile */
const TAKEOVER_STALE_MS = 10_000;

const holderSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  nonce: z.string(),
  since: z.string(),
});
export type Holder = z.infer<typeof holderSchema>;

/**
 * Another live run holds the lock. Exit code 2 (usage): this command line cannot run now, the
 * overlap is a scheduling mistake to fix, not a fault to retry at once (see docs/recurring.md).
 */
export class LockedError extends CliError {
  /** `what`: what the run shares with the other (a state in a database is no file) */
  constructor(readonly file: string, readonly holder: Holder | undefined, hint?: string, readonly what = 'state file') {
    const who = holder ? `by process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`} since ${holder.since}` : 'by another process';
    super(
      `${file} is in use ${who}: another run with this ${what} is still going`,
      EXIT.usage,
      hint ?? (!holder ? `if no such run is going, delete ${file}.lock`
        : holder.host !== hostname() ? `if no such run is going, delete ${file}.lock (a lock of another host is taken over once untouched for 5 minutes)`
          : 'let it finish, or do not start runs on one state file at the same time (Kubernetes: concurrencyPolicy: Forbid)'),
    );
  }
}

/** The lock could not be created at all (a folder missing or read-only): not a holder's fault. */
export class CannotLockError extends CliError {
  constructor(file: string, readonly fsError: unknown) {
    super(`cannot lock ${file}: ${(fsError as Error).message}`, EXIT.internal, 'check that its folder exists and is writable');
  }
}

export interface FileLock {
  readonly path: string;
  readonly holder: Holder;
  /** releases the lock (idempotent); only ever removes a lock this holder took */
  release(): void;
}

/** The process taking the lock: its pid, the liveness of others, and its exit cleanups. */
export type LockHost = Pick<Host, 'pid' | 'isAlive' | 'atExit'>;

export interface LockOptions {
  /** the pid written in the lock (tests pose as another process); else the host's */
  pid?: number;
  now?: () => number;
  /** liveness of a PID on this host (tests inject it); else the host's */
  alive?: (pid: number) => boolean;
  /** how often the holder touches the lock (tests shorten it) */
  heartbeatMs?: number;
  /** for a lock held briefly (the token store's): one whose holder cannot be checked (another
   * host's, or not readable) is stale once untouched for longer, or dated in the future */
  maxHoldMs?: number;
}

export interface WaitOptions extends LockOptions {
  /** how long to wait for a live holder before LockedError */
  timeoutMs: number;
  /** [0, 1), for the jitter between attempts */
  random?: () => number;
  /** the wait between attempts (POLICY.fileLock); unset: a timer */
  sleep?: Sleep;
}

/** What is at a lock's path: its text (to tell one lock from the next), and its holder. */
export interface Seen {
  text: string;
  holder: Holder | 'unreadable';
}

function readLock(path: string): Seen | undefined | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return 'unreadable';
  }
  try {
    const parsed = holderSchema.safeParse(JSON.parse(text));
    return { text, holder: parsed.success ? parsed.data : 'unreadable' };
  } catch {
    return { text, holder: 'unreadable' };
  }
}

const held = new Set<FileLock>();

/** Takes the lock on `file` (as `file.lock`) or throws LockedError when a live process holds it. */
export function lockFile(file: string, host: LockHost, options: LockOptions = {}): FileLock {
  const outcome = tryLock(file, host, options);
  if ('path' in outcome) return outcome;
  throw new LockedError(file, outcome.holder);
}

/** Takes the lock on `file`, waiting (with jittered backoff) while a live process holds it, up to
 * `timeoutMs`; then LockedError. */
export async function waitForLock(file: string, host: LockHost, options: WaitOptions): Promise<FileLock> {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? sleepFor;
  const started = now();
  for (let attempt = 0; ; attempt++) {
    const outcome = tryLock(file, host, options);
    if ('path' in outcome) return outcome;
    if (now() - started > options.timeoutMs) throw new LockedError(file, outcome.holder);
    await sleep(backoffDelay(POLICY.fileLock, attempt, random), NEVER);
  }
}

function tryLock(file: string, host: LockHost, options: LockOptions): FileLock | { holder: Holder | undefined } {
  const lockPath = `${file}.lock`;
  const holder: Holder = {
    pid: options.pid ?? host.pid,
    host: hostname(),
    nonce: randomBytes(8).toString('hex'),
    since: new Date(options.now?.() ?? Date.now()).toISOString(),
  };
  const judge: Judge = { me: holder, alive: options.alive ?? ((pid) => host.isAlive(pid)), now: options.now ?? Date.now, maxHoldMs: options.maxHoldMs };
  // three rounds: a stale lock taken over by someone else meanwhile is re-examined, not fought over
  let current: Seen | undefined;
  for (let round = 0; round < 3; round++) {
    let created: boolean;
    try {
      mkdirSync(dirname(lockPath), { recursive: true });
      created = tryCreate(lockPath, holder, host.pid);
    } catch (error) {
      throw new CannotLockError(file, error);
    }
    if (created) return register(lockPath, holder, host, options.heartbeatMs ?? HEARTBEAT_MS);
    const seen = readLock(lockPath);
    if (seen === undefined) continue; // released meanwhile
    // a lock is always whole (see above); one we cannot read was not written by this tool
    if (seen === 'unreadable') return { holder: undefined };
    current = seen;
    if (!isStale(lockPath, seen, judge)) return { holder: seen.holder === 'unreadable' ? undefined : seen.holder };
    takeOver(lockPath, seen, judge, host.pid);
  }
  return { holder: current && current.holder !== 'unreadable' ? current.holder : undefined };
}

interface Judge {
  me: Holder;
  alive: (pid: number) => boolean;
  now: () => number;
  maxHoldMs?: number;
}

function isStale(lockPath: string, seen: Seen, judge: Judge): boolean {
  let age: number;
  try {
    age = judge.now() - statSync(lockPath).mtimeMs;
  } catch {
    return false; // gone meanwhile: the next round sees it
  }
  const current = seen.holder;
  if (current !== 'unreadable' && current.host === judge.me.host) {
    // our own PID on a lock we do not hold: a previous container run that was PID 1 too
    if (current.pid === judge.me.pid) return ![...held].some((lock) => lock.holder.nonce === current.nonce);
    return !judge.alive(current.pid);
  }
  // a lock whose holder cannot be checked (another host's; one not written by this version):
  // by its age. A brief lock's is bounded, and one dated in the future cannot be trusted.
  if (judge.maxHoldMs !== undefined) return age > judge.maxHoldMs || age < -FUTURE_SLACK_MS;
  return current !== 'unreadable' && age > FOREIGN_STALE_MS;
}

function tryCreate(lockPath: string, holder: Holder, pid: number): boolean {
  const temp = tempPathFor(lockPath, pid);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(holder)}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temp);
  }
}

/**
 * Removes a dead holder's lock, and only that one. Under the takeover lock, the lock is read again:
 * nobody else removes a lock meanwhile (its dead holder cannot release it, other takers wait for
 * the takeover lock), so if it is still the dead one, it is the one removed.
 */
function takeOver(lockPath: string, dead: Seen, judge: Judge, pid: number): void {
  const guardPath = `${lockPath}.takeover`;
  let guarded: boolean;
  try {
    guarded = tryCreate(guardPath, { ...judge.me, nonce: randomBytes(8).toString('hex') }, pid);
  } catch {
    return; // the next round looks again
  }
  if (!guarded) {
    // another process is taking over: look again. A takeover lock left by a process killed in
    // those microseconds is removed, so that it does not block every takeover after it.
    const guard = readLock(guardPath);
    if (guard && guard !== 'unreadable' && isStale(guardPath, guard, { ...judge, maxHoldMs: TAKEOVER_STALE_MS })) removeIfSame(guardPath, guard);
    return;
  }
  try {
    const now = readLock(lockPath);
    if (now && now !== 'unreadable' && now.text === dead.text) unlinkSync(lockPath);
  } catch {
    // gone meanwhile
  } finally {
    try {
      unlinkSync(guardPath);
    } catch {
      // gone
    }
  }
}

/**
 * Removes a dead takeover lock: it is first renamed aside (one process wins the rename), then
 * checked; if what was moved is not the dead one (a racing process replaced it in between), it is
 * linked back.
 */
function removeIfSame(path: string, dead: Seen): void {
  const aside = `${path}.stale-${randomBytes(6).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // someone else moved it first: look again
  }
  const moved = readLock(aside);
  if (moved !== undefined && (moved === 'unreadable' || moved.text !== dead.text)) {
    try {
      linkSync(aside, path);
    } catch {
      // a third process holds a fresh one now; it wins
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    // gone
  }
}

function register(lockPath: string, holder: Holder, host: LockHost, heartbeatMs: number): FileLock {
  let released = false;
  const heartbeat = setInterval(() => {
    try {
      const at = new Date();
      utimesSync(lockPath, at, at);
    } catch {
      // taken over or removed: release() will find it is not ours
    }
  }, heartbeatMs);
  heartbeat.unref();
  // an exit that skips `finally` (process.exit on a signal) still releases; SIGKILL cannot,
  // which is what the liveness check is for
  let forget = () => {};
  const lock: FileLock = {
    path: lockPath,
    holder,
    release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      held.delete(lock);
      forget();
      const current = readLock(lockPath);
      if (current !== undefined && current !== 'unreadable' && current.holder !== 'unreadable' && current.holder.nonce === holder.nonce) {
        try {
          unlinkSync(lockPath);
        } catch {
          // gone
        }
      }
    },
  };
  held.add(lock);
  forget = host.atExit(() => lock.release());
  return lock;
}

// ---------------------------------------------------------------------------------------------
// Looking at a lock without taking it (`reporting state show`), and removing a dead holder's one
// (`reporting state unlock`): by the same rules as a taker's, under the same takeover lock.

/** A lock as found at `FILE.lock`, judged by the rules a taker applies. */
export interface LockState {
  path: string;
  /** undefined: a lock this tool did not write (not a holder it can read) */
  holder: Holder | undefined;
  /** the holder is a process of this host (its liveness can be checked) */
  local: boolean;
  /** a taker would take it over: its PID is gone, or another host's lock is untouched for 5 minutes */
  stale: boolean;
  /** since the holder last touched it (its heartbeat) */
  ageMs: number;
  /** what was read: removal removes only this lock, not one taken meanwhile */
  readonly seen: Seen;
}

export interface InspectOptions {
  now?: () => number;
  alive?: (pid: number) => boolean;
}

/** The lock on `file`, or undefined when there is none. Takes nothing, changes nothing. */
export function inspectLock(file: string, host: Pick<Host, 'pid' | 'isAlive'>, options: InspectOptions = {}): LockState | undefined {
  const path = `${file}.lock`;
  const read = readLock(path);
  if (read === undefined) return undefined;
  // a lock that cannot be read at all (permissions): no holder, and nothing removal would match
  const seen: Seen = read === 'unreadable' ? { text: '', holder: 'unreadable' } : read;
  const now = options.now ?? Date.now;
  let ageMs: number;
  try {
    ageMs = now() - statSync(path).mtimeMs;
  } catch {
    return undefined; // released meanwhile
  }
  const holder = seen.holder === 'unreadable' ? undefined : seen.holder;
  const judge: Judge = { me: { pid: host.pid, host: hostname(), nonce: '', since: '' }, alive: options.alive ?? ((pid) => host.isAlive(pid)), now };
  return { path, holder, local: holder?.host === hostname(), stale: isStale(path, seen, judge), ageMs, seen };
}

/**
 * Removes the lock `found` (from inspectLock) if it is still the one at its path, under the takeover
 * lock a taker uses, whatever its holder (the caller decided). True when it is gone; false when
 * another process was taking it over or took it meanwhile (look again).
 */
export function removeLock(found: LockState, host: Pick<Host, 'pid'>, options: { now?: () => number } = {}): boolean {
  const judge: Judge = { me: { pid: host.pid, host: hostname(), nonce: randomBytes(8).toString('hex'), since: '' }, alive: () => true, now: options.now ?? Date.now };
  takeOver(found.path, found.seen, judge, host.pid);
  const after = readLock(found.path);
  return after === undefined;
}
