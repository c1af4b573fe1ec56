// The Paris zone whose offsets are remembered by UTC hour (src/report/paris.ts) answers what Intl
// answers, to the millisecond: at random instants from 1850 to 2150, asked twice (the second
// answer from memory), around every change of offset of the zone's history, and for the dates
// luxon makes in it.

import fc from 'fast-check';
import { DateTime, IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { PARIS_ZONE } from '../../src/paris-zone.js';

const INTL = IANAZone.create('Europe/Paris');
const FROM = Date.UTC(1850, 0, 1);
const TO = Date.UTC(2150, 0, 1);

describe('PARIS_ZONE', () => {
  it('gives Intl\'s offset at any instant, first asked and from memory', () => {
    fc.assert(fc.property(fc.integer({ min: FROM, max: TO }), (ts) => {
      expect(PARIS_ZONE.offset(ts)).toBe(INTL.offset(ts));
      expect(PARIS_ZONE.offset(ts)).toBe(INTL.offset(ts));
    }), { numRuns: 20_000 });
  });

  it('gives Intl\'s offset on each side of every change of offset (1850-2150), to the millisecond', () => {
    let changes = 0;
    // in steps of 12 hours (the zone never changed twice within one)
    const STEP = 12 * 3_600_000;
    for (let ts = FROM; ts < TO; ts += STEP) {
      if (INTL.offset(ts) === INTL.offset(ts + STEP)) continue;
      // the change lies within this step: find its millisecond
      let low = ts;
      let high = ts + STEP;
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (INTL.offset(middle) === INTL.offset(ts)) low = middle;
        else high = middle;
      }
      changes += 1;
      for (const at of [low - 1, low, high, high + 1, low - (low % 3_600_000), low - (low % 3_600_000) + 3_599_999]) expect(PARIS_ZONE.offset(at), new Date(at).toISOString()).toBe(INTL.offset(at));
    }
    expect(changes).toBeGreaterThan(300);
  });

  it('makes the same Paris dates as the zone\'s name', () => {
    for (const iso of ['2026-03-29T02:30:00', '2026-10-25T02:30:00', '1911-03-11T00:00:00', '2026-11-28T23:59:59']) {
      expect(DateTime.fromISO(iso, { zone: PARIS_ZONE }).toISO()).toBe(DateTime.fromISO(iso, { zone: 'Europe/Paris' }).toISO());
    }
  });
});
