// A simulated clock for code that takes `now` and `sleep` as dependencies (STYLE lesson 12).
// Time moves only when every promise has settled as far as it can: then the earliest sleeper wakes
// and the clock jumps to its time. So a test of hours of back-off runs in milliseconds, and the
// order of events is exact and repeatable.

export class FakeClock {
  private time: number;
  private seq = 0;
  private readonly timers: { at: number; seq: number; wake: () => void }[] = [];
  private driving = false;

  constructor(start = 0) {
    this.time = start;
  }

  readonly now = (): number => this.time;

  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = {
        at: this.time + Math.max(0, ms),
        seq: this.seq++,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.timers.indexOf(timer);
        if (index >= 0) this.timers.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.timers.push(timer);
      this.drive();
    });

  /** sleepers not yet woken */
  get pending(): number {
    return this.timers.length;
  }

  private drive(): void {
    if (this.driving) return;
    this.driving = true;
    const step = () => {
      // setImmediate runs after every pending promise reaction: the simulated world is idle
      if (this.timers.length === 0) {
        this.driving = false;
        return;
      }
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift() as (typeof this.timers)[number];
      this.time = Math.max(this.time, next.at);
      next.wake();
      setImmediate(step);
    };
    setImmediate(step);
  }
}
