// REPORTING_NOW (issue 21, item 3): the calendar moves (today, yesterday, -Nd, the check of a
// period after today, the times of JSON lines), as an offset from the real clock; an unparsable
// value is a usage error; every command says the calendar is moved, -q included; whoami shows it.

import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { calendarFrom, offsetText, parseInstant } from '../../src/clock.js';
import { argv, fakeContext, FIXED_NOW } from '../helpers/ctx.js';
import { withSandbox } from '../helpers/http.js';

const PARIS = 'Europe/Paris';
const NIGHT = '2026-03-10T03:00:00+01:00';
const dayOf = (unix: number) => DateTime.fromSeconds(unix, { zone: PARIS }).toISODate();

describe('parseInstant: the syntax of REPORTING_NOW and sandbox --now', () => {
  it('takes ISO times (an offset, Paris wall time, a date) and Unix seconds', () => {
    expect(parseInstant('2026-11-26T03:00:00+01:00', 'REPORTING_NOW')).toBe(Date.parse('2026-11-26T02:00:00Z'));
    expect(parseInstant('2026-11-26T02:00:00Z', 'REPORTING_NOW')).toBe(Date.parse('2026-11-26T02:00:00Z'));
    expect(parseInstant('2026-11-26T03:00', 'REPORTING_NOW')).toBe(Date.parse('2026-11-26T02:00:00Z'));
    // summer time: Paris is UTC+2
    expect(parseInstant('2026-07-01T03:00', 'REPORTING_NOW')).toBe(Date.parse('2026-07-01T01:00:00Z'));
    expect(parseInstant('2026-11-26', 'REPORTING_NOW')).toBe(Date.parse('2026-11-25T23:00:00Z'));
    expect(parseInstant(' 1795658400 ', 'REPORTING_NOW')).toBe(1_795_658_400_000);
  });

  it('refuses the rest, naming the variable and the forms it takes', () => {
    expect(() => parseInstant('1795658400000', 'REPORTING_NOW')).toThrow(/REPORTING_NOW "1795658400000": looks like milliseconds; give an ISO 8601 time .* or Unix seconds/);
    expect(() => parseInstant('20261126', 'REPORTING_NOW')).toThrow(/is ambiguous/);
    for (const bad of ['tomorrow', '2026-13-01', '2026-11-26T25:00', 'yesterday', '-7d', '26/11/2026']) {
      expect(() => parseInstant(bad, '--now'), bad).toThrow(/^--now ".*": is not a time; give an ISO 8601 time/);
    }
  });

  it('the calendar is an offset from the real clock: time still passes', () => {
    let real = FIXED_NOW;
    const calendar = calendarFrom(NIGHT, () => real);
    expect(calendar.now()).toBe(Date.parse(NIGHT));
    real += 90_000;
    expect(calendar.now()).toBe(Date.parse(NIGHT) + 90_000);
    expect(calendar.moved).toMatchObject({ setting: NIGHT, at: NIGHT, offsetMs: Date.parse(NIGHT) - FIXED_NOW });
    // unset or blank: the real clock itself
    expect(calendarFrom(undefined, () => real).moved).toBeUndefined();
    expect(calendarFrom('  ', () => real).now()).toBe(real);
  });
});

