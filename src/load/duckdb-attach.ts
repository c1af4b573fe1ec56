// The DuckDB instances of the process: each file a load opens is attached to an in-memory instance
// of the process's own, shared by every connection of the process on that file (load/duckdb.ts).

import type { DuckDBInstance } from '@duckdb/node-api';
import type { loadDuckDb } from '../lazy.js';

type DuckDb = Awaited<ReturnType<typeof loadDuckDb>>;

/**
 * Row groups of 30,720 rows (DuckDB's default: 122,880): each is compressed and written as it
 * fills, and the memory that takes is a quarter of the default's. Node 24, 1M rows, `--load
 * duckdb:`: 175-178 MiB against 181-184, replacing the window 179-186 against 186-195 (Node 20:
 * no change; test/bench/RESULTS.md, "DuckDB's row groups of 30,720 rows"). An option of ATTACH
 * only, not of an instance: the file is attached to an in-memory instance of the process's own.
 */
const ROW_GROUP_ROWS = 30_720;
export const ATTACHED_AS = 'reporting_load';

/** The in-memory instance a file (by its real path) is attached to, shared by the process's
 * connections on it (one database a file: load/duckdb.ts's header), how many hold it, and the
 * instance itself once attached. */
interface Attached { instance: Promise<DuckDBInstance>; users: number; made?: DuckDBInstance }
const attached = new Map<string, Attached>();

/** The instance `file` is attached to, attached by the first of the process's connections; it is
 * held until detach. Set before the first await: two runs opening the file at once share it, and
 * its recovery: `recover` is asked, once, whether a failed ATTACH is to be tried again (a WAL
 * replayed apart), while the others wait for the same outcome. DuckDB spills beside the file
 * (`FILE.tmp`, as when it opens the file itself), not into the working folder's `.tmp`, which an
 * in-memory instance would share with every other. */
export async function attach(duckdb: DuckDb, file: string, options: Record<string, string>, recover: (error: unknown) => Promise<boolean>): Promise<DuckDBInstance> {
  const held = attached.get(file);
  if (held) {
    held.users++;
    return held.instance.catch((error: unknown) => {
      held.users--;
      throw error;
    });
  }
  const open = async () => {
    const made = await duckdb.DuckDBInstance.create(':memory:', { ...options, temp_directory: `${file}.tmp` });
    try {
      const connection = await made.connect();
      try {
        await connection.run(`ATTACH '${file.replaceAll("'", "''")}' AS ${ATTACHED_AS} (ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`);
      } finally {
        connection.closeSync();
      }
      return made;
    } catch (error) {
      made.closeSync();
      throw error;
    }
  };
  // (the failed instance closed before the recovery opens the file: none shares its spill folder)
  const instance = open().catch(async (error: unknown) => {
    if (!(await recover(error))) throw error;
    return open();
  }).then((made) => {
    entry.made = made;
    return made;
  });
  const entry: Attached = { instance, users: 1 };
  attached.set(file, entry);
  return entry.instance.catch((error: unknown) => {
    if (attached.get(file) === entry) attached.delete(file);
    throw error;
  });
}

/** One holder of `file`'s instance lets go: the last one closes it, at once (DuckDB checkpoints the
 * file as it detaches), or as soon as its attaching ends. */
export function detach(file: string): void {
  const held = attached.get(file);
  if (!held || --held.users > 0) return;
  attached.delete(file);
  if (held.made) held.made.closeSync();
  else void held.instance.then((instance) => instance.closeSync(), () => undefined);
}
