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

  /** The gate of one profile's jobs. */
  gateFor(profile: string): Gate {
    let mine = this.profiles.get(profile);
    if (!mine) this.profiles.set(profile, (mine = new Slots(this.perProfile)));
    const slots = mine;
    return {
      acquire: async (signal) => {
        const releaseProfile = await slots.acquire(signal);
        let releaseAll: () => void;
        try {
          releaseAll = await this.all.acquire(signal);
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

/** How long a job's turn to start lasts at most: a job waiting that long for its state's lock
 * (--lock-wait) or a slow disk lets the next one start. */
export const START_PATIENCE_MS = 500;

/**
 * Jobs start `size` at a time. A job's start (its flags parsed, its paths checked, its state opened
 * and planned: milliseconds of CPU each) ends when it first asks the budget for a slot, when it
 * ends, or after `patienceMs`, and the next job starts then. Started all at once, 300 jobs spent
 * 2-3 s preparing before the first report was submitted, the budget idle (npm run bench:fleet);
 * a few at a time, the first reports are submitted at once and the later jobs prepare while they
 * are at work on the server. Jobs start in the file's order, so they reach the budget in it.
 */
export class Starts {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number, private readonly patienceMs = START_PATIENCE_MS) {
    this.free = size;
  }

  /** Waits for a turn; resolves with its end (call it once started; later calls do nothing). */
  async turn(): Promise<() => void> {
    // (no signal: on Ctrl-C the jobs that start end at once, and the turns go round)
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
    const timer = setTimeout(end, this.patienceMs);
    timer.unref?.();
    return end;
  }
}