describe('REPORTING_NOW through the CLI', () => {
  it('unparsable: exit 2, one error line and a hint, before any request', async () => {
    for (const value of ['next tuesday', '1795658400000']) {
      const { ctx, stderr, stdout } = fakeContext({ env: { REPORTING_NOW: value, REPORTING_TOKEN: 't', REPORTING_BASE_URL: 'http://127.0.0.1:9' } });
      const code = await runCli(argv('run', 'buyer', '--since', 'yesterday', '--until', 'yesterday'), ctx);
      expect(code, stderr.text).toBe(2);
      const lines = stderr.text.trim().split('\n');
      expect(lines[0]).toMatch(/^error: REPORTING_NOW ".*": (is not a time|looks like milliseconds); give an ISO 8601 time/);
      expect(lines[1]).toBe('hint: unset REPORTING_NOW to use the real clock');
      expect(lines).toHaveLength(2);
      expect(stdout.text).toBe('');
    }
  });

  it('yesterday and -7d follow it; the warning is printed with -q too; the real clock is untouched', async () => {
    await withSandbox({}, async (sandbox) => {
      const env = { REPORTING_NOW: NIGHT, REPORTING_TOKEN: sandbox.token, REPORTING_BASE_URL: sandbox.baseUrl };
      const { ctx, stderr } = fakeContext({ env });
      expect(await runCli(argv('buyer', '--since', '-7d', '--until', 'yesterday', '-q'), ctx), stderr.text).toBe(0);
      const [report] = sandbox.reports();
      expect([dayOf(report?.since ?? 0), dayOf(report?.until ?? 0)]).toEqual(['2026-03-03', '2026-03-09']);
      // the fake real clock is 2026-11-21 12:00 Paris: the warning names both
      expect(stderr.text).toBe(`warning: REPORTING_NOW=${NIGHT}: the calendar says ${NIGHT}, not 2026-11-21T12:00:00+01:00 ` +
        '(today, yesterday, -Nd, --since auto and the times in logs follow it; timers keep the real clock); unset it for real runs\n');
    });
  });

  it('a period after the moved today is refused with --state, by the moved date', async () => {
    const { ctx, stderr } = fakeContext({ env: { REPORTING_NOW: '2026-11-11T03:00', REPORTING_TOKEN: 't', REPORTING_BASE_URL: 'http://127.0.0.1:9' } });
    // on the real (fake) clock, 2026-11-21, this period is in the past
    const code = await runCli(argv('run', 'buyer', '--since', '2026-11-10', '--until', '2026-11-12', '--chunk', 'day', '--state', 's.json', '-o', '{since}.csv', '-q'), ctx);
    expect(code).toBe(2);
    expect(stderr.text).toMatch(/error: --until 2026-11-12 is after today \(2026-11-11\)/);
  });

  it('JSON lines carry `now` and are dated by the calendar: the warning, the events, the error', async () => {
    await withSandbox({}, async (sandbox) => {
      const env = { REPORTING_NOW: NIGHT, REPORTING_TOKEN: sandbox.token, REPORTING_BASE_URL: sandbox.baseUrl };
      const { ctx, stderr } = fakeContext({ env });
      const code = await runCli(argv('run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--log-format', 'json', '-q', '--poll-interval', '20ms'), ctx);
      expect(code, stderr.text).toBe(0);
      const lines = stderr.text.trim().split('\n').map((line) => JSON.parse(line) as { ts: string; now?: string; event: string; message?: string });
      expect(lines[0]).toMatchObject({ event: 'warning', now: NIGHT });
      expect(lines[0]?.message).toMatch(/^REPORTING_NOW=/);
      expect(lines.map((line) => line.event)).toContain('done');
      for (const line of lines) {
        expect(line.now).toBe(NIGHT);
        // the fake real clock stands still: every line is dated at the moved instant
        expect(line.ts).toBe(new Date(Date.parse(NIGHT)).toISOString());
      }
      const failed = fakeContext({ env });
      expect(await runCli(argv('run', 'buyer', '--since', 'yesterday', '--until', 'yesterday', '--log-format', 'json', '--metrics', 'clikcs'), failed.ctx)).toBe(2);
      const error = failed.stderr.text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).at(-1);
      expect(error).toMatchObject({ event: 'error', now: NIGHT, ts: new Date(Date.parse(NIGHT)).toISOString(), exitCode: 2 });
    });
  });

  it('whoami shows the moved clock and the real one, as text and as JSON', async () => {
    const env = { REPORTING_NOW: '1795658400', REPORTING_CONFIG_DIR: '/nonexistent-reporting-test' };
    const text = fakeContext({ env });
    expect(await runCli(argv('whoami'), text.ctx)).toBe(0);
    expect(text.stdout.text).toMatch(/^now: {6}2026-11-26T03:00:00\+01:00 \(moved by REPORTING_NOW=1795658400; the real clock says 2026-11-21T12:00:00\+01:00\)$/m);
    expect(text.stderr.text).toMatch(/^warning: REPORTING_NOW=1795658400: the calendar says 2026-11-26T03:00:00\+01:00/);
    const json = fakeContext({ env });
    expect(await runCli(argv('whoami', '--json'), json.ctx)).toBe(0);
    expect(JSON.parse(json.stdout.text).now).toEqual({ calendar: '2026-11-26T03:00:00+01:00', real: '2026-11-21T12:00:00+01:00', REPORTING_NOW: '1795658400' });
    const unset = fakeContext({ env: { REPORTING_CONFIG_DIR: '/nonexistent-reporting-test' } });
    expect(await runCli(argv('whoami', '--json'), unset.ctx)).toBe(0);
    expect(JSON.parse(unset.stdout.text).now).toBeNull();
    expect(unset.stderr.text).toBe('');
  });

  it('-v says the offset and that timers keep the real clock', async () => {
    const { ctx, stderr } = fakeContext({ env: { REPORTING_NOW: NIGHT, REPORTING_CONFIG_DIR: '/nonexistent-reporting-test' } });
    expect(await runCli(argv('whoami', '-v'), ctx)).toBe(0);
    // 2026-11-21 12:00 Paris back to 2026-03-10 03:00 Paris: 256 days 9 hours (the summer hour in between)
    expect(stderr.text).toContain('clock: the calendar is the real clock -256d 9h (REPORTING_NOW); --max-wait, --timeout and lock staleness keep the real clock');
    expect(offsetText(90_061_000)).toBe('+1d 1h 1m 1s');
    expect(offsetText(0)).toBe('+0s');
  });
});
