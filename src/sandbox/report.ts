// Turning facts into a report: filters, breakdowns (with Europe/Paris time buckets), the requested
// metrics only, and the contract's row shape for the side.

import { DateTime } from 'luxon';
import { PARIS, ROW_FIELDS, isTimeDimension, metricField, type Side } from '../report/catalog.js';
import type { Fact, FactSource, Metrics, Restatement } from './facts.js';
import { parisTime } from './facts.js';
import { hash, unit } from './random.js';
import type { ReportRequest } from '../report/request.js';

/** What the sandbox answers for: a report request as the CLI models it, without --param extras. */
export type ReportQuery = Omit<ReportRequest, 'extra'>;

type Fields = Record<string, string | null>;

interface Dimension {
  key(fact: Fact): string;
  fields(fact: Fact): Fields;
}

const base64 = (value: string | null) => (value === null ? null : Buffer.from(value).toString('base64'));

const geo: Record<string, Dimension> = {
  COUNTRY: { key: (x) => x.place.countryId, fields: (x) => ({ country: x.place.country }) },
  REGION: { key: (x) => x.place.regionId, fields: (x) => ({ adminLevel1: x.place.region }) },
  DEPARTMENT: { key: (x) => x.place.departmentId, fields: (x) => ({ adminLevel2: x.place.department }) },
  CITY: { key: (x) => x.place.cityId ?? '', fields: (x) => ({ city: x.place.city }) },
  POSTALCODE: { key: (x) => x.place.postalcode ?? '', fields: (x) => ({ postalcode: x.place.postalcode }) },
};

const common: Record<string, Dimension> = {
  ...geo,
  ADNETWORK: { key: (x) => x.adNetwork.id, fields: (x) => ({ Adnetwork: x.adNetwork.name }) },
  OS: { key: (x) => x.device.osId, fields: (x) => ({ os: x.device.os }) },
  DEVICETYPE: { key: (x) => x.device.deviceTypeId, fields: (x) => ({ deviceType: x.device.deviceType }) },
  DEVICEBRAND: { key: (x) => x.device.brandId, fields: (x) => ({ deviceBrand: x.device.brand }) },
  DEVICEMODEL: { key: (x) => x.device.model ?? '', fields: (x) => ({ deviceModel: x.device.model }) },
  CARRIER: { key: (x) => x.carrier, fields: (x) => ({ carrier: x.carrier }) },
};

/** Breakdowns with no field in the side's row (buyer FORMAT; seller BUYERNAME, DEALID, DMP) are
 * accepted and listed in the summary but do not split rows: nothing in a row could tell them apart. */
const DIMENSIONS: Record<Side, Record<string, Dimension>> = {
  buyer: {
    ...common,
    CAMPAIGN: { key: (x) => x.campaign.campaignId, fields: (x) => ({ campaignId: x.campaign.campaignId, campaignName: x.campaign.campaignName }) },
    ADUNIT: {
      key: (x) => x.adunit.adunitId,
      fields: (x) => ({
        adId: x.adunit.adunitId, adName: x.adunit.adunitName, creativeId: x.adunit.creativeId,
        adUnitLimitType: x.adunit.limitType, adUnitLimitValue: x.adunit.limitValue,
      }),
    },
    ADVERTISER: {
      key: (x) => x.campaign.advertiser.id,
      fields: (x) => ({ advertiser: x.campaign.advertiser.name, billingEntity: x.campaign.advertiser.billingEntity }),
    },
    PUBLISHERID: { key: (x) => x.app.publisherId, fields: (x) => ({ subpublisherId: x.app.publisherId }) },
  },
  seller: {
    ...common,
    FORMAT: { key: (x) => x.format.id, fields: (x) => ({ format: x.format.name }) },
    ZONE: { key: (x) => x.zone, fields: (x) => ({ zoneHash: x.zone }) },
    PUBLISHER: { key: (x) => x.app.publisherId, fields: (x) => ({ publisher: x.app.publisher }) },
    SUBPUBLISHERID: {
      key: (x) => x.subPublisher ?? '',
      fields: (x) => ({ subpublisherId: x.subPublisher, encodedSubpublisherId: base64(x.subPublisher) }),
    },
    SUBSUBPUBLISHERID: { key: (x) => x.subSubPublisher ?? '', fields: (x) => ({ subSubPublisherId: x.subSubPublisher }) },
    APP: {
      key: (x) => x.app.appId,
      fields: (x) => ({ appId: x.app.appId, appName: x.app.appName, appOwner: x.app.appOwner, platform: x.app.platform, bundleId: x.app.bundleId }),
    },
    BUNDLEID: { key: (x) => x.app.bundleId, fields: (x) => ({ bundleId: x.app.bundleId }) },
    APPCOUNTRY: {
      key: (x) => `${x.app.appId}/${x.place.countryId}`,
      fields: (x) => ({ appId: x.app.appId, appName: x.app.appName, country: x.place.country }),
    },
  },
};

