import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { GlobalOptions } from '../cli.js';
import type { CommandSpec } from './index.js';
import { optionsOf } from './options.js';

export interface CampaignsOptions {
  format?: string;
  output?: string;
}

export const campaignsCommand: CommandSpec = {
  name: 'campaigns',
  summary: 'list campaigns and their ad units: a table, --json, or --format csv',
  define(command: Command, ctx: Context) {
    command
      .optionsGroup('Output options:')
      .option('--format <format>', 'table, json or csv (one row per ad unit); default: from -o\'s extension, else table')
      .option('-o, --output <file>', 'write to FILE (atomically) instead of stdout')
      .addHelpText('after', `
Examples:
  reporting campaigns
  reporting campaigns --json | jq -r '.[] | select(.adunits | length > 2) | .campaignName'
  reporting campaigns --format csv -o campaigns.csv`)
      .action(async (_options: CampaignsOptions, cmd: Command) => run(optionsOf<CampaignsOptions>(cmd), ctx));
  },
};

const FORMATS = ['table', 'json', 'csv'] as const;
type Format = (typeof FORMATS)[number];

export async function run(options: CampaignsOptions & GlobalOptions, ctx: Context): Promise<void> {
  const { UsageError } = await import('../errors.js');
  const { didYouMean } = await import('../suggest.js');
  let format: Format;
  if (options.json) format = 'json';
  else if (options.format) {
    const wanted = options.format.toLowerCase();
    if (!(FORMATS as readonly string[]).includes(wanted)) {
      throw new UsageError(`unknown format "${options.format}" for campaigns${didYouMean(options.format, FORMATS)}`, `choose ${FORMATS.join(', ')}`);
    }
    format = wanted as Format;
  } else if (options.output && options.output !== '-') {
    format = /\.json$/i.test(options.output) ? 'json' : 'csv';
  } else format = 'table';

  const { withSession } = await import('../session.js');
  if (options.output && options.output !== '-') (await import('../auth/store.js')).refuseTokenStore(options.output, ctx.cwd, ctx.env);
  const campaigns = await withSession(ctx, options, (session) => session.client().campaigns());

  let text: string;
  if (format === 'json') text = `${JSON.stringify(campaigns, null, ctx.stdout.isTTY && !options.output ? 2 : undefined)}\n`;
  else if (format === 'csv') {
    const { stringify } = await import('csv-stringify/sync');
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
    const { table } = await import('../io/table.js');
    text = table(
      ['CAMPAIGN', 'NAME', 'ADVERTISER', 'START', 'END', 'AD UNITS'],
      campaigns.map((c) => [c.campaignId, c.campaignName, c.advertiserName, c.campaignStartDate.slice(0, 10), c.campaignEndDate.slice(0, 10), String(c.adunits.length)]),
      ctx.stdout.isTTY ? ctx.stdout.columns : undefined,
    );
  }

  const { openFileSink, stdoutSink } = await import('../export/sink.js');
  const sink = options.output && options.output !== '-' ? await openFileSink(options.output, ctx.cwd) : stdoutSink(ctx.stdout);
  try {
    await sink.write(text);
    await sink.commit();
  } catch (error) {
    await sink.abort();
    throw error;
  }
  if (sink.path && !options.quiet) ctx.stderr.write(`Wrote ${campaigns.length} campaigns to ${sink.path}\n`);
}
