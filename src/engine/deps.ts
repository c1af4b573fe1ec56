// What the engine takes to run a job: the Context (streams, environment, clock, randomness,
// signal, host) and the few things a command adds to it: the API client, the calendar, sleeping,
// the secrets, the -v trace, who runs (profile, base URL) and how it speaks (the global flags it
// reads). Never the factory (a dependency-cruiser rule): src/factory.ts's `engineDeps` builds
// this from it, and a test may build its own.

import type { ReportingClient } from '../api/client.js';
import type { Secrets } from '../api/redact.js';
import type { Calendar } from '../clock.js';
import type { Context } from '../context.js';
import type { Sleep } from '../retry.js';

/** The global flags a run reads. */
export interface RunMode {
  /** -q: no notes, no retry lines */
  readonly quiet: boolean;
  /** -v */
  readonly verbose: boolean;
  /** --json: the result as one JSON line on stdout */
  readonly json: boolean;
  /** --retries: the HTTP client's, said in the windows' events */
  readonly retries: number;
  /** --base-url as given (the pick-up command repeats it) */
  readonly baseUrl?: string;
}

/** Waits `ms`, or rejects with InterruptedError once `signal` aborts (the one retry policy's). */
export type { Sleep };

export interface EngineDeps extends Context {
  /** the API client of the run's profile, made on first use */
  client(): ReportingClient;
  /** the calendar's clock (today, --since auto): `now` moved by REPORTING_NOW */
  readonly calendar: Calendar;
  readonly sleep: Sleep;
  /** masked in every trace and message; a run adds its database password */
  readonly secrets: Secrets;
  /** a line of -v trace, or undefined without -v */
  readonly trace: ((line: string) => void) | undefined;
  readonly profileName: string;
  /** the run's base URL (the profile's, the flag's or the environment's) */
  baseUrl(): { url: string };
  readonly globals: RunMode;
}
