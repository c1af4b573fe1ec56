// The budget many jobs share in one process: at most `concurrency` reports running at once
// overall, and `perProfile` for one profile (one API account). A window's task takes its
// profile's slot first, then one of the whole budget: waiting for a busy profile holds nothing
// another profile could use.

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
