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
  const { chooseFormat } = await import('../export/output.js');
  // the --json rule of every command (see chooseFormat); a file without an extension is CSV
  let format: Format = chooseFormat(options, FORMATS, { json: ['.json'], csv: ['.csv'] }, 'table');
  if (format === 'table' && options.format === undefined && options.output && options.output !== '-') format = 'csv';

  const { withSession } = await import('../session.js');
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
  if (sink.path && options.json) ctx.stdout.write(`${JSON.stringify({ campaigns: campaigns.length, file: sink.path, format })}\n`);
}

/** A plain aligned table; on a narrow terminal the widest column is cut with an ellipsis. */
export function table(header: string[], rows: string[][], width?: number): string {
  const clean = (cell: string) => cell.replace(/\s+/g, ' ');
  const all = [header, ...rows.map((row) => row.map(clean))];
  const widths = header.map((_, i) => Math.max(...all.map((row) => [...(row[i] ?? '')].length)));
  if (width) {
    const total = widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
    const widest = widths.indexOf(Math.max(...widths));
    if (total > width) widths[widest] = Math.max(8, (widths[widest] ?? 0) - (total - width));
  }
  const fit = (cell: string, w: number) => {
    const chars = [...cell];
    return chars.length > w ? `${chars.slice(0, w - 1).join('')}…` : cell + ' '.repeat(w - chars.length);
  };
  return `${all.map((row) => row.map((cell, i) => fit(cell, widths[i] ?? 0)).join('  ').trimEnd()).join('\n')}\n`;
}
