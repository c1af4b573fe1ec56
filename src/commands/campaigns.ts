// `campaigns`: campaigns and their ad units, as a table on a terminal, JSON, or CSV (one row per ad unit).

import { stringify } from 'csv-stringify/sync';
import { checkOutputNow, openOutput } from '../destinations/sinks.js';
import { outputDeps } from '../engine/download.js';
import { CAMPAIGNS_FORMATS, chooseFormat, type CampaignsFormat } from '../export/output.js';
import type { Factory } from '../factory.js';
import { table } from '../io/table.js';

export type { CampaignsFormat } from '../export/output.js';

export interface CampaignsOptions {
  format?: CampaignsFormat;
  output?: string;
}

export async function run(options: CampaignsOptions, f: Factory): Promise<void> {
  // a file, stdout (-), or an object in a bucket (-o s3://BUCKET/KEY, docs/object-storage.md)
  if (options.output) await checkOutputNow(options.output, outputDeps(f));
  // the --json rule of every command (see chooseFormat); a file without an extension is CSV
  let format = chooseFormat({ ...options, json: f.globals.json }, CAMPAIGNS_FORMATS, { json: ['.json'], csv: ['.csv'] }, 'table');
  if (format === 'table' && options.format === undefined && options.output && options.output !== '-') format = 'csv';

  const campaigns = await f.client().campaigns();

  let text: string;
  if (format === 'json') text = `${JSON.stringify(campaigns, null, f.stdout.isTTY && !options.output ? 2 : undefined)}\n`;
  else if (format === 'csv') {
    const rows = campaigns.flatMap((c) => (c.adunits.length ? c.adunits : [{ adunitId: '', adunitName: '' }]).map((unit) => ({
      advertiserId: c.advertiserId,
      advertiserName: c.advertiserName,
      campaignId: c.campaignId,
      campaignName: c.campaignName,
      campaignStartDate: c.campaignStartDate,
      campaignEndDate: c.campaignEndDate,
      adunitId: unit.adunitId,
      adunitName: unit.adunitName,
    })));
    text = stringify(rows, {
      header: true,
      columns: ['advertiserId', 'advertiserName', 'campaignId', 'campaignName', 'campaignStartDate', 'campaignEndDate', 'adunitId', 'adunitName'],
    });
  } else {
    text = table(
      ['CAMPAIGN', 'NAME', 'ADVERTISER', 'START', 'END', 'AD UNITS'],
      campaigns.map((c) => [c.campaignId, c.campaignName, c.advertiserName, c.campaignStartDate.slice(0, 10), c.campaignEndDate.slice(0, 10), String(c.adunits.length)]),
      f.stdout.isTTY ? f.stdout.columns : undefined,
      // an ID, a date or a count cut short means nothing: the names give way first
      { keep: [0, 3, 4, 5] },
    );
  }

  const { sink } = await openOutput(options.output || undefined, outputDeps(f), { format, keepUnchanged: false });
  try {
    await sink.write(text);
    await sink.commit();
  } catch (error) {
    await sink.abort();
    throw error;
  }
  if (sink.path && !f.globals.quiet) f.stderr.write(`Wrote ${campaigns.length} campaigns to ${sink.path}\n`);
  if (sink.path && f.globals.json) f.stdout.write(`${JSON.stringify({ campaigns: campaigns.length, file: sink.path, format })}\n`);
}
