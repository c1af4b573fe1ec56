// Bad input, generated: random argument vectors, option values, time expressions and environment
// values, fed to the CLI in-process. Whatever comes in: no stack trace, an exit code of the SPEC,
// and a one-line message (plus at most a hint). Generators only ever produce loopback or refused
// base URLs and output paths inside a temporary folder: no traffic leaves the machine, no file is
// written outside the test's folder.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli as main } from '../../src/cli/program.js';
import { parseTime } from '../../src/report/time.js';
import { UsageError } from '../../src/errors.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { argv, fakeContext } from '../helpers/ctx.js';
import { tempDir } from '../helpers/tmp.js';

let sandbox: Sandbox;
let dir: string;
let counted = 0;
const codes = new Map<number, number>();
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, readyDelayMs: 0, scaleRows: 5 });
  dir = tempDir('reporting-fuzz-');
});
afterAll(async () => {
  await sandbox.close();
  // nothing may have been written outside the test's folder
  expect(existsSync(join(process.cwd(), '--no-validate'))).toBe(false);
  const tally = [...codes.entries()].sort(([a], [b]) => a - b).map(([code, n]) => `exit ${code}: ${n}`).join(', ');
  console.info(`fuzzing: ${counted} generated command lines run in-process, none crashed (${tally})`);
});

const junk = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', ' ', '-', '--', '=', ',', ',,', '\u0000', 'é', '😀', '\n', '{}', '[]', 'null', 'NaN', '-1', '0', '1e309', '99999999999999999999'),
  fc.integer().map(String),
  fc.double().map(String),
);
const time = fc.oneof(
  junk,
  fc.constantFrom('now', 'today', 'yesterday', '-7d', '-0d', '-99999d', '2026-11-01', '2026-02-30', '2026-03-29T02:30', '2026-10-25T02:30',
    '2026-11-01T08:30:00Z', '2026-11-01T08:30:00+14:00', '1793487600', '1793487600000', '20261101', '2026-13-45', '9999-12-31', '0000-01-01'),
  fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  fc.integer({ min: 0, max: 4_000_000_000 }).map(String),
);
const list = fc.oneof(junk, fc.constantFrom('daily,country', 'DAILY,HOURLY', 'APP', 'displays,clicks', 'Displays', 'revenuedollar', 'nope', 'CAMPAIGN,ZONE'));
const duration = fc.oneof(junk, fc.constantFrom('0', '0s', '1ms', '50ms', '2s', '1h', '-1s', '5 m', 'soon'));
const baseUrl = fc.oneof(
  fc.constant(undefined),
  fc.constant('SANDBOX'),
  fc.constantFrom('not a url', 'http://', 'ftp://127.0.0.1', 'http://reporting.invalid', 'http://10.0.0.1:9', 'https://user:pw@127.0.0.1', 'http://127.0.0.1:1', 'http://[::1]:1'),
);
const output = fc.oneof(fc.constant(undefined), fc.constantFrom('-', 'x.csv', 'x.json', 'x.ndjson', 'x.txt', 'a/b/{side}-{since}.csv', '{nope}.csv', '{reportId}.csv'));

