// Every command, in one table: its arguments and flags (declared for help, completion and
// parsing: data only), how commander's parse becomes the command's typed options, and `load`, the
// ONE lazy boundary: a command's module, and what it needs, load only when that command runs, so
// `--help` stays fast.

import { Option, type Command } from 'commander';
import type { CampaignsOptions } from '../commands/campaigns.js';
import type { CompletionOptions } from '../commands/completion.js';
import type { DownloadOptions } from '../commands/download.js';
import type { JobsOptions } from '../commands/jobs.js';
import type { LoginOptions } from '../commands/login.js';
import type { LogoutOptions } from '../commands/logout.js';
import type { ProfilesOptions } from '../commands/profiles.js';
import type { ReportOptions } from '../commands/report.js';
import type { RunOptions } from '../commands/run.js';
import type { SandboxCommandOptions } from '../commands/sandbox.js';
import type { SchemaOptions } from '../commands/schema.js';
import type { StateOptions } from '../commands/state.js';
import type { StatusOptions } from '../commands/status.js';
import type { WhoamiOptions } from '../commands/whoami.js';
import type { Shell } from '../completion/scripts.js';
import { CAMPAIGNS_FORMATS, type CampaignsFormat } from '../export/output.js';
import type { Factory } from '../factory.js';
import { SIDES, type Side } from '../report/catalog.js';
import { COLUMN_CASES, type ColumnCase } from '../report/column-case.js';
import { SCHEMA_FORMATS, type SchemaFormat } from '../report/schema.js';
import { BOUNDS } from '../duration.js';
import { loadYoungGeneration } from '../io/young-generation.js';
import { EXIT_CODES_HELP } from './exit.js';
import { UsageError } from '../errors.js';
import { MALFORMED, REPORT_STATUSES, parseBodyFault, parseErrorFault, type BodyFault, type ErrorFault, type Malformed } from '../sandbox/faults.js';
import type { Layout } from '../sandbox/server.js';
import { choiceArgument, choiceOption, count, duration, htmlFile, list, path } from './flags.js';
import { runParser } from './run-words.js';
import { parseShard } from '../fleet/shard.js';
import {
  addFlags, chunkFlagsOf, jobFlagsOf, loadFlagsOf, logFormatOption, outputFlags, outputFlagsOf, reportFlags, reportFlagsOf, runFlags, stateFile, stateKey, waitFlags, waitFlagsOf, type Parsed,
} from './options.js';

export interface CommandModule<O> {
  run(opts: O, f: Factory): Promise<void>;
}

export interface Entry<O> {
  name: string;
  summary: string;
  hidden?: boolean;
  /** sends no request: its help leaves out the credentials and network options */
  local?: boolean;
  /** the program's flags it refuses (`jobs run --profile`): its help leaves them out */
  refuses?: readonly string[];
  /** arguments, options and help text */
  define(command: Command): void;
  /** the command's typed options from commander's parse: its arguments and its own flags */
  options(args: string[], parsed: Parsed, command: Command): O;
  load(): Promise<CommandModule<O>>;
  /** the bound on V8's young generation the command holds from before its modules load, if any
   * (io/young-generation.ts): they grew it from 2 to 16 MiB on Node 24 */
  youngGeneration?(opts: O, env: Record<string, string | undefined>): number | undefined;
}

/** An entry with its options type erased, so entries of every command share one array. */
export type AnyEntry = Entry<unknown>;
const entry = <O>(e: Entry<O>): AnyEntry => e as unknown as AnyEntry;

/** A command made of subcommands (`state show|forget|unlock`), each an entry of its own. */
export interface Group {
  name: string;
  summary: string;
  /** as an entry's: for the group and every subcommand */
  local?: boolean;
  /** the program's flags the group's help leaves out (its subcommands say their own) */
  refuses?: readonly string[];
  /** help text of the group */
  define?(command: Command): void;
  subcommands: AnyEntry[];
}