/** What each filter parameter compares against; unknown parameters are ignored, as APIs do. */
const FILTER_VALUES: Record<string, (fact: Fact) => string | null> = {
  advertiserId: (x) => x.campaign.advertiser.id,
  adunitId: (x) => x.adunit.adunitId,
  campaignId: (x) => x.campaign.campaignId,
  publisherId: (x) => x.app.publisherId,
  subPublisherId: (x) => x.subPublisher,
  subSubPublisherId: (x) => x.subSubPublisher,
  platformId: (x) => x.app.platformId,
  appId: (x) => x.app.appId,
  s: (x) => x.zone,
  buyerId: (x) => x.exchangeBuyer.id,
  dealId: (x) => x.deal.id,
  dmpId: (x) => x.dmp.id,
  dmpSourceId: (x) => x.dmp.sourceId,
  osId: (x) => x.device.osId,
  formatId: (x) => x.format.id,
  countryId: (x) => x.place.countryId,
  regionId: (x) => x.place.regionId,
  departmentId: (x) => x.place.departmentId,
  cityId: (x) => x.place.cityId,
  postalcode: (x) => x.place.postalcode,
  adNetworkId: (x) => x.adNetwork.id,
  carrier: (x) => x.carrier,
  deviceTypeId: (x) => x.device.deviceTypeId,
  deviceBrandId: (x) => x.device.brandId,
  deviceModel: (x) => x.device.model,
};

export function isFilterParam(name: string): boolean {
  return name in FILTER_VALUES;
}

function timeBucket(fact: Fact, dimension: string | undefined): string | null {
  switch (dimension) {
    case 'HOURLY': return fact.hour.hourIso;
    case 'DAILY': return fact.hour.day;
    case 'MONTHLY': return fact.hour.month;
    default: return null;
  }
}

const METRIC_VALUE: Record<string, (m: Metrics) => number> = {
  requests: (m) => m.requests,
  displays: (m) => m.displays,
  clicks: (m) => m.clicks,
  downloads: (m) => m.downloads,
  leads: (m) => m.leads,
  landings: (m) => m.landings,
  eyesTrackings: (m) => m.eyesTrackings,
  revenueEuro: (m) => m.euroNanos / 1e9,
  valueDollar: (m) => m.dollarNanos / 1e9,
};

/** The row's field names in order: `date` first when there is one, the contract's order after;
 * metric fields only for the metrics asked for (a buyer row has no `requests` field). */
export function rowFieldNames(query: ReportQuery): string[] {
  const asked = new Set(query.metrics.map(metricField));
  const names = ROW_FIELDS[query.side]
    .filter((field) => field.type !== 'number' || asked.has(field.name))
    .map((field) => field.name);
  return hasDate(query) ? ['date', ...names] : names;
}

function timeDimension(query: ReportQuery): string | undefined {
  return query.breakdowns.find(isTimeDimension);
}

function hasDate(query: ReportQuery): boolean {
  const time = timeDimension(query);
  return time !== undefined && time !== 'RANGE';
}

function emptyFields(side: Side): Fields {
  const fields: Fields = {};
  for (const field of ROW_FIELDS[side]) {
    if (field.type !== 'number') fields[field.name] = field.type === 'nullable' ? null : '';
  }
  return fields;
}

export type Row = Record<string, string | number | null>;

