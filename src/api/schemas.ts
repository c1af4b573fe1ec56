// The contract's response shapes (reporting-api.md sections 2 and 4), as zod schemas. Extra fields
// are allowed; a missing or malformed required field is an unexpected response.

import { z } from 'zod';
import { UsageError } from '../errors.js';
import { safeText } from '../io/safe-text.js';

const id = z.union([z.string().min(1), z.number()]).transform(String);

/** The longest report ID accepted (the API's own are 14 to 24 characters). */
export const REPORT_ID_MAX = 128;

/**
 * Why `id` is not a report ID of the safe shape, or undefined when it is. A report ID ends up in
 * file names ({reportId}), in commands printed for pasting, and on the terminal, so it must be:
 * 1 to REPORT_ID_MAX printable ASCII characters, no space, no path separator (`/`, `\`), no
 * placeholder brace (`{`, `}`), not `.` or `..`, not starting with `-` (it would read as an option).
 */
function unsafeReportId(id: string): string | undefined {
  if (id.length === 0) return 'it is empty';
  if (id.length > REPORT_ID_MAX) return `it is longer than ${REPORT_ID_MAX} characters`;
  if (!/^[\x21-\x7e]+$/.test(id)) return 'it holds a space, a control character or a character outside printable ASCII';
  if (/[/\\{}]/.test(id)) return 'it holds a path separator or a brace';
  if (id === '.' || id === '..') return 'it is a relative folder name';
  if (id.startsWith('-')) return 'it starts with "-"';
  return undefined;
}

/** A report ID the user typed (`status ID`, `download ID`): a usage error unless of the safe shape. */
export function checkReportIdArgument(id: string): void {
  const why = unsafeReportId(id);
  if (why) throw new UsageError(`"${safeText(id)}" is not a report ID: ${why}`, 'a report ID is what `reporting buyer` or `reporting seller` printed');
}

/** A report ID from the server: a string (or a number) of the safe shape, else an unexpected answer. */
const reportId = id.superRefine((value, ctx) => {
  const why = unsafeReportId(value);
  if (why) ctx.addIssue({ code: 'custom', message: `not a usable report ID (${why})` });
});

/** A report ID read back from a file of ours (state file, journal): the same safe shape, since it
 * goes where the server's does (file names, printed commands, the terminal) and files get edited. */
export const storedReportId = z.string().refine((value) => unsafeReportId(value) === undefined, { message: 'not a usable report ID' });

export const authResponse = z.object({
  response: z.object({ status: z.string().optional(), token: z.string().min(1) }),
});

/** `response.report_id`, or a top-level `report_id` (SPEC section 3 asks to tolerate both). */
export const submitResponse = z
  .object({ response: z.object({ report_id: reportId.optional() }).optional(), report_id: reportId.optional() })
  .transform((value, ctx) => {
    const found = value.response?.report_id ?? value.report_id;
    if (found === undefined) {
      ctx.addIssue({ code: 'custom', path: ['response', 'report_id'], message: 'missing' });
      return z.NEVER;
    }
    return found;
  });

export const statusResponse = z
  .object({
    response: z.object({
      status: z.string().min(1),
      message: z.string().nullish(),
      report_id: reportId.optional(),
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

const adUnit = z.object({ adunitName: z.string(), adunitId: id });
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
