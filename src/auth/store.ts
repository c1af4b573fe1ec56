// The token store: profiles in a `conf` file (project `reporting`, no `-nodejs` suffix), owner-only
// (file 0600, folder 0700), never a password. Every change is a locked read-modify-write (the
// project's one file lock, src/fs/lock.ts), so parallel processes neither corrupt the file (conf
// writes atomically) nor lose each other's updates.

import { loadConf } from '../lazy.js';
import { chmodSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type Conf from 'conf';
import { z } from 'zod';
import { CliError, EXIT, UsageError } from '../errors.js';
import { CannotLockError, LockedError, waitForLock, type LockHost } from '../fs/lock.js';
import type { Host } from '../host.js';
import type { Waits } from '../retry.js';

export const profileSchema = z.object({
  baseUrl: z.string().optional(),
  token: z.string().optional(),
  /** console: pasted from the web console; login: from POST /auth-reporting */
  source: z.enum(['console', 'login']).optional(),
  savedAt: z.string().optional(),
  email: z.string().optional(),
});
export type Profile = z.infer<typeof profileSchema>;

const storeSchema = z.object({ profiles: z.record(z.string(), profileSchema).default({}) });
type StoreShape = z.infer<typeof storeSchema>;

/** the lock is held for one synchronous write: one whose holder cannot be checked (another host's,
 * or left by an older version) is stale once this old, or when dated in the future */
const LOCK_STALE_MS = 10_000;
const LOCK_GIVE_UP_MS = 15_000;

export class TokenStore {
  private conf?: Conf<StoreShape>;
  /** conf's file: `config.json` in the folder */
  readonly path: string;

  /** `now`: the clock the lock's age and the wait are judged by (tests move it) */
  constructor(private readonly configDir: string, private readonly host: LockHost, private readonly now: () => number = Date.now, private readonly waits: Partial<Pick<Waits, 'sleep' | 'random'>> = {}) {
    this.path = join(configDir, 'config.json');
  }

  /** conf (and the ajv it loads, 14 MB) is only needed to write: reading is a JSON file. */
  private async writer(): Promise<Conf<StoreShape>> {
    if (this.conf) return this.conf;
    const Conf = await loadConf();
    try {
      // created owner-only before conf can create it with the default mode
      mkdirSync(this.configDir, { recursive: true, mode: 0o700 });
      this.conf = new Conf<StoreShape>({
        projectName: 'reporting',
        projectSuffix: '',
        cwd: this.configDir,
        configFileMode: 0o600,
      });
    } catch (error) {
      throw storeError(error, this.configDir);
    }
    this.secure();
    return this.conf;
  }

  profiles(): Record<string, Profile> {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.path, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw storeError(error, this.path);
    }
    const parsed = storeSchema.safeParse(raw);
    if (!parsed.success) throw new StoreError(`the token store ${this.path} is not in the expected shape`, REPAIR_HINT);
    return parsed.data.profiles;
  }

  get(name: string): Profile | undefined {
    return this.profiles()[name];
  }

  /** Changes one profile under the lock; `change` returns undefined to delete it. */
  async update(name: string, change: (current: Profile | undefined) => Profile | undefined): Promise<void> {
    const conf = await this.writer();
    await this.withLock(() => {
      const profiles = { ...this.profiles() };
      const next = change(profiles[name]);
      if (next === undefined) delete profiles[name];
      else profiles[name] = next;
      try {
        conf.store = { profiles };
        this.secure();
      } catch (error) {
        throw storeError(error, this.path);
      }
    });
  }

  /** 0700 folder and 0600 file, also when they existed before with looser modes. */
  private secure(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    chmodSync(dirname(this.path), 0o700);
    try {
      chmodSync(this.path, 0o600);
    } catch {
      // no file yet: conf creates it with mode 0600
    }
  }

  private async withLock(body: () => void): Promise<void> {
    let lock;
    try {
      lock = await waitForLock(this.path, this.host, { timeoutMs: LOCK_GIVE_UP_MS, maxHoldMs: LOCK_STALE_MS, now: this.now, ...this.waits });
    } catch (error) {
      if (error instanceof LockedError) {
        throw new StoreError(`the token store is locked by another process (${this.path}.lock)`, 'if no other reporting is running, delete the lock file');
      }
      throw storeError(error instanceof CannotLockError ? error.fsError : error, `${this.path}.lock`);
    }
    try {
      body();
    } finally {
      lock.release();
    }
  }
}

const REPAIR_HINT = 'fix it, or delete it and log in again (REPORTING_TOKEN with REPORTING_BASE_URL works without it)';

/**
 * The token store cannot be read or written: credentials are unavailable, so it exits 3 like any
 * other authentication failure (not 1: nothing is wrong with reporting itself).
 */
export class StoreError extends CliError {
  constructor(message: string, hint?: string) {
    super(message, EXIT.auth, hint);
  }
}

function storeError(error: unknown, where: string): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof SyntaxError) return new StoreError(`the token store ${where} is not valid JSON`, REPAIR_HINT);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    const why = code === 'EROFS' ? 'its file system is read-only' : 'permission denied (the folder or file is read-only, or belongs to another user)';
    return new StoreError(`cannot use the token store ${where}: ${why}`, 'make the folder yours and writable, or set REPORTING_CONFIG_DIR to a folder of your own');
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(`cannot use the token store ${where}: ${message}`, code === 'ENOTDIR' || code === 'EISDIR' ? 'REPORTING_CONFIG_DIR must name a folder' : undefined);
}

/** Refuses an output path that is the token store (or its lock): -o must never replace it. */
export function refuseTokenStore(target: string, cwd: string, env: Record<string, string | undefined>, platform: NodeJS.Platform): void {
  const real = (path: string) => {
    // the file may not exist yet: its folder's real path, and its name
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  };
  const fold = (path: string) => (platform === 'darwin' || platform === 'win32' ? path.toLowerCase() : path);
  const store = join(resolve(configDir(env, platform)), 'config.json');
  const wanted = fold(real(resolve(cwd, target)));
  if ([store, `${store}.lock`].some((path) => fold(real(path)) === wanted)) {
    throw new UsageError(`refusing to write over the token store ${store}`, 'choose another -o path');
  }
}

/** Where the store lives: REPORTING_CONFIG_DIR, else the platform's configuration folder. */
export function configDir(env: Record<string, string | undefined>, platform: Host['platform']): string {
  if (env.REPORTING_CONFIG_DIR) return env.REPORTING_CONFIG_DIR;
  const home = env.HOME ?? homedir();
  if (platform === 'darwin') return join(home, 'Library', 'Preferences', 'reporting');
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'reporting', 'Config');
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'reporting');
}