const examples = (...lines: string[]) => `\nExamples:\n${lines.map((line) => `  ${line}`).join('\n')}`;
const SHELLS: readonly Shell[] = ['bash', 'zsh', 'fish'];

function reportEntry(side: Side, example: string): AnyEntry {
  return entry<ReportOptions>({
    name: side,
    summary: `submit a ${side} report request; print its report ID`,
    define(command) {
      addFlags(command, reportFlags([side])).addHelpText('after', examples(
        example,
        `id=$(reporting ${side} --since yesterday --until yesterday)`,
        'reporting download "$id" --wait -o out.csv',
        `reporting ${side} --since -7d --until today --json`,
      ));
    },
    options: (_args, parsed) => ({ side, report: reportFlagsOf(parsed) }),
    load: () => import('../commands/report.js'),
  });
}

/** `jobs run|list|validate`: a job file, and which of its jobs. */
function jobsEntry(action: JobsOptions['action'], summary: string, selects: boolean): AnyEntry {
  return entry<JobsOptions>({
    name: action,
    summary,
    local: action !== 'run' && action !== 'plan',
    // each job names its profile in the file: --profile is refused (run, plan) or means nothing
    refuses: ['--profile'],
    define(command) {
      command.option('-f, --file <file>', 'the job file (else REPORTING_JOBS, else reporting.yaml)', path);
      if (selects) {
        command
          .argument('[name...]', 'job names or globs (buyer-*, *@acme); default: every job')
          .option('--exclude <name>', 'leave out these jobs (names or globs, comma-separated, repeatable)', list)
          .option('--shard <K/N>', "only shard K of N (a stable hash of each job's name; else JOB_COMPLETION_INDEX + 1 of REPORTING_SHARDS)", (text: string) => parseShard(text));
      }
      // the run's own lines (its summary, the retry commands, its error), and each job's unless it sets its own
      if (action === 'run') {
        command.addOption(logFormatOption())
          .option('--lock-wait <duration>', 'wait up to DURATION for a state\'s lock held by another run, for every job (over the file\'s lock-wait)', duration('--lock-wait', BOUNDS.lockWait))
          .option('--full-refresh', 'every job that keeps a state or loads a table starts it over (as full-refresh: true in each); the others fetch their period as always')
          .option('--metrics-file <path>', 'write what each job did in Prometheus\' text format (node_exporter\'s textfile collector), replaced whole at the end');
      }
      if (action === 'status') {
        command.option('--max-lag <duration>', 'exit 1 when a job\'s last window done ended longer ago than DURATION (e.g. 36h), or none is', duration('--max-lag', BOUNDS.maxLag))
          .option('--html <file>', 'also write a page of the jobs by day, up to the last 31: done, unchanged, failed, missing, in progress; self-contained, printable', htmlFile);
      }
    },
    options: (args, parsed, command) => ({
      action,
      file: parsed.file as string | undefined,
      names: selects ? ((command.processedArgs[0] as string[] | undefined) ?? []) : [],
      exclude: (parsed.exclude as string[] | undefined) ?? [],
      shard: parsed.shard as JobsOptions['shard'],
      logFormat: parsed.logFormat as JobsOptions['logFormat'],
      maxLagMs: parsed.maxLag as number | undefined,
      metricsFile: parsed.metricsFile as string | undefined,
      lockWaitMs: parsed.lockWait as number | undefined,
      fullRefresh: parsed.fullRefresh === true,
      html: parsed.html as string | undefined,
      parser: runParser(REGISTRY.find((e) => e.name === 'run') as AnyEntry),
    }),
    load: () => import('../commands/jobs.js'),
  });
}

