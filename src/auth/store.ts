// The token store: profiles in a `conf` file (project `reporting`, no `-nodejs` suffix), owner-only
// (file 0600, folder 0700), never a password. Every change is a locked read-modify-write, so
// parallel processes neither corrupt the file (conf writes atomically) nor lose each other's updates.

import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type Conf from 'conf';
import { z } from 'zod';
import { CliError, EXIT } from '../errors.js';

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

const LOCK_STALE_MS = 10_000;
const LOCK_GIVE_UP_MS = 15_000;

export class TokenStore {
  private conf?: Conf<StoreShape>;
  /** conf's file: `config.json` in the folder */
  readonly path: string;

  constructor(private readonly configDir: string) {
    this.path = join(configDir, 'config.json');
  }

  /** conf (and the ajv it loads, 14 MB) is only needed to write: reading is a JSON file. */
  private async writer(): Promise<Conf<StoreShape>> {
    if (this.conf) return this.conf;
    // created owner-only before conf can create it with the default mode
    mkdirSync(this.configDir, { recursive: true, mode: 0o700 });
    const { default: Conf } = await import('conf');
    try {
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
    if (!parsed.success) {
      throw new CliError(`the token store ${this.path} is not in the expected shape`, EXIT.internal, 'fix it, or delete it and log in again');
    }
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
      conf.store = { profiles };
      this.secure();
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
    const lock = `${this.path}.lock`;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(lock, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw storeError(error, lock);
        try {
          // a lock left by a killed process is taken over once it is clearly stale
          if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) unlinkSync(lock);
        } catch {
          // it went away meanwhile: try again
        }
        if (Date.now() - started > LOCK_GIVE_UP_MS) {
          throw new CliError(`the token store is locked by another process (${lock})`, EXIT.internal, 'if no other reporting is running, delete the lock file');
        }
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * Math.min(100, 5 * 2 ** attempt)));
      }
    }
    try {
      body();
    } finally {
      try {
        unlinkSync(lock);
      } catch {
        // already gone
      }
    }
  }
}

function storeError(error: unknown, where: string): CliError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SyntaxError) {
    return new CliError(`the token store ${where} is not valid JSON`, EXIT.internal, 'fix it, or delete it and log in again');
  }
  return new CliError(`cannot use the token store ${where}: ${message}`, EXIT.internal);
}

/** Where the store lives: REPORTING_CONFIG_DIR, else the platform's configuration folder. */
export function configDir(env: Record<string, string | undefined>, platform: NodeJS.Platform = process.platform): string {
  if (env.REPORTING_CONFIG_DIR) return env.REPORTING_CONFIG_DIR;
  const home = env.HOME ?? homedir();
  if (platform === 'darwin') return join(home, 'Library', 'Preferences', 'reporting');
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'reporting', 'Config');
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'reporting');
}