export function buildRows(source: FactSource, query: ReportQuery, restated?: Restatement): Row[] {
  const dims = query.breakdowns
    .map((name) => DIMENSIONS[query.side][name])
    .filter((dim): dim is Dimension => dim !== undefined);
  const filters = Object.entries(query.filters)
    .filter(([param]) => param in FILTER_VALUES)
    .map(([param, values]) => ({ value: FILTER_VALUES[param] as (fact: Fact) => string | null, allowed: new Set(values) }));
  const time = timeDimension(query);
  const empty = emptyFields(query.side);
  const groups = new Map<string, { order: number; date: string | null; fields: Fields; totals: Metrics }>();

  for (const fact of source.between(query.since, query.until, restated)) {
    if (!filters.every((filter) => filter.allowed.has(filter.value(fact) ?? '\u0000'))) continue;
    const date = timeBucket(fact, time);
    const key = `${date ?? ''}\u0001${dims.map((dim) => dim.key(fact)).join('\u0001')}`;
    let group = groups.get(key);
    if (!group) {
      const fields: Fields = { ...empty };
      for (const dim of dims) Object.assign(fields, dim.fields(fact));
      group = { order: fact.ts, date, fields, totals: zeroMetrics() };
      groups.set(key, group);
    }
    addMetrics(group.totals, fact.metrics);
  }

  const names = rowFieldNames(query);
  const sorted = [...groups.entries()].sort(([ka, a], [kb, b]) =>
    a.date === b.date ? (ka < kb ? -1 : ka > kb ? 1 : 0) : a.order - b.order);
  return sorted.map(([, group]) => {
    const row: Row = {};
    for (const name of names) {
      if (name === 'date') row.date = group.date;
      else if (name in group.fields) row[name] = group.fields[name] ?? null;
      else row[name] = (METRIC_VALUE[name] as (m: Metrics) => number)(group.totals);
    }
    return row;
  });
}

function zeroMetrics(): Metrics {
  return { requests: 0, displays: 0, clicks: 0, downloads: 0, leads: 0, landings: 0, eyesTrackings: 0, euroNanos: 0, dollarNanos: 0 };
}

function addMetrics(into: Metrics, add: Metrics): void {
  into.requests += add.requests;
  into.displays += add.displays;
  into.clicks += add.clicks;
  into.downloads += add.downloads;
  into.leads += add.leads;
  into.landings += add.landings;
  into.eyesTrackings += add.eyesTrackings;
  into.euroNanos += add.euroNanos;
  into.dollarNanos += add.dollarNanos;
}

export function isoParis(seconds: number): string {
  return DateTime.fromSeconds(seconds, { zone: PARIS }).toISO({ suppressMilliseconds: true }) ?? '';
}

export function summaryOf(query: ReportQuery) {
  return {
    since: isoParis(query.since),
    until: isoParis(query.until),
    breakdowns: query.breakdowns,
    timezone: 'europe/paris',
  };
}

/**
 * The scale switch: `count` rows of the side's full row shape (every dimension field filled, the
 * requested metrics only), generated one at a time from a pool of facts so that nothing grows
 * with the count. Yields each row's JSON text.
 */
export function* scaledRowTexts(source: FactSource, query: ReportQuery, count: number): Generator<string> {
  const poolSize = 509;
  const pool: string[] = [];
  const all = Object.values(DIMENSIONS[query.side]);
  let hour = Math.floor(query.since / 3600) * 3600;
  while (pool.length < poolSize) {
    for (const fact of source.between(hour, hour + 3599)) {
      const fields: Fields = emptyFields(query.side);
      for (const dim of all) Object.assign(fields, dim.fields(fact));
      pool.push(JSON.stringify(fields).slice(1, -1));
      if (pool.length === poolSize) break;
    }
    hour += 3600;
  }
  const metricNames = rowFieldNames(query).filter((name) => name in METRIC_VALUE);
  const time = timeDimension(query);
  const span = query.until - query.since + 1;
  let lastHour = Number.NaN;
  let dateText = '';
  for (let i = 0; i < count; i++) {
    let text = '{';
    if (time !== undefined && time !== 'RANGE') {
      const ts = query.since + Math.floor((i * span) / count);
      const hourOfTs = Math.floor(ts / 3600);
      if (hourOfTs !== lastHour) {
        lastHour = hourOfTs;
        const paris = parisTime(ts);
        dateText = JSON.stringify(time === 'HOURLY' ? paris.hourIso : time === 'DAILY' ? paris.day : paris.month);
      }
      text += `"date":${dateText},`;
    }
    text += pool[i % poolSize];
    const h = hash(source.seed, 0x5ca1e, i);
    for (const name of metricNames) {
      const value = name === 'revenueEuro' || name === 'valueDollar'
        ? Math.round(unit(hash(h, name.length)) * 1e9) / 1e6
        : hash(h, name.charCodeAt(0), name.length) % 5000;
      text += `,"${name}":${value}`;
    }
    yield `${text}}`;
  }
}