const option = fc.oneof(
  fc.tuple(fc.constantFrom('--since', '--until'), time),
  fc.tuple(fc.constantFrom('--metrics', '--breakdowns', '--columns'), list),
  fc.tuple(fc.constantFrom('--timeout', '--max-wait', '--poll-interval'), duration),
  fc.tuple(fc.constantFrom('--retries', '--port', '--delimiter', '--format', '--body', '--profile', '--param', '--campaign-id', '--carrier', '--publisher-id', '--app-id', '--email'), junk),
  fc.tuple(fc.constantFrom('--json', '-q', '--bom', '--excel', '--no-validate', '--wait', '--token-stdin', '--password-stdin', '--help', '-v', '--no-color', '--frobnicate'), fc.constant(undefined)),
  fc.tuple(fc.constant('--base-url'), baseUrl),
  fc.tuple(fc.constant('-o'), output),
);
const command = fc.oneof(
  fc.constantFrom('buyer', 'seller', 'run', 'status', 'download', 'campaigns', 'whoami', 'logout', 'login', 'completion', 'bogus', ''),
  junk,
);
const positional = fc.oneof(fc.constantFrom('buyer', 'seller', 'abc123', 'bash'), junk);
/** Valid command lines, to which a couple of random options are added: these reach real work. */
const valid = fc.constantFrom(
  ['campaigns'], ['campaigns', '--json'], ['whoami'], ['status', 'abc123'], ['download', 'abc123'],
  ['buyer', '--since', 'yesterday', '--until', 'today'], ['seller', '--since', '-7d', '--until', 'today', '--breakdowns', 'daily,app'],
  ['run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '-o', 'x.csv'], ['run', 'seller', '--since', 'today', '--until', 'today', '--json'],
  ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-02', '--format', 'ndjson', '-o', 'x.ndjson'],
);

const SPEC_CODES = [0, 2, 3, 4, 5, 6];

function materialise(value: string | undefined): string | undefined {
  if (value === 'SANDBOX') return sandbox.baseUrl;
  if (value !== undefined && /\.(csv|json|ndjson|txt)$/.test(value)) return join(dir, value);
  return value;
}

describe('random command lines', () => {
  it('never crash: a SPEC exit code, no stack trace, one error line and at most a hint', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.tuple(command, fc.array(positional, { maxLength: 2 })).map(([cmd, rest]) => [cmd, ...rest]),
          valid,
        ),
        fc.array(option, { maxLength: 7 }),
        fc.record({ token: fc.oneof(fc.constant(undefined), fc.constant('SANDBOX_TOKEN'), junk), url: baseUrl, profile: fc.oneof(fc.constant(undefined), junk) }),
        async (start, options, env) => {
          counted++;
          const cmd = start[0];
          const args = start.map((arg) => (/\.(csv|ndjson)$/.test(arg) ? join(dir, arg) : arg));
          if (start.length > 1 && options.length > 2) options = options.slice(0, 2);
          for (const [name, value] of options) {
            args.push(name);
            const real = name === '--base-url' || name === '-o' ? materialise(value) : value;
            if (real !== undefined) args.push(real);
          }
          // a command that serves or waits forever is not bad input: give it no time
          if (cmd === 'sandbox') return;
          const { ctx, stderr } = fakeContext({
            // relative paths (`-o` followed by a flag takes the flag as its file name) land here
            cwd: dir,
            env: {
              REPORTING_CONFIG_DIR: join(dir, 'config'),
              REPORTING_TOKEN: env.token === 'SANDBOX_TOKEN' ? sandbox.token : env.token,
              REPORTING_BASE_URL: materialise(env.url),
              REPORTING_PROFILE: env.profile,
            },
          });
          const code = await main(argv(...args, '--max-wait', '2s', '--timeout', '2s', '--retries', '0'), ctx);
          codes.set(code, (codes.get(code) ?? 0) + 1);
          expect(SPEC_CODES, `exit ${code} for ${JSON.stringify(args)}:\n${stderr.text}`).toContain(code);
          expect(stderr.text).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
          expect(stderr.text).not.toMatch(/internal error/);
          const errors = stderr.text.split('\n').filter((line) => line.startsWith('error: '));
          if (code !== 0) {
            expect(errors, `${JSON.stringify(args)}:\n${stderr.text}`).toHaveLength(code === 2 && stderr.text.startsWith('Usage:') ? 0 : 1);
            const after = stderr.text.slice(stderr.text.indexOf('error: ')).trimEnd().split('\n');
            if (errors.length) {
              expect(after.length).toBeLessThanOrEqual(2);
              if (after[1] !== undefined) expect(after[1]).toMatch(/^hint: /);
            }
          }
        },
      ),
      { numRuns: 1000, seed: 20261121 },
    );
    // the generators must reach real work too, not only usage errors
    expect(codes.get(0) ?? 0).toBeGreaterThan(20);
    expect(codes.get(2) ?? 0).toBeGreaterThan(100);
  }, 300_000);
});

describe('random time expressions', () => {
  it('either give a Unix second or a usage error that says what is accepted', () => {
    fc.assert(
      fc.property(time, fc.constantFrom('since', 'until') as fc.Arbitrary<'since' | 'until'>, fc.integer({ min: 0, max: 4_102_444_800_000 }), (text, role, now) => {
        try {
          const seconds = parseTime(text, role, now);
          expect(Number.isInteger(seconds)).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(UsageError);
          expect((error as UsageError).hint).toMatch(/^accepted: /);
        }
      }),
      { numRuns: 2000, seed: 1121 },
    );
  });
});
