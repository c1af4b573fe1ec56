// The contract's response shapes (reporting-api.md sections 2 and 4), as zod schemas. Extra fields
// are allowed; a missing or malformed required field is an unexpected response.

import { z } from 'zod';

const id = z.union([z.string().min(1), z.number()]).transform(String);

export const authResponse = z.object({
  response: z.object({ status: z.string().optional(), token: z.string().min(1) }),
});

/** `response.report_id`, or a top-level `report_id` (SPEC section 3 asks to tolerate both). */
export const submitResponse = z.union([
  z.object({ response: z.object({ report_id: id }) }).transform((value) => value.response.report_id),
  z.object({ report_id: id }).transform((value) => value.report_id),
]);

export const statusResponse = z
  .object({
    response: z.object({
      status: z.string().min(1),
      message: z.string().nullish(),
      report_id: id.optional(),
    }),
  })
  .transform((value) => value.response);
export type StatusResponse = z.infer<typeof statusResponse>;

export const errorEnvelope = z.object({
  response: z.object({
    error_id: z.union([z.string(), z.number()]).transform(String).optional(),
    error: z.string(),
  }),
});

export const adUnit = z.object({ adunitName: z.string(), adunitId: id });
export const campaign = z.object({
  advertiserId: id,
  advertiserName: z.string(),
  campaignId: id,
  campaignName: z.string(),
  campaignStartDate: z.string(),
  campaignEndDate: z.string(),
  adunits: z.array(adUnit),
});
export type Campaign = z.infer<typeof campaign>;
export const campaignsResponse = z.array(campaign);

export const summary = z.object({
  since: z.string(),
  until: z.string(),
  breakdowns: z.array(z.string()),
  timezone: z.string().optional(),
});
export type Summary = z.infer<typeof summary>;
