// The sandbox's synthetic world. Names deliberately include what real exports meet: accents,
// commas, quotes, an emoji and a line break, so that writers are exercised on realistic data.

import { DateTime } from 'luxon';
import { hash, pick, unit } from './random.js';
import { PARIS } from '../paris.js';

export interface Place {
  countryId: string;
  country: string;
  regionId: string;
  region: string;
  departmentId: string;
  department: string;
  cityId: string | null;
  city: string | null;
  postalcode: string | null;
  carriers: readonly string[];
  weight: number;
}

const FR = ['Orange', 'SFR', 'Bouygues Telecom', 'Free Mobile', 'Wi-Fi'];
const DE = ['Telekom', 'Vodafone', 'O2', 'Wi-Fi'];
const ES = ['Movistar', 'Vodafone', 'Orange', 'Wi-Fi'];
const IT = ['TIM', 'Vodafone', 'WindTre', 'Wi-Fi'];
const BE = ['Proximus', 'Orange', 'Telenet', 'Wi-Fi'];
const GB = ['EE', 'Vodafone', 'O2', 'Three', 'Wi-Fi'];
const US = ['Verizon', 'AT&T', 'T-Mobile', 'Wi-Fi'];

const place = (
  countryId: string, country: string, regionId: string, region: string, departmentId: string,
  department: string, cityId: string | null, city: string | null, postalcode: string | null,
  carriers: readonly string[], weight: number,
): Place => ({ countryId, country, regionId, region, departmentId, department, cityId, city, postalcode, carriers, weight });

/** Geoname-like identifiers; a place with a null city is traffic located only to its department. */
export const PLACES: readonly Place[] = [
  place('3017382', 'France', '3012874', 'Île-de-France', '2968815', 'Paris', '2988507', 'Paris', '75001', FR, 9),
  place('3017382', 'France', '3012874', 'Île-de-France', '2968815', 'Paris', '2988507', 'Paris', '75011', FR, 6),
  place('3017382', 'France', '3012874', 'Île-de-France', '2975246', 'Seine-Saint-Denis', '3031137', 'Saint-Denis', '93200', FR, 3),
  place('3017382', 'France', '2985244', "Provence-Alpes-Côte d'Azur", '3031359', 'Bouches-du-Rhône', '2995469', 'Marseille', '13001', FR, 4),
  place('3017382', 'France', '2985244', "Provence-Alpes-Côte d'Azur", '2985290', 'Alpes-Maritimes', '2990440', 'Nice', '06000', FR, 2),
  place('3017382', 'France', '11071625', 'Auvergne-Rhône-Alpes', '2987410', 'Rhône', '2996944', 'Lyon', '69001', FR, 4),
  place('3017382', 'France', '11071625', 'Auvergne-Rhône-Alpes', '3013738', 'Haute-Savoie', null, null, null, FR, 1),
  place('2921044', 'Germany', '2951839', 'Bavaria', '2861322', 'Upper Bavaria', '2867714', 'Munich', '80331', DE, 3),
  place('2921044', 'Germany', '2950157', 'Berlin', '2950157', 'Berlin', '2950159', 'Berlin', '10115', DE, 3),
  place('2510769', 'Spain', '3336901', 'Catalonia', '3128759', 'Barcelona', '3128760', 'Barcelona', '08001', ES, 3),
  place('2510769', 'Spain', '3117732', 'Madrid', '6355233', 'Provincia de Madrid', '3117735', 'Madrid', '28001', ES, 3),
  place('3175395', 'Italy', '3174618', 'Lombardy', '3173434', 'Milano', '3173435', 'Milan', '20121', IT, 2),
  place('2802361', 'Belgium', '2800867', 'Brussels-Capital', '2800867', 'Brussels-Capital', '2800866', 'Brussels', '1000', BE, 2),
  place('2635167', 'United Kingdom', '6269131', 'England', '2648110', 'Greater London', '2643743', 'London', 'EC1A', GB, 3),
  place('6252001', 'United States', '5128638', 'New York', '5128594', 'New York County', '5128581', 'New York City', '10001', US, 2),
  place('6252001', 'United States', '5332921', 'California', '5368381', 'Los Angeles County', null, null, null, US, 1),
];

export interface Device {
  model: string | null;
  brand: string | null;
  brandId: string;
  os: string;
  osId: string;
  deviceType: string;
  deviceTypeId: string;
  weight: number;
}

