// --column-case snake's names of the contract's fields, written out by hand (not computed by the
// code under test): what the docs promise and what the tests compare the outputs with.

export const SNAKE_NAMES: Readonly<Record<string, string>> = {
  date: 'date',
  country: 'country', city: 'city', postalcode: 'postalcode', subpublisherId: 'subpublisher_id', deviceType: 'device_type',
  os: 'os', adminLevel1: 'admin_level_1', adminLevel2: 'admin_level_2', carrier: 'carrier', deviceModel: 'device_model',
  deviceBrand: 'device_brand', billingEntity: 'billing_entity', platform: 'platform', creativeId: 'creative_id',
  adUnitLimitType: 'ad_unit_limit_type', advertiser: 'advertiser', adName: 'ad_name', campaignId: 'campaign_id',
  bundleId: 'bundle_id', adUnitLimitValue: 'ad_unit_limit_value', adId: 'ad_id', Adnetwork: 'adnetwork',
  campaignName: 'campaign_name', eyesTrackings: 'eyes_trackings', displays: 'displays', downloads: 'downloads',
  landings: 'landings', leads: 'leads', clicks: 'clicks', valueDollar: 'value_dollar', revenueEuro: 'revenue_euro',
  requests: 'requests', revenueDollar: 'revenue_dollar',
  subSubPublisherId: 'sub_sub_publisher_id', encodedSubpublisherId: 'encoded_subpublisher_id', zoneHash: 'zone_hash',
  appId: 'app_id', appName: 'app_name', format: 'format', appOwner: 'app_owner', publisher: 'publisher',
};

/** A row's keys renamed by the table above (a field it does not know keeps its name). */
export const snakeRow = (row: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [SNAKE_NAMES[key] ?? key, value]));
