// GET /campaigns: every campaign of the listed years, with its ad units.

import { DateTime } from 'luxon';
import { PARIS } from '../../paris.js';
import { LISTED_YEARS } from '../entities.js';
import { sendJson } from '../http.js';
import type { Handler } from './handler.js';

const paris = (seconds: number) => DateTime.fromSeconds(seconds, { zone: PARIS }).toFormat('yyyy-MM-dd HH:mm:ss');

export const listCampaigns: Handler = (state, { req, res }) => {
  const token = state.tokens.authorize(req.headers.authorization);
  const source = state.sourceOf(state.tokens.accountOf(token));
  const list = [];
  for (let year = LISTED_YEARS.from; year <= LISTED_YEARS.to; year++) {
    for (const campaign of source.campaigns(year)) {
      list.push({
        advertiserId: campaign.advertiser.id,
        advertiserName: campaign.advertiser.name,
        campaignId: campaign.campaignId,
        campaignName: campaign.campaignName,
        campaignStartDate: paris(campaign.start),
        campaignEndDate: paris(campaign.end),
        adunits: campaign.adunits.map((unit) => ({ adunitName: unit.adunitName, adunitId: unit.adunitId })),
      });
    }
  }
  sendJson(res, 200, list);
};