const device = (
  model: string | null, brand: string | null, brandId: string, os: string, osId: string,
  deviceType: string, deviceTypeId: string, weight: number,
): Device => ({ model, brand, brandId, os, osId, deviceType, deviceTypeId, weight });

export const DEVICES: readonly Device[] = [
  device('iPhone 15', 'Apple', '1', 'iOS', '1', 'phone', '1', 8),
  device('iPhone 13', 'Apple', '1', 'iOS', '1', 'phone', '1', 5),
  device('iPad Air', 'Apple', '1', 'iOS', '1', 'tablet', '2', 2),
  device('Galaxy S24', 'Samsung', '2', 'Android', '2', 'phone', '1', 6),
  device('Galaxy Tab S9', 'Samsung', '2', 'Android', '2', 'tablet', '2', 1),
  device('Pixel 8', 'Google', '3', 'Android', '2', 'phone', '1', 2),
  device('Redmi Note 13', 'Xiaomi', '4', 'Android', '2', 'phone', '1', 3),
  device(null, null, '0', 'Android', '2', 'phone', '1', 1),
];

export interface Named {
  id: string;
  name: string;
}

export const FORMATS: readonly Named[] = [
  { id: '1', name: 'interstitial' },
  { id: '2', name: 'banner' },
  { id: '3', name: 'native' },
  { id: '4', name: 'rewarded video' },
];

export const AD_NETWORKS: readonly Named[] = [
  { id: '10', name: 'Core Exchange' },
  { id: '11', name: 'Helios Ads' },
  { id: '12', name: 'Mistral Network' },
];

export interface Advertiser {
  id: string;
  name: string;
  billingEntity: string;
}

const ADVERTISERS: readonly Advertiser[] = [
  { id: '501', name: 'Maison Lumière', billingEntity: 'Lumière SAS' },
  { id: '502', name: 'Café "Le Zinc"', billingEntity: 'Le Zinc SARL' },
  { id: '503', name: 'Nordic Outdoor AB', billingEntity: 'Nordic Outdoor AB' },
  { id: '504', name: 'Yummy Foods, Inc.', billingEntity: 'Yummy Foods, Inc.' },
  { id: '505', name: 'Électro Dépôt', billingEntity: 'Électro Dépôt France' },
  { id: '506', name: 'Smile 😀 Dental', billingEntity: 'Smile Dental Group' },
];

export interface App {
  publisherId: string;
  publisher: string;
  appId: string;
  appName: string;
  appOwner: string;
  bundleId: string;
  platform: string;
  platformId: string;
  zones: readonly string[];
  subPublishers: readonly (string | null)[];
  weight: number;
}

const app = (
  publisherId: string, publisher: string, appId: string, appName: string, appOwner: string,
  bundleId: string, platform: 'ios' | 'android', zones: string[], subPublishers: (string | null)[], weight: number,
): App => ({
  publisherId, publisher, appId, appName, appOwner, bundleId, platform,
  platformId: platform === 'ios' ? '1' : '2', zones, subPublishers, weight,
});

export const APPS: readonly App[] = [
  app('301', 'Presse Numérique', '9001', 'Le Quotidien', 'Presse Numérique SA', 'fr.lequotidien.app', 'ios', ['a1f3c9e2', 'b7d01e44'], ['sp-11', null], 5),
  app('301', 'Presse Numérique', '9002', 'Le Quotidien', 'Presse Numérique SA', 'fr.lequotidien.android', 'android', ['c2e8a0f1'], ['sp-11', 'sp-12'], 5),
  app('302', 'Météo & Co', '9003', 'Météo ☀️ Live', 'Météo & Co', 'com.meteoco.live', 'android', ['d4a6b3c0', 'e9f2d7a8'], [null], 4),
  app('303', 'Puzzle Forge', '9004', 'Block Puzzle: "Classic"', 'Puzzle Forge Ltd', 'com.puzzleforge.blocks', 'ios', ['f0b1c2d3'], ['sp-31', 'sp-32'], 6),
  app('303', 'Puzzle Forge', '9005', 'Word Hunt, Daily', 'Puzzle Forge Ltd', 'com.puzzleforge.words', 'android', ['a9b8c7d6', '1e2d3c4b'], ['sp-31'], 3),
  app('304', 'Rando Sports', '9006', 'Trail\nRunner', 'Rando Sports', 'fr.rando.trailrunner', 'android', ['5f6e7d8c'], [null], 2),
  app('305', 'Kiosque Digital', '9007', 'Recettes de Mamie', 'Kiosque Digital', 'fr.kiosque.recettes', 'ios', ['9a8b7c6d'], ['sp-51', null], 3),
];

