// The contract's vocabulary (reporting-api.md sections 2.2 to 2.4, 4.2 and 4.3), as data.
// Shared by the CLI (validation, help, completion) and the sandbox (which must accept the same).
// Pure data: cheap to import, so help and completion can use it without loading anything else.

import { SIDES, type Side } from '../api/sides.js';

export { SIDES, type Side };

export const TIME_DIMENSIONS = ['DAILY', 'HOURLY', 'MONTHLY', 'RANGE'] as const;
export type TimeDimension = (typeof TIME_DIMENSIONS)[number];

const COMMON_DIMENSIONS = [
  'ADNETWORK', 'FORMAT', 'OS', 'COUNTRY', 'REGION', 'DEPARTMENT', 'CITY', 'POSTALCODE',
  'DEVICETYPE', 'DEVICEBRAND', 'DEVICEMODEL', 'CARRIER',
] as const;

/** Dimensions only one side may request. APPCOUNTRY is not in the contract's seller list but the
 * platform's own seller sample uses it (SPEC section 2), so it is accepted. */
export const SIDE_DIMENSIONS: Record<Side, readonly string[]> = {
  buyer: ['CAMPAIGN', 'ADUNIT', 'ADVERTISER', 'PUBLISHERID'],
  seller: [
    'ZONE', 'PUBLISHER', 'SUBPUBLISHERID', 'SUBSUBPUBLISHERID', 'APP', 'BUNDLEID', 'BUYERNAME',
    'DEALID', 'DMP', 'APPCOUNTRY',
  ],
};

export function dimensionsOf(side: Side): string[] {
  return [...TIME_DIMENSIONS, ...COMMON_DIMENSIONS, ...SIDE_DIMENSIONS[side]];
}

export function isTimeDimension(value: string): value is TimeDimension {
  return (TIME_DIMENSIONS as readonly string[]).includes(value);
}

/** The metrics sent when none are asked for: every metric the contract lists for the side whose
 * rows carry it (a buyer row has no `requests` field: asking for it gives nothing). */
export const DEFAULT_METRICS: Record<Side, readonly string[]> = {
  buyer: [
    'displays', 'clicks', 'downloads', 'leads', 'landings', 'revenueEuro',
    'revenueDollar', 'eyesTrackings',
  ],
  seller: [
    'requests', 'displays', 'clicks', 'downloads', 'leads', 'landings', 'revenueEuro',
    'revenueDollar',
  ],
};

/** What each side accepts: the contract's list (buyer's `requests` included, though its rows never
 * carry it); the seller also takes eyesTrackings (its sample requests it). */
export function metricsOf(side: Side): string[] {
  return [...SIDE_METRICS[side]];
}
const SIDE_METRICS: Record<Side, readonly string[]> = { seller: [...DEFAULT_METRICS.seller, 'eyesTrackings'], buyer: ['requests', ...DEFAULT_METRICS.buyer] };

/** The row field a metric appears as (contract 2.4 note 1: revenueDollar arrives as valueDollar). */
export function metricField(metric: string): string {
  return metric === 'revenueDollar' ? 'valueDollar' : metric;
}

export interface RowField {
  name: string;
  type: 'nullable' | 'string' | 'number';
}

const f = (type: RowField['type'], names: string): RowField[] =>
  names.split(/\s+/).map((name) => ({ name, type }));

/** The contract's row fields, in the contract's order (section 2.4). */
export const ROW_FIELDS: Record<Side, RowField[]> = {
  buyer: [
    ...f('nullable', 'country city postalcode subpublisherId deviceType os adminLevel1 adminLevel2 carrier deviceModel deviceBrand'),
    ...f('string', 'billingEntity platform creativeId adUnitLimitType advertiser adName campaignId bundleId adUnitLimitValue adId Adnetwork campaignName'),
    ...f('number', 'eyesTrackings displays downloads landings leads clicks valueDollar revenueEuro'),
  ],
  seller: [
    ...f('nullable', 'country city postalcode subpublisherId subSubPublisherId adminLevel1 adminLevel2 encodedSubpublisherId deviceModel deviceBrand'),
    ...f('string', 'platform zoneHash appId deviceType os appName format bundleId appOwner carrier publisher Adnetwork'),
    ...f('number', 'eyesTrackings requests displays downloads landings leads clicks valueDollar revenueEuro'),
  ],
};

