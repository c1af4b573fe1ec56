// `campaigns`: campaigns and their ad units, as a table on a terminal, JSON, or CSV (one row per ad unit).

import { stringify } from 'csv-stringify/sync';
import { configDir, refuseTokenStore } from '../auth/store.js';
import { checkObjectTarget, isObjectUrl, ObjectSink } from '../destinations/objects.js';
import { CAMPAIGNS_FORMATS, chooseFormat, type CampaignsFormat } from '../export/output.js';
import { checkWritableTarget, openFileSink, stdoutSink } from '../export/sink.js';
import type { Factory } from '../factory.js';
import { table } from '../io/table.js';

export type { CampaignsFormat } from '../export/output.js';

export interface CampaignsOptions {
  format?: CampaignsFormat;
  output?: string;
}

export async function run(options: CampaignsOptions, f: Factory): Promise<void> {
  // -o s3://BUCKET/KEY: an object in a bucket (docs/object-storage.md)
  const objects = { env: f.env, configDir: configDir(f.env, f.host.platform), host: f.host, trace: f.trace };
  if (options.output && isObjectUrl(options.output)) await checkObjectTarget(options.output, objects);
  else if (options.output && options.output !== '-') {
    refuseTokenStore(options.output, f.cwd, f.env, f.host.platform);
    checkWritableTarget(options.output, f.cwd);
  }
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

  const sink = !options.output || options.output === '-' ? stdoutSink(f.stdout)
    : isObjectUrl(options.output) ? await ObjectSink.open(options.output, objects, format, false)
    : await openFileSink(options.output, f);
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
