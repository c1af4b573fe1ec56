// Turning facts into a report: filters, breakdowns (with Europe/Paris time buckets), the requested
// metrics only, and the contract's row shape for the side.

import { DateTime } from 'luxon';
import { BREAKDOWN_FIELDS, ROW_FIELDS, rowFieldNames as contractFieldNames, timeDimensionOf, type Side } from '../report/catalog.js';
import { PARIS } from '../paris.js';
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

type Value = (fact: Fact) => string | null;

/** What each row field holds; which fields a breakdown fills is the catalog's BREAKDOWN_FIELDS. */
const COMMON_VALUES: Record<string, Value> = {
  country: (x) => x.place.country,
  adminLevel1: (x) => x.place.region,
  adminLevel2: (x) => x.place.department,
  city: (x) => x.place.city,
  postalcode: (x) => x.place.postalcode,
  Adnetwork: (x) => x.adNetwork.name,
  os: (x) => x.device.os,
  deviceType: (x) => x.device.deviceType,
  deviceBrand: (x) => x.device.brand,
  deviceModel: (x) => x.device.model,
  carrier: (x) => x.carrier,
};

const FIELD_VALUES: Record<Side, Record<string, Value>> = {
  buyer: {
    ...COMMON_VALUES,
    campaignId: (x) => x.campaign.campaignId,
    campaignName: (x) => x.campaign.campaignName,
    adId: (x) => x.adunit.adunitId,
    adName: (x) => x.adunit.adunitName,
    creativeId: (x) => x.adunit.creativeId,
    adUnitLimitType: (x) => x.adunit.limitType,
    adUnitLimitValue: (x) => x.adunit.limitValue,
    advertiser: (x) => x.campaign.advertiser.name,
    billingEntity: (x) => x.campaign.advertiser.billingEntity,
    subpublisherId: (x) => x.app.publisherId,
  },
  seller: {
    ...COMMON_VALUES,
    format: (x) => x.format.name,
    zoneHash: (x) => x.zone,
    publisher: (x) => x.app.publisher,
    subpublisherId: (x) => x.subPublisher,
    encodedSubpublisherId: (x) => base64(x.subPublisher),
    subSubPublisherId: (x) => x.subSubPublisher,
    appId: (x) => x.app.appId,
    appName: (x) => x.app.appName,
    appOwner: (x) => x.app.appOwner,
    platform: (x) => x.app.platform,
    bundleId: (x) => x.app.bundleId,
  },
};

/** What tells the groups of a breakdown apart. */
const COMMON_KEYS: Record<string, Value> = {
  COUNTRY: (x) => x.place.countryId,
  REGION: (x) => x.place.regionId,
  DEPARTMENT: (x) => x.place.departmentId,
  CITY: (x) => x.place.cityId ?? '',
  POSTALCODE: (x) => x.place.postalcode ?? '',
  ADNETWORK: (x) => x.adNetwork.id,
  OS: (x) => x.device.osId,
  DEVICETYPE: (x) => x.device.deviceTypeId,
  DEVICEBRAND: (x) => x.device.brandId,
  DEVICEMODEL: (x) => x.device.model ?? '',
  CARRIER: (x) => x.carrier,
};

const KEYS: Record<Side, Record<string, Value>> = {
  buyer: {
    ...COMMON_KEYS,
    CAMPAIGN: (x) => x.campaign.campaignId,
    ADUNIT: (x) => x.adunit.adunitId,
    ADVERTISER: (x) => x.campaign.advertiser.id,
    PUBLISHERID: (x) => x.app.publisherId,
  },
  seller: {
    ...COMMON_KEYS,
    FORMAT: (x) => x.format.id,
    ZONE: (x) => x.zone,
    PUBLISHER: (x) => x.app.publisherId,
    SUBPUBLISHERID: (x) => x.subPublisher ?? '',
    SUBSUBPUBLISHERID: (x) => x.subSubPublisher ?? '',
    APP: (x) => x.app.appId,
    BUNDLEID: (x) => x.app.bundleId,
    APPCOUNTRY: (x) => `${x.app.appId}/${x.place.countryId}`,
  },
};

/** Breakdowns with no field in the side's row (see BREAKDOWN_FIELDS) do not split rows. */
function dimension(side: Side, name: string): Dimension | undefined {
  const names = BREAKDOWN_FIELDS[side][name];
  const key = KEYS[side][name];
  if (!names || !key) return undefined;
  const values = names.map((field) => [field, FIELD_VALUES[side][field] as Value] as const);
  return {
    key: (x) => key(x) ?? '',
    fields: (x) => {
      const fields: Fields = {};
      for (const [field, value] of values) fields[field] = value(x);
      return fields;
    },
  };
}

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

/** The row's field names in order (the catalog's rowFieldNames: a buyer row has no `requests`). */
function rowFieldNames(query: ReportQuery): string[] {
  return contractFieldNames(query.side, query.metrics, query.breakdowns);
}

function timeDimension(query: ReportQuery): string | undefined {
  return timeDimensionOf(query.breakdowns);
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
    .map((name) => dimension(query.side, name))
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

function isoParis(seconds: number): string {
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
  const all = Object.keys(KEYS[query.side]).map((name) => dimension(query.side, name)).filter((dim): dim is Dimension => dim !== undefined);
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