/** What --columns may name: the row fields of these sides, and the time bucket `date`. */
const COLUMN_NAMES = new Map<string, readonly string[]>();
/** every field of the sides' rows, `date` first (made once per set of sides: a job file checks thousands of jobs) */
export function columnNames(sides: readonly Side[]): string[] {
  const key = sides.join(',');
  let names = COLUMN_NAMES.get(key);
  if (!names) COLUMN_NAMES.set(key, names = Object.freeze([...new Set(['date', ...sides.flatMap((side) => ROW_FIELDS[side].map((field) => field.name))])]));
  return names as string[];
}

/** The row fields each breakdown fills, per side: what the sandbox fills, what `--columns requested`
 * keeps and what `schema` calls the row key. Breakdowns absent here (buyer FORMAT; seller BUYERNAME,
 * DEALID, DMP) have no field in the side's row: they are accepted but add no column and do not
 * split rows, since nothing in a row could tell them apart. */
const COMMON_FIELDS: Record<string, readonly string[]> = {
  COUNTRY: ['country'], REGION: ['adminLevel1'], DEPARTMENT: ['adminLevel2'], CITY: ['city'],
  POSTALCODE: ['postalcode'], ADNETWORK: ['Adnetwork'], OS: ['os'], DEVICETYPE: ['deviceType'],
  DEVICEBRAND: ['deviceBrand'], DEVICEMODEL: ['deviceModel'], CARRIER: ['carrier'],
};

export const BREAKDOWN_FIELDS: Record<Side, Readonly<Record<string, readonly string[]>>> = {
  buyer: {
    ...COMMON_FIELDS,
    CAMPAIGN: ['campaignId', 'campaignName'],
    ADUNIT: ['adId', 'adName', 'creativeId', 'adUnitLimitType', 'adUnitLimitValue'],
    ADVERTISER: ['advertiser', 'billingEntity'],
    PUBLISHERID: ['subpublisherId'],
  },
  seller: {
    ...COMMON_FIELDS,
    FORMAT: ['format'],
    ZONE: ['zoneHash'],
    PUBLISHER: ['publisher'],
    SUBPUBLISHERID: ['subpublisherId', 'encodedSubpublisherId'],
    SUBSUBPUBLISHERID: ['subSubPublisherId'],
    APP: ['appId', 'appName', 'appOwner', 'platform', 'bundleId'],
    BUNDLEID: ['bundleId'],
    APPCOUNTRY: ['appId', 'appName', 'country'],
  },
};

/** The time breakdown of a request, if any. */
export function timeDimensionOf(breakdowns: readonly string[]): TimeDimension | undefined {
  return breakdowns.find(isTimeDimension);
}

/** The metrics of a side that a row of that side can show: the contract lists `requests` as a
 * buyer metric, but its buyer row has no `requests` field, so asking for it gives no column. */
export function metricsWithField(side: Side): string[] {
  return [...sideSets(side).withField];
}

/** A side's fields and metrics as sets, made once a side (a job file checks thousands of jobs). */
interface SideSets {
  /** each row field's type, by name */
  types: ReadonlyMap<string, RowField['type']>;
  metrics: ReadonlySet<string>;
  withField: readonly string[];
}
const SIDE_SETS = new Map<Side, SideSets>();
export function sideSets(side: Side): SideSets {
  let sets = SIDE_SETS.get(side);
  if (!sets) {
    const types = new Map(ROW_FIELDS[side].map((field) => [field.name, field.type]));
    SIDE_SETS.set(side, sets = { types, metrics: new Set(SIDE_METRICS[side]), withField: SIDE_METRICS[side].filter((metric) => types.has(metricField(metric))) });
  }
  return sets;
}

/** The fields of a report row, in order: `date` first when the request has a time bucket (not
 * RANGE), every dimension field of the side (contract 2.4), the fields of the metrics asked for. */
export function rowFieldNames(side: Side, metrics: readonly string[], breakdowns: readonly string[]): string[] {
  const asked = new Set(metrics.map(metricField));
  const names = ROW_FIELDS[side]
    .filter((field) => field.type !== 'number' || asked.has(field.name))
    .map((field) => field.name);
  const time = timeDimensionOf(breakdowns);
  return time !== undefined && time !== 'RANGE' ? ['date', ...names] : names;
}

