// Bounds on V8's heap growth. The young generation's, while DuckDB shares the process (`run --load
// duckdb:`) and while a job file is read, checked and run (`jobs`); the old generation's, while a
// job file is read, checked and run (boundOldGeneration, at the end). V8 grows
// the new space (two semi-spaces) by doubling, up to a maximum set when the process starts (32 MB
// on Node 20 and 22, 64 MB on Node 24), and keeps it while the process is busy: a 1M-row report
// grows it to that maximum, though what lives in it at any time is a few megabytes (the piece of
// the body being scanned, a row, a chunk of the table). Beside DuckDB's code and working memory,
// that took the load's peak RSS past its 200 MB target. The maximum can only be set on node's
// command line (--max-semi-space-size), which `reporting` does not own; the growth factor, which
// V8 reads each time it grows the space, can be set at any time. So while a bound is held, the
// growth is stopped (factor 1), and a timer lets it grow again (factor 2, V8's default) while the
// space is at half the bound or less. Figures: test/bench/RESULTS.md, "Tables read as bytes, fewer
// flushes, a bounded young generation".

import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** The bound on the new space, both semi-spaces, unless a holder asks for less. */
const YOUNG_GENERATION_BYTES = 16 * 1024 * 1024;


/** The bound while DuckDB shares the process (`run --load duckdb:`): a few megabytes live in the new
 * space while a window loads, and each megabyte of it counts against the load's 200 MB (with a bound
 * of 16 MiB, Node 24 peaked at 186-190 MiB at 1M rows; test/bench/RESULTS.md, "Loading near CSV"). */
export const DUCKDB_YOUNG_GENERATION = 8 * 1024 * 1024;

/** The bound while `run --load TARGET` runs: DuckDB's, or the general one for another database
 * (Postgres' COPY on Node 24, 1M rows: 298 MiB unbounded, 136 MiB bounded); none without a load. */
export const loadYoungGeneration = (target: string | undefined): number | undefined =>
  target === undefined || target.trim() === '' ? undefined : /^\s*duckdb:/i.test(target) ? DUCKDB_YOUNG_GENERATION : YOUNG_GENERATION_BYTES;

/** How often the size is looked at: V8 grows the space after a scavenge, doubling it at most. */
const EVERY_MS = 20;

const GROW = 2;
const HOLD = 1;

/** the bound each holder asked for: the least of them holds */
const bounds: number[] = [];
let timer: NodeJS.Timeout | undefined;
let factor = GROW;

const setFactor = (next: number) => {
  if (next === factor) return;
  factor = next;
  setFlagsFromString(`--semi-space-growth-factor=${next}`);
};

/** The new space's size now (both semi-spaces), or undefined if V8 does not name it. */
const youngGenerationBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size;

/** Holds the bound until the answer is called (each holder once); the timer is unref'd, and V8's
 * own growth comes back when the last holder lets go. The growth is stopped at once, and let go
 * only at a look that finds the space at half the bound or less, so that one growth (doubling)
 * stays within it: V8 may grow the space during a long synchronous stretch (loading modules) when
 * no timer runs, and Node 24 grew it from 16 to 32 MiB so before the first look. */
export function boundYoungGeneration(bytes = YOUNG_GENERATION_BYTES): () => void {
  bounds.push(bytes);
  if (!timer) {
    const look = () => {
      const size = youngGenerationBytes();
      setFactor(size !== undefined && size * 2 <= Math.min(...bounds) ? GROW : HOLD);
    };
    setFactor(HOLD);
    timer = setInterval(look, EVERY_MS);
    timer.unref();
  }
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    bounds.splice(bounds.indexOf(bytes), 1);
    if (bounds.length > 0) return;
    clearInterval(timer);
    timer = undefined;
    setFactor(GROW);
  };
}

/** How much V8 lets the old generation grow past what it held after a full collection, while a
 * job file is read, checked and run: 30% (V8's own factor, up to 4x on a fast-allocating heap, let
 * `jobs plan` of 20,000 jobs reach 176 MB where 46 MB were alive; with 30%, 152 MB for 0.05 s
 * more: test/bench/RESULTS.md, "A job file of 20,000 jobs"). 0 gives V8 its own factor back. */
const OLD_GROWTH_PERCENT = 30;
let oldHolders = 0;

/** Holds the old generation's growth at OLD_GROWTH_PERCENT until the answer is called. */
export function boundOldGeneration(): () => void {
  if (oldHolders++ === 0) setFlagsFromString(`--heap-growing-percent=${OLD_GROWTH_PERCENT}`);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    if (--oldHolders === 0) setFlagsFromString('--heap-growing-percent=0');
  };
}
