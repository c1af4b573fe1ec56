// The budget many jobs share in one process: at most `concurrency` reports running at once
// overall, and `perProfile` for one profile (one API account). A window's task takes its
// profile's slot first, then one of the whole budget: waiting for a busy profile holds nothing
// another profile could use. Jobs start `concurrency` at a time (Starts), so that the first
// reports are submitted before every job has prepared.

import { Slots } from '../engine/fetch.js';
import type { Gate } from '../engine/job.js';

export class Budget {
  private readonly all: Slots;
  private readonly profiles = new Map<string, Slots>();
  private running = 0;
  /** the most reports running at once, overall and per profile (for the summary and tests) */
  peak = 0;
  readonly peaks = new Map<string, number>();
  private readonly now = new Map<string, number>();

  constructor(readonly concurrency: number, readonly perProfile: number) {
    this.all = new Slots(concurrency);
  }

  /** The gate of one profile's jobs; `busy` is told when an acquire has to wait for the profile
   * (per-profile), not only for the whole budget. */
  gateFor(profile: string, busy?: () => void): Gate {
    let mine = this.profiles.get(profile);
    if (!mine) this.profiles.set(profile, (mine = new Slots(this.perProfile)));
    const slots = mine;
    return {
      acquire: async (signal, soon) => {
        if (slots.available === 0) busy?.();
        const releaseProfile = await slots.acquire(signal);
        let releaseAll: () => void;
        try {
          releaseAll = await this.all.acquire(signal, soon);
        } catch (error) {
          releaseProfile();
          throw error;
        }
        this.count(profile, 1);
        let released = false;
        return () => {
          if (released) return;
          released = true;
          this.count(profile, -1);
          releaseAll();
          releaseProfile();
        };
      },
      readying: () => this.all.announce(),
    };
  }

  private count(profile: string, delta: number): void {
    this.running += delta;
    this.peak = Math.max(this.peak, this.running);
    const mine = (this.now.get(profile) ?? 0) + delta;
    this.now.set(profile, mine);
    this.peaks.set(profile, Math.max(this.peaks.get(profile) ?? 0, mine));
  }
}

/** How long a job's turn to start lasts at most before it asks for a slot: a job waiting that
 * long for its state's lock (--lock-wait) or a slow disk lets the next one start. */
export const START_PATIENCE_MS = 500;

/** A job's turn to start: `reached` when it asks the budget for a slot (the patience stops),
 * `end` when it got one, found its profile busy, or ended (later calls do nothing). */
export interface Turn {
  reached(): void;
  end(): void;
}

/**
 * Jobs start `size` at a time. A job's turn lasts from its start (its flags parsed, its paths
 * checked, its state opened and planned: milliseconds of CPU each) until it gets a slot of the
 * budget, and the next job starts then: so at most `size` jobs wait, prepared, for the budget, and
 * a slot freed goes at once to a job that is ready to submit. Started all at once, 300 jobs spent
 * 2-3 s preparing before the first report was submitted, the budget idle, and 3,000 jobs held
 * 576 MiB (npm run bench:fleet). A job that waits for its profile (per-profile) rather than the
 * budget ends its turn, so that a busy profile never keeps other profiles' jobs from starting; one
 * that has not asked for a slot after `patienceMs` too. Jobs start in the file's order, so they
 * reach the budget in it.
 */
export class Starts {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number, private readonly patienceMs = START_PATIENCE_MS) {
    this.free = size;
  }

  /** Waits for a turn. */
  async turn(): Promise<Turn> {
    // (no signal: on Ctrl-C the jobs that start end at once, and the turns go round)
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      const next = this.waiting.shift();
      // (the next job's start, milliseconds of CPU, waits for what is queued now: the submit of
      // the window that just got its slot goes out first)
      if (next) setImmediate(next);
      else this.free++;
    };
    const timer = setTimeout(end, this.patienceMs);
    timer.unref?.();
    return { reached: () => clearTimeout(timer), end };
  }
}
