// An exclusive lock on a file for the length of a run: `FILE.lock`, holding who took it (pid,
// host, a random nonce, when). It is created whole in one step (written to a temporary file, then
// hard-linked into place, which fails if the lock exists), so nobody ever reads half a lock.
// A lock whose holder died (SIGKILL, power loss) is taken over: on this host, the holder's PID is
// checked for liveness, not the file's age, so a long nightly run is never mistaken for a dead
// one, and a killed one blocks nothing. A lock from another host (a Kubernetes pod before this
// one, a shared volume) cannot be checked that way: its holder touches it every 30 s, and one
// left untouched for 5 minutes is taken over.

import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { z } from 'zod';
import { CliError, EXIT } from '../errors.js';
import { tempPathFor } from '../fs/atomic.js';

/** Whether a process of this machine is alive (EPERM: it is, but belongs to someone else). */
function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** how often a holder touches its lock, and how long a lock of another host may stay untouched */
export const HEARTBEAT_MS = 30_000;
export const FOREIGN_STALE_MS = 5 * 60_000;

const holderSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  nonce: z.string(),
  since: z.string(),
});
export type Holder = z.infer<typeof holderSchema>;

/**
 * Another live run holds the lock. Exit code 2 (usage): this command line cannot run now, the
 * overlap is a scheduling mistake to fix, not a fault to retry at once (see README, "State file").
 */
export class LockedError extends CliError {
  constructor(readonly file: string, readonly holder: Holder | undefined) {
    const who = holder ? `by process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`} since ${holder.since}` : 'by another process';
    super(
      `${file} is in use ${who}: another run with this state file is still going`,
      EXIT.usage,
      !holder ? `if no such run is going, delete ${file}.lock`
        : holder.host !== hostname() ? `if no such run is going, delete ${file}.lock (a lock of another host is taken over once untouched for 5 minutes)`
          : 'let it finish, or do not start runs on one state file at the same time (Kubernetes: concurrencyPolicy: Forbid)',
    );
  }
}

export interface FileLock {
  readonly path: string;
  readonly holder: Holder;
  /** releases the lock (idempotent); only ever removes a lock this holder took */
  release(): void;
}

export interface LockOptions {
  pid?: number;
  now?: () => number;
  /** liveness of a PID on this host (tests inject it) */
  alive?: (pid: number) => boolean;
  /** how often the holder touches the lock (tests shorten it) */
  heartbeatMs?: number;
}

function readHolder(path: string): Holder | undefined | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return 'unreadable';
  }
  try {
    const parsed = holderSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

const held = new Set<FileLock>();
let exitHook = false;

/** Takes the lock on `file` (as `file.lock`) or throws LockedError when a live process holds it. */
export function lockFile(file: string, options: LockOptions = {}): FileLock {
  const alive = options.alive ?? isAlive;
  const lockPath = `${file}.lock`;
  const holder: Holder = {
    pid: options.pid ?? process.pid,
    host: hostname(),
    nonce: randomBytes(8).toString('hex'),
    since: new Date(options.now?.() ?? Date.now()).toISOString(),
  };
  // three rounds: a stale lock taken over by someone else meanwhile is re-examined, not fought over
  for (let round = 0; round < 3; round++) {
    let created: boolean;
    try {
      mkdirSync(dirname(lockPath), { recursive: true });
      created = tryCreate(lockPath, holder);
    } catch (error) {
      throw new CliError(`cannot lock ${file}: ${(error as Error).message}`, EXIT.internal, 'check that its folder exists and is writable');
    }
    if (created) return register(lockPath, holder, options.heartbeatMs ?? HEARTBEAT_MS);
    const current = readHolder(lockPath);
    if (current === undefined) continue; // released meanwhile
    // a lock is always whole (see above); one we cannot read was not written by this tool
    if (current === 'unreadable') throw new LockedError(file, undefined);
    if (!isStale(lockPath, current, holder, alive, options.now ?? Date.now)) throw new LockedError(file, current);
    takeOver(lockPath, current);
  }
  throw new LockedError(file, undefined);
}

function isStale(lockPath: string, current: Holder, me: Holder, alive: (pid: number) => boolean, now: () => number): boolean {
  if (current.host === me.host) {
    // our own PID on a lock we do not hold: a previous container run that was PID 1 too
    if (current.pid === me.pid) return ![...held].some((lock) => lock.holder.nonce === current.nonce);
    return !alive(current.pid);
  }
  try {
    return now() - statSync(lockPath).mtimeMs > FOREIGN_STALE_MS;
  } catch {
    return false; // gone meanwhile: the next round sees it
  }
}

function tryCreate(lockPath: string, holder: Holder): boolean {
  const temp = tempPathFor(lockPath, process.pid);
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
 * Removes a dead holder's lock, and only that one: it is first renamed aside (one process wins
 * the rename), then checked; if what was moved is not the dead lock (a racing process replaced it
 * in between), it is linked back.
 */
function takeOver(lockPath: string, dead: Holder): void {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return; // someone else moved it first: look again
  }
  const moved = readHolder(aside);
  if (moved !== undefined && moved !== 'unreadable' && moved.nonce !== dead.nonce) {
    try {
      linkSync(aside, lockPath);
    } catch {
      // a third process holds a fresh lock now; it wins
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    // gone
  }
}

function register(lockPath: string, holder: Holder, heartbeatMs: number): FileLock {
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
  const lock: FileLock = {
    path: lockPath,
    holder,
    release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      held.delete(lock);
      const current = readHolder(lockPath);
      if (current !== undefined && current !== 'unreadable' && current.nonce === holder.nonce) {
        try {
          unlinkSync(lockPath);
        } catch {
          // gone
        }
      }
    },
  };
  held.add(lock);
  if (!exitHook) {
    exitHook = true;
    // an exit that skips `finally` (process.exit on a signal) still releases; SIGKILL cannot,
    // which is what the liveness check is for
    process.once('exit', () => { for (const open of [...held]) open.release(); });
  }
  return lock;
}