export const REGISTRY: (AnyEntry | Group)[] = [
  entry<LoginOptions>({
    name: 'login',
    summary: 'store a token for a profile: a console token, or email and password',
    define(command) {
      command
        .addOption(new Option('--token-stdin', 'read a console token from standard input').conflicts('email'))
        .option('--email <email>', 'log in with email and password (POST /auth-reporting)')
        .option('--password-stdin', 'with --email: read the password from standard input (else REPORTING_PASSWORD, else a prompt)')
        .option('--no-verify', 'store a console token without checking it against the API (offline)')
        .addHelpText('after', examples(
          'pbpaste | reporting login --token-stdin --base-url https://api.example.com',
          'reporting login --email me@example.com --base-url https://api.example.com',
          'reporting login --profile staging --email me@example.com --password-stdin < password.txt',
        ));
    },
    options: (_args, parsed) => ({
      tokenStdin: Boolean(parsed.tokenStdin),
      email: parsed.email as string | undefined,
      passwordStdin: Boolean(parsed.passwordStdin),
      verify: parsed.verify !== false,
    }),
    load: () => import('../commands/login.js'),
  }),
  entry<LogoutOptions>({
    name: 'logout',
    summary: "forget the profile's token (its base URL is kept)",
    define(command) {
      command.addHelpText('after', examples('reporting logout', 'reporting logout --profile staging'));
    },
    options: () => ({}),
    load: () => import('../commands/logout.js'),
  }),
  entry<WhoamiOptions>({
    name: 'whoami',
    summary: 'show the active profile, base URL and whether a token is stored (never the token)',
    define(command) {
      command.addHelpText('after', examples('reporting whoami', 'reporting whoami --profile staging --json'));
    },
    options: () => ({}),
    load: () => import('../commands/whoami.js'),
  }),
  reportEntry('buyer', 'reporting buyer --since 2026-11-01 --until 2026-11-20 --breakdowns DAILY,CAMPAIGN'),
  reportEntry('seller', 'reporting seller --since yesterday --until yesterday --breakdowns HOURLY,APP --app-id 9001'),
  entry<StatusOptions>({
    name: 'status',
    summary: "print a report's status; --wait polls until it is ready",
    define(command) {
      command.argument('<id>', 'report ID').option('--wait', 'poll until the report is ready (exit 6 if it fails or --max-wait passes)');
      addFlags(command, waitFlags('the report')).addHelpText('after', `
A status other than progress or ready means the report failed: exit 6.
${examples(
    'reporting status 87a72010101115',
    'reporting status 87a72010101115 --wait --max-wait 10m',
    'reporting status 87a72010101115 --json | jq -r .status',
  )}`);
    },
    options: ([id], parsed) => ({ id: id as string, waitForIt: Boolean(parsed.wait), wait: waitFlagsOf(parsed) }),
    load: () => import('../commands/status.js'),
  }),
  entry<DownloadOptions>({
    name: 'download',
    summary: 'download a ready report to a file or stdout (--wait polls first)',
    define(command) {
      command.argument('<id>', 'report ID').option('--wait', 'poll until the report is ready, then download');
      addFlags(command, outputFlags('download', ['reportId']))
        .option('--state <file>', 'the state file of the run that submitted the report: its columns and column case are written (read only)')
        .option('--no-validate', 'accept --columns names that are no row field of either side');
      addFlags(command, waitFlags('the report')).addHelpText('after', `
-o takes the placeholder {reportId}; {side}, {since} and {until} are known to \`run\` only.
${examples(
    'reporting download 87a72010101115 -o report.csv',
    'reporting download 87a72010101115 --wait --format ndjson > rows.ndjson',
    'reporting download 87a72010101115 --json | jq .summary',
  )}`);
    },
    options: ([id], parsed) => ({
      id: id as string, waitForIt: Boolean(parsed.wait), output: outputFlagsOf(parsed), wait: waitFlagsOf(parsed), validate: parsed.validate !== false,
      state: parsed.state as string | undefined,
    }),
    load: () => import('../commands/download.js'),
  }),
  entry<RunOptions>({
    name: 'run',
    summary: 'submit a report, wait for it, download it and write CSV, JSON, NDJSON, Parquet or XLSX',
    define(command) {
      command.addArgument(choiceArgument('<side>', 'buyer or seller', SIDES, (text) => `unknown side "${text}"`));
      addFlags(command, runFlags()).addHelpText('after', examples(
        'reporting run buyer --since yesterday --until yesterday --breakdowns DAILY,COUNTRY -o nightly.csv',
        'reporting run buyer --since -7d --until yesterday --breakdowns DAILY -o week.csv -o week.parquet',
        'reporting run seller --since 2026-11-01 --until 2026-11-20 --breakdowns DAILY,APP \\',
        "  -o 'exports/{side}-{since}-{until}.csv'",
        "reporting run buyer --since -7d --until yesterday --json | jq '.data | length'",
        'reporting run buyer --since 2026-01-01 --until 2026-06-30 --breakdowns DAILY --chunk week -o h.csv',
        "reporting run buyer --since -90d --until yesterday --breakdowns DAILY --chunk day -o '{since}.csv'",
        "reporting run buyer --since auto --until yesterday --lookback 3d --chunk day --breakdowns DAILY \\",
        "  -o 'buyer/{since}.csv' --state buyer.state.json --log-format json",
        "reporting run buyer --since auto --until yesterday --lookback 3d --breakdowns DAILY,COUNTRY \\",
        "  --state buyer.state.json --load duckdb:warehouse.duckdb --table buyer_daily",
      ) + EXIT_CODES_HELP);
    },
    options: ([side], parsed, command) => ({
      side: side as Side,
      report: reportFlagsOf(parsed),
      output: outputFlagsOf(parsed),
      wait: waitFlagsOf(parsed),
      chunk: chunkFlagsOf(parsed, command),
      jobs: jobFlagsOf(parsed),
      plan: Boolean(parsed.plan),
      load: loadFlagsOf(parsed),
      // commander keeps the words as typed (node and the script first) on the program
      argv: (command.parent as unknown as { rawArgs: string[] }).rawArgs.slice(2),
    }),
    load: () => import('../commands/run.js'),
    // a load: from here on, as the DuckDB connection will (load/duckdb.ts)
    youngGeneration: (opts, env) => loadYoungGeneration(opts.load?.load ?? env.REPORTING_LOAD),
  }),
  {
    name: 'jobs',
    summary: 'run many reports of many accounts from a job file (reporting.yaml): run, plan, list, validate, status',
    refuses: ['--profile'],
    define(command) {
      command.addHelpText('after', examples(
        'reporting jobs validate',
        'reporting jobs plan --json',
        'reporting jobs run',
        "reporting jobs run 'buyer-*' --exclude '*@globex' -f nightly.yaml",
        'reporting jobs list --json',
        'reporting jobs run --shard 2/5',
        'reporting jobs status --max-lag 36h',
      ));
    },
    subcommands: [
      jobsEntry('run', 'run the jobs of the file (or those named): one process, a shared budget of reports at once', true),
      jobsEntry('plan', 'print what jobs run would do: per job, the windows to fetch, resume or skip, and why; sends no request', true),
      jobsEntry('list', 'print the expanded job names, one a line (--json: an array), sending no request', true),
      jobsEntry('validate', 'check the job file as `run` would check each job, sending no request (exit 0 or 2)', false),
      jobsEntry('status', 'print each job\'s state: last window done, its lag, windows failed or to fetch, the last run, the lock (exit 1 beyond --max-lag)', true),
    ],
  },
  {
    name: 'state',
    local: true,
    summary: "look at a run's state file, forget windows so the next run fetches them again, remove a dead run's lock",
    define(command) {
      command.addHelpText('after', examples(
        'reporting state show buyer.state.json',
        'reporting state forget buyer.state.json 2026-11-03 2026-11-10..2026-11-12',
        'reporting state unlock buyer.state.json',
      ));
    },
    subcommands: [
      entry<StateOptions>({
        name: 'show',
        summary: 'print the request recorded and every window: period, status, report ID, attempts, rows, file, error',
        define(command) {
          command.addArgument(stateFile()).addOption(stateKey()).addHelpText('after', `
Read-only: takes no lock (a run may be writing it: stderr says so). --json prints the windows as
the file records them.
${examples(
    'reporting state show buyer.state.json',
    'reporting state show buyer.state.json --json | jq -r \'.[] | select(.status == "failed") | .since\'',
  )}`);
        },
        options: ([file], parsed) => ({ action: 'show', file: file as string, key: parsed.key as string | undefined }),
        load: () => import('../commands/state.js'),
      }),
      entry<StateOptions>({
        name: 'forget',
        summary: 'forget what is recorded for windows, so that the next run fetches them again',
        define(command) {
          command
            .addArgument(stateFile())
            .addOption(stateKey())
            .argument('<window...>', 'a Paris date (the windows starting that day), a range DATE..DATE, or all')
            .addHelpText('after', `
Takes the state file's lock (exit 2 while a run holds it). The files written for those windows are
left as they are: the next run covering them writes them again.
${examples(
    'reporting state forget buyer.state.json 2026-11-03',
    'reporting state forget buyer.state.json 2026-11-01..2026-11-07 2026-11-20',
    'reporting state forget buyer.state.json all',
  )}`);
        },
        options: ([file], parsed, command) => ({ action: 'forget', file: file as string, key: parsed.key as string | undefined, windows: command.processedArgs[1] as string[] }),
        load: () => import('../commands/state.js'),
      }),
      entry<StateOptions>({
        name: 'unlock',
        summary: "remove the state file's lock when the run holding it is gone (naming it)",
        define(command) {
          command
            .addArgument(stateFile())
            .addOption(stateKey())
            .option('--force', 'also remove a lock of another host touched in the last 5 minutes, or one this tool did not write')
            .addHelpText('after', `
A holder on this host is gone when its PID is not running; one of another host, once its lock is
untouched for 5 minutes (the next run takes such a lock over by itself). A running holder is
never removed: exit 2, naming it.
${examples(
    'reporting state unlock buyer.state.json',
    'reporting state unlock /mnt/shared/buyer.state.json --force',
  )}`);
        },
        options: ([file], parsed) => ({ action: 'unlock', file: file as string, key: parsed.key as string | undefined, force: Boolean(parsed.force) }),
        load: () => import('../commands/state.js'),
      }),
    ],
  },
  entry<CampaignsOptions>({
    name: 'campaigns',
    summary: 'list campaigns and their ad units: a table, --json, or --format csv',
    define(command) {
      command
        .optionsGroup('Output options:')
        .addOption(choiceOption('--format <format>', 'csv: one row per ad unit; default: from -o\'s extension, else table', CAMPAIGNS_FORMATS, 'format for campaigns'))
        .option('-o, --output <file>', 'write to FILE (atomically) instead of stdout', path)
        .addHelpText('after', examples(
          'reporting campaigns',
          "reporting campaigns --json | jq -r '.[] | select(.adunits | length > 2) | .campaignName'",
          'reporting campaigns --format csv -o campaigns.csv',
        ));
    },
    options: (_args, parsed) => ({ format: parsed.format as CampaignsFormat | undefined, output: parsed.output as string | undefined }),
    load: () => import('../commands/campaigns.js'),
  }),
  entry<SchemaOptions>({
    name: 'schema',
    local: true,
    summary: 'print the typed columns of an export: a table, a JSON Schema or a CREATE TABLE',
    define(command) {
      command
        .addArgument(choiceArgument('<side>', 'buyer or seller', SIDES, (text) => `unknown side "${text}"`))
        .option('--metrics <list>', 'metrics, comma-separated, repeatable (default: every metric of the side)', list)
        .option('--breakdowns <list>', 'breakdowns, comma-separated, repeatable', list)
        .option('--columns <list>', 'as the export\'s: `requested` (the default: date, the breakdowns\' fields, the metrics), `all` (every field of a row), or field names (comma-separated, repeatable)', list)
        .addOption(choiceOption('--as <format>', 'what to print', SCHEMA_FORMATS, 'schema format').default('table'))
        .option('--table <name>', 'table name for CREATE TABLE (default: <side>_report)')
        .option('--for-load', 'with --as duckdb or postgres: the CREATE TABLE that run --load runs, its metadata columns included')
        .addOption(choiceOption('--column-case <case>', 'the columns\' names, as the export\'s: camel, as the API sends them (the default), or snake, as in revenue_euro', COLUMN_CASES, 'column case'))
        .addHelpText('after', examples(
          'reporting schema buyer --breakdowns DAILY,COUNTRY',
          'reporting schema buyer --breakdowns DAILY,COUNTRY --metrics clicks --as bigquery --table daily',
          'reporting schema buyer --breakdowns DAILY,COUNTRY --columns all --as duckdb',
          'reporting schema buyer --breakdowns DAILY,COUNTRY --as postgres --for-load --table ads.buyer_daily',
          'reporting schema buyer --breakdowns DAILY,REGION --as postgres --for-load --column-case snake',
          'reporting schema seller --breakdowns HOURLY,APP --as json-schema > row.schema.json',
        ));
    },
    options: ([side], parsed) => ({
      side: side as Side,
      metrics: (parsed.metrics as string[] | undefined) ?? [],
      breakdowns: (parsed.breakdowns as string[] | undefined) ?? [],
      columns: parsed.columns as string[] | undefined,
      as: parsed.as as SchemaFormat,
      table: parsed.table as string | undefined,
      forLoad: Boolean(parsed.forLoad),
      columnCase: parsed.columnCase as ColumnCase | undefined,
    }),
    load: () => import('../commands/schema.js'),
  }),
  entry<SandboxCommandOptions>({
    name: 'sandbox',
    local: true,
    summary: 'run a local emulator of the Reporting API (for trying the CLI and testing scripts)',
    define(command) {
      const fault = <T>(parse: (text: string) => T) => (text: string): T => {
        try {
          return parse(text);
        } catch (error) {
          throw new UsageError((error as Error).message);
        }
      };
      command
        .option('--port <port>', 'port to listen on; 0 picks a free one', count('--port', 0, 65535), 8787)
        .option('--host <host>', 'address to listen on', '127.0.0.1')
        .option('--seed <n>', 'seed of the synthetic data', count('--seed', 0, Number.MAX_SAFE_INTEGER), 42)
        .option('--accounts <n>', 'N accounts, each with its own login, token, reports and data, printed at start', count('--accounts', 1, 100), 1)
        .option('--delay <duration>', 'how long a report stays in progress (default 1s; with --work, the least, 0 by default)', duration('--delay', BOUNDS.sandboxDelay))
        .option('--work <duration>', 'work model: time in progress per day of period (+10% per breakdown but RANGE, DAILY, MONTHLY)', duration('--work', BOUNDS.sandboxWork))
        .option('--max-running <n>', 'answer 429 with Retry-After to submits beyond N reports in progress per token', count('--max-running', 1, 10_000))
        .option('--fail-over-days <n>', 'reports touching more than N days end in failed ("too much data")', count('--fail-over-days', 1, 100_000))
        .option('--restate <duration>', 'numbers of the days within DURATION before now change with every submission (e.g. 3d)', duration('--restate', BOUNDS.sandboxSpan))
        .option('--report-ttl <duration>', 'forget report IDs this long after submission (status and download answer 404)', duration('--report-ttl', BOUNDS.sandboxSpan))
        .option('--now <instant>', 'the sandbox clock starts at this instant, then runs (ISO 8601 or Unix seconds, as REPORTING_NOW): today for --restate, --report-ttl')
        .option('--latency <duration>', 'fault: delay before every answer', duration('--latency', BOUNDS.sandboxLatency))
        .option('--error <spec>', 'fault: STATUS[,endpoint=NAME][,first=N|,rate=R][,retry-after=S][,html] (repeatable)',
          (text: string, previous: ErrorFault[] = []) => [...previous, fault(parseErrorFault)(text)])
        .option('--reset-download <spec>', 'fault: BYTES[,times=N]: reset the connection after BYTES of a download', fault((text) => parseBodyFault(text, '--reset-download')))
        .option('--stall-download <spec>', 'fault: BYTES[,times=N]: go silent after BYTES of a download', fault((text) => parseBodyFault(text, '--stall-download')))
        .option('--token-uses <n>', 'fault: tokens expire after N uses', count('--token-uses', 1, Number.MAX_SAFE_INTEGER))
        .addOption(choiceOption('--report-status <status>', 'fault: reports end in this status instead of ready', REPORT_STATUSES, 'report status'))
        .addOption(choiceOption('--malformed <kind>', 'fault: answer malformed JSON', MALFORMED, 'kind'))
        .option('--scale <rows>', 'every download returns this many rows, streamed', count('--scale', 0, Number.MAX_SAFE_INTEGER))
        .addOption(choiceOption('--layout <layout>', 'JSON layout of downloads', ['compact', 'pretty', 'summary-first'], 'layout').default('compact'))
        .addHelpText('after', examples(
          'reporting sandbox',
          'reporting sandbox --port 0 --json',
          'reporting sandbox --error 503,endpoint=download,first=2 --token-uses 5',
          'reporting sandbox --scale 1000000 --delay 200ms',
          'reporting sandbox --work 0.5s --max-running 8 --fail-over-days 31',
          'reporting sandbox --restate 3d --report-ttl 1h --now 2026-11-21T06:00:00+01:00',
          'reporting sandbox --accounts 3 --port 0 --json',
        ));
    },
    options: (_args, parsed) => ({
      port: parsed.port as number,
      host: parsed.host as string,
      seed: parsed.seed as number,
      accounts: parsed.accounts as number,
      delayMs: parsed.delay as number | undefined,
      latencyMs: parsed.latency as number | undefined,
      errors: (parsed.error as ErrorFault[] | undefined) ?? [],
      resetDownload: parsed.resetDownload as BodyFault | undefined,
      stallDownload: parsed.stallDownload as BodyFault | undefined,
      tokenUses: parsed.tokenUses as number | undefined,
      reportStatus: parsed.reportStatus as string | undefined,
      malformed: parsed.malformed as Malformed | undefined,
      scaleRows: parsed.scale as number | undefined,
      layout: parsed.layout as Layout,
      workMsPerDay: parsed.work as number | undefined,
      maxRunning: parsed.maxRunning as number | undefined,
      failOverDays: parsed.failOverDays as number | undefined,
      restateMs: parsed.restate as number | undefined,
      reportTtlMs: parsed.reportTtl as number | undefined,
      now: parsed.now as string | undefined,
    }),
    load: () => import('../commands/sandbox.js'),
  }),
  entry<CompletionOptions>({
    name: 'completion',
    local: true,
    summary: 'print a shell completion script (bash, zsh or fish)',
    define(command) {
      command
        .addArgument(choiceArgument('<shell>', 'bash, zsh or fish', SHELLS, (text) => `no completion for the shell "${text}"`))
        .addHelpText('after', examples(
          'source <(reporting completion bash)                                  # in ~/.bashrc',
          'reporting completion zsh > "${fpath[1]}/_reporting"                  # then restart zsh',
          'reporting completion fish > ~/.config/fish/completions/reporting.fish',
        ));
    },
    options: ([shell], _parsed, command) => ({ shell: shell as Shell, program: command.parent as Command }),
    load: () => import('../commands/completion.js'),
  }),
  entry<ProfilesOptions>({
    name: '__profiles',
    summary: 'profile names, for completion scripts',
    hidden: true,
    define() {},
    options: () => ({}),
    load: () => import('../commands/profiles.js'),
  }),
];
