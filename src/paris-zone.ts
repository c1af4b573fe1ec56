// Europe/Paris for luxon, with its offsets remembered by UTC hour. Luxon asks Intl for the offset
// of every DateTime it makes in a zone (formatToParts: microseconds each); a job file's check
// makes thousands (every window of every job), and the offsets were most of its time
// (test/bench/RESULTS.md, "Paris offsets"). An hour is remembered only when its first and last
// millisecond have one offset, so an hour holding a change of offset (none since 1945, but the
// zone's history has some) is asked each time: the answer is Intl's, to the millisecond.

import { IANAZone } from 'luxon';
import { PARIS } from './paris.js';

const HOUR_MS = 3_600_000;
/** hours remembered at most (a century is 876,600): beyond, offsets are asked again */
const MAX_HOURS = 1_000_000;

class RememberedZone extends IANAZone {
  private readonly offsets = new Map<number, number>();

  override offset(ts: number): number {
    const hour = Math.floor(ts / HOUR_MS);
    const known = this.offsets.get(hour);
    if (known !== undefined) return known;
    const offset = super.offset(ts);
    if (Number.isFinite(offset) && this.offsets.size < MAX_HOURS && super.offset(hour * HOUR_MS) === offset && super.offset(hour * HOUR_MS + HOUR_MS - 1) === offset) this.offsets.set(hour, offset);
    return offset;
  }
}

/** The zone every Paris date and time is made in (luxon takes it wherever it takes a zone name). */
export const PARIS_ZONE = new RememberedZone(PARIS);