export const EXCHANGE_BUYERS: readonly Named[] = [
  { id: '701', name: 'DSP Alpha' },
  { id: '702', name: 'DSP Beta' },
  { id: '703', name: 'Trading Desk Gamma' },
];
export const DEALS: readonly Named[] = [
  { id: 'deal-2026-a', name: 'Premium FR' },
  { id: 'deal-2026-b', name: 'Gaming EU' },
];
export const DMPS: readonly (Named & { sourceId: string })[] = [
  { id: '801', name: 'Audience Lab', sourceId: '8011' },
  { id: '802', name: 'Segment Hub', sourceId: '8021' },
];

export interface AdUnit {
  adunitId: string;
  adunitName: string;
  creativeId: string;
  limitType: string;
  limitValue: string;
  formatId: string;
}

export interface Campaign {
  campaignId: string;
  campaignName: string;
  advertiser: Advertiser;
  /** Unix seconds, inclusive */
  start: number;
  end: number;
  adunits: AdUnit[];
}

const CAMPAIGN_THEMES = [
  'Always-on "Marque", FR', 'Soldes d\'hiver', 'Spring, "Fresh" Launch', 'Summer Sale', 'Rentrée', 'Black Friday',
  'Noël 🎄', 'Retargeting',
];
const ADUNIT_KINDS = ['Banner 320x50', 'Interstitial', 'Native card ✨', 'Rewarded video', 'Banner 300x250\nAlt copy'];
const LIMIT_TYPES = ['impressions', 'budget', 'none'];

/** Campaign slots per calendar year; slot 0 is an always-on campaign covering the whole year, so
 * every instant of every year has buyer data. */
const CAMPAIGNS_PER_YEAR = 8;

/** The campaigns of a Paris calendar year: a pure function of (seed, year). */
export function campaignsOfYear(seed: number, year: number): Campaign[] {
  const yearStart = DateTime.fromObject({ year, month: 1, day: 1 }, { zone: PARIS });
  const yearEnd = yearStart.endOf('year');
  const campaigns: Campaign[] = [];
  for (let slot = 0; slot < CAMPAIGNS_PER_YEAR; slot++) {
    const h = hash(seed, 0xca, year, slot);
    const theme = CAMPAIGN_THEMES[slot % CAMPAIGN_THEMES.length] as string;
    const advertiser = pick(ADVERTISERS, hash(seed, 0xad, year, slot));
    let start = yearStart;
    let end = yearEnd;
    if (slot !== 0) {
      const startDay = Math.floor(unit(h) * 300);
      const lengthDays = 20 + (hash(seed, 0x1e, year, slot) % 90);
      start = yearStart.plus({ days: startDay });
      end = DateTime.min(start.plus({ days: lengthDays }).minus({ seconds: 1 }), yearEnd);
    }
    const campaignId = String(year * 100 + slot + 1);
    const unitCount = 1 + (hash(seed, 0xac, year, slot) % 4);
    const adunits: AdUnit[] = [];
    for (let u = 0; u < unitCount; u++) {
      const hu = hash(seed, 0xa0, year, slot, u);
      const kind = pick(ADUNIT_KINDS, hu);
      adunits.push({
        adunitId: `${campaignId}${String(u + 1).padStart(2, '0')}`,
        adunitName: `${theme} ${year} – ${kind}`,
        creativeId: `cr-${(hu % 0xfffff).toString(16).padStart(5, '0')}`,
        limitType: pick(LIMIT_TYPES, hu >>> 3),
        limitValue: String(1000 * (1 + (hu % 50))),
        formatId: pick(FORMATS, hu >>> 7).id,
      });
    }
    campaigns.push({
      campaignId,
      campaignName: `${theme} ${year}`,
      advertiser,
      start: start.toSeconds(),
      end: Math.floor(end.toSeconds()),
      adunits,
    });
  }
  return campaigns;
}

/** Years listed by GET /campaigns (reports cover every year; the list has to stop somewhere). */
export const LISTED_YEARS = { from: 2024, to: 2028 };
