// Facts are the sandbox's raw traffic: a fixed number of events per UTC hour, each at a seeded
// second, with every dimension and metric decided by hashing (seed, hour, slot). Reports are sums of
// facts, so any breakdown of a period adds up to the same totals, to the second.

import { DateTime } from 'luxon';
import { PARIS } from '../paris.js';
import {
  AD_NETWORKS, APPS, DEALS, DEVICES, DMPS, EXCHANGE_BUYERS, FORMATS, PLACES, campaignsOfYear,
  type AdUnit, type App, type Campaign, type Device, type Named, type Place,
} from './entities.js';
import { hash, pick, pickWeighted, unit } from './random.js';

const FACTS_PER_HOUR = 12;

export interface Metrics {
  requests: number;
  displays: number;
  clicks: number;
  downloads: number;
  leads: number;
  landings: number;
  eyesTrackings: number;
  /** revenue in billionths, kept as integers so that sums are exact in any order */
  euroNanos: number;
  dollarNanos: number;
}

export interface Fact {
  ts: number;
  hour: HourInfo;
  place: Place;
  carrier: string;
  device: Device;
  format: Named;
  adNetwork: Named;
  campaign: Campaign;
  adunit: AdUnit;
  app: App;
  zone: string;
  subPublisher: string | null;
  subSubPublisher: string | null;
  exchangeBuyer: Named;
  deal: Named;
  dmp: (typeof DMPS)[number];
  metrics: Metrics;
}

/** What a Paris wall clock says of one UTC hour. Paris offsets are whole hours (since 1911), so
 * one UTC hour is one Paris hour; `uniform` is false for the rare hour where that is not so. */
export interface HourInfo {
  start: number;
  uniform: boolean;
  year: number;
  localHour: number;
  day: string;
  month: string;
  hourIso: string;
}

export function parisTime(ts: number): { year: number; localHour: number; day: string; month: string; hourIso: string } {
  const local = DateTime.fromSeconds(ts, { zone: PARIS });
  const hourStart = local.startOf('hour');
  return {
    year: local.year,
    localHour: local.hour,
    day: local.toFormat('yyyy-MM-dd'),
    month: local.toFormat('yyyy-MM'),
    hourIso: hourStart.toISO({ suppressMilliseconds: true }) ?? '',
  };
}

function hourInfo(start: number): HourInfo {
  const first = DateTime.fromSeconds(start, { zone: PARIS });
  const last = DateTime.fromSeconds(start + 3599, { zone: PARIS });
  const uniform = first.offset === last.offset && first.offset % 60 === 0 && first.minute === 0;
  return { start, uniform, ...parisTime(start) };
}

/** Relative traffic by Paris hour of day. */
const DIURNAL = [
  0.25, 0.15, 0.1, 0.08, 0.08, 0.12, 0.3, 0.6, 0.9, 1.0, 1.05, 1.1,
  1.3, 1.25, 1.0, 0.95, 1.0, 1.1, 1.3, 1.5, 1.6, 1.4, 0.9, 0.5,
];

/** Late numbers: facts from `from` (Unix seconds) on are drawn at `revision`, so their
 * conversions and revenue differ from one revision to the next; earlier facts never change. */
export interface Restatement {
  from: number;
  revision: number;
}

export class FactSource {
  private readonly campaignCache = new Map<number, Campaign[]>();

  constructor(readonly seed: number) {}

  campaigns(year: number): Campaign[] {
    let campaigns = this.campaignCache.get(year);
    if (!campaigns) {
      campaigns = campaignsOfYear(this.seed, year);
      this.campaignCache.set(year, campaigns);
    }
    return campaigns;
  }

  /** Every fact whose second lies in [since, until], in time order. */
  *between(since: number, until: number, restated?: Restatement): Generator<Fact> {
    const firstHour = Math.floor(since / 3600) * 3600;
    for (let start = firstHour; start <= until; start += 3600) {
      const info = hourInfo(start);
      const facts: Fact[] = [];
      for (let slot = 0; slot < FACTS_PER_HOUR; slot++) {
        const ts = start + (hash(this.seed, 0x75, start, slot) % 3600);
        if (ts < since || ts > until) continue;
        facts.push(this.fact(info, slot, ts, restated !== undefined && ts >= restated.from ? restated.revision : 0));
      }
      facts.sort((a, b) => a.ts - b.ts);
      yield* facts;
    }
  }

  private fact(info: HourInfo, slot: number, ts: number, revision: number): Fact {
    const seed = this.seed;
    const h = (what: number) => hash(seed, what, info.start, slot);
    // what arrives late (clicks and what follows them, revenue) depends on the revision;
    // who, where and how many displays never do, so a restated day keeps its rows
    const late = revision === 0 ? h : (what: number) => hash(seed, what, info.start, slot, 0x1a7e, revision);
    const hour = info.uniform ? info : { ...info, ...parisTime(ts) };
    const place = pickWeighted(PLACES, h(1));
    const year = hour.year;
    const active = this.campaigns(year).filter((c) => c.start <= ts && ts <= c.end);
    const campaign = pick(active, h(2));
    const adunit = pick(campaign.adunits, h(3));
    const app = pickWeighted(APPS, h(4));
    const format = FORMATS.find((candidate) => candidate.id === adunit.formatId) ?? pick(FORMATS, h(5));
    const diurnal = DIURNAL[hour.localHour] ?? 1;
    const requests = Math.floor((60 + unit(h(10)) * 900) * diurnal * (0.5 + place.weight / 6));
    const displays = Math.floor(requests * (0.45 + unit(h(11)) * 0.45));
    const clicks = Math.floor(displays * (0.004 + unit(late(12)) * 0.03));
    const cpmMicros = 200_000 + Math.floor(unit(late(13)) * 6_000_000);
    const euroNanos = displays * cpmMicros + (late(14) % 1000);
    return {
      ts,
      hour,
      place,
      carrier: pick(place.carriers, h(6)),
      device: pickWeighted(DEVICES, h(7)),
      format,
      adNetwork: pick(AD_NETWORKS, h(8)),
      campaign,
      adunit,
      app,
      zone: pick(app.zones, h(9)),
      subPublisher: pick(app.subPublishers, h(15)),
      subSubPublisher: h(16) % 3 === 0 ? null : `ssp-${(h(16) % 40) + 1}`,
      exchangeBuyer: pick(EXCHANGE_BUYERS, h(17)),
      deal: pick(DEALS, h(18)),
      dmp: pick(DMPS, h(19)),
      metrics: {
        requests,
        displays,
        clicks,
        landings: Math.floor(clicks * (0.6 + unit(late(20)) * 0.35)),
        downloads: Math.floor(clicks * unit(late(21)) * 0.15),
        leads: Math.floor(clicks * unit(late(22)) * 0.05),
        eyesTrackings: Math.floor(displays * unit(h(23)) * 0.3),
        euroNanos,
        dollarNanos: Math.round(euroNanos * 1.0823),
      },
    };
  }
}