/** The requested columns (the default of the tabular formats, `--columns requested`): the time
 * bucket `date` (not with RANGE or without a time breakdown), the fields of the breakdowns in the
 * order asked, then the fields of the metrics in the order asked. A metric the contract lists for
 * the side but whose row has no field for it (buyer `requests`) gives no column; a name the
 * contract does not know (--no-validate) is kept, since it was asked for. */
export function requestedFieldNames(side: Side, metrics: readonly string[], breakdowns: readonly string[]): string[] {
  const names = new Set<string>();
  const time = timeDimensionOf(breakdowns);
  if (time !== undefined && time !== 'RANGE') names.add('date');
  for (const breakdown of breakdowns) for (const field of BREAKDOWN_FIELDS[side][breakdown] ?? []) names.add(field);
  const { types, metrics: known } = sideSets(side);
  for (const metric of metrics) {
    const field = metricField(metric);
    if (types.has(field) || !known.has(metric)) names.add(field);
  }
  return [...names];
}

/** Metrics that are amounts of money (doubles); every other metric is a count (a 64-bit integer). */
export const AMOUNT_FIELDS: readonly string[] = ['revenueEuro', 'valueDollar'];

export interface Filter {
  /** kebab-case option name, without the dashes */
  option: string;
  /** the request parameter */
  param: string;
  sides: readonly Side[];
  /** free text is never split on commas (a carrier name may hold one) */
  text?: boolean;
  description: string;
}

const BOTH: readonly Side[] = SIDES;

export const FILTERS: Filter[] = [
  { option: 'advertiser-id', param: 'advertiserId', sides: ['buyer'], description: 'advertiser IDs (admin only)' },
  { option: 'adunit-id', param: 'adunitId', sides: ['buyer'], description: 'ad unit IDs' },
  { option: 'campaign-id', param: 'campaignId', sides: ['buyer'], description: 'campaign IDs' },
  { option: 'publisher-id', param: 'publisherId', sides: ['seller'], description: 'publisher IDs (admin only)' },
  { option: 'sub-publisher-id', param: 'subPublisherId', sides: ['seller'], description: 'sub-publisher IDs' },
  { option: 'sub-sub-publisher-id', param: 'subSubPublisherId', sides: ['seller'], description: 'sub-sub-publisher IDs' },
  { option: 'platform-id', param: 'platformId', sides: ['seller'], description: 'platform IDs' },
  { option: 'app-id', param: 'appId', sides: ['seller'], description: 'app IDs' },
  { option: 'placement-id', param: 's', sides: ['seller'], description: 'placement IDs (sent as s)' },
  { option: 'buyer-id', param: 'buyerId', sides: ['seller'], description: 'ad exchange buyer IDs' },
  { option: 'deal-id', param: 'dealId', sides: ['seller'], description: 'ad exchange deal IDs' },
  { option: 'dmp-id', param: 'dmpId', sides: ['seller'], description: 'data management platform IDs' },
  { option: 'dmp-source-id', param: 'dmpSourceId', sides: ['seller'], description: 'data management platform source IDs' },
  { option: 'os-id', param: 'osId', sides: BOTH, description: 'mobile OS IDs' },
  { option: 'format-id', param: 'formatId', sides: BOTH, description: 'format IDs' },
  { option: 'country-id', param: 'countryId', sides: BOTH, description: 'country geoname IDs' },
  { option: 'region-id', param: 'regionId', sides: BOTH, description: 'region geoname IDs' },
  { option: 'department-id', param: 'departmentId', sides: BOTH, description: 'department geoname IDs' },
  { option: 'city-id', param: 'cityId', sides: BOTH, description: 'city geoname IDs' },
  { option: 'postalcode', param: 'postalcode', sides: BOTH, description: 'postal codes' },
  { option: 'ad-network-id', param: 'adNetworkId', sides: BOTH, description: 'ad network IDs' },
  { option: 'device-type-id', param: 'deviceTypeId', sides: BOTH, description: 'device type IDs' },
  { option: 'device-brand-id', param: 'deviceBrandId', sides: BOTH, description: 'device brand IDs' },
  { option: 'carrier', param: 'carrier', sides: BOTH, text: true, description: 'carrier names (never split on commas)' },
  { option: 'device-model', param: 'deviceModel', sides: BOTH, text: true, description: 'device model names (never split on commas)' },
];
