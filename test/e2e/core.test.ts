// End to end: the built bin/reporting.js, spawned, against the sandbox on 127.0.0.1.

import { existsSync, mkdirSync, readFileSync, statSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.js';
import { spawn, spawnSync } from 'node:child_process';
import { BIN, NODE, baseEnv, collect, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { withSandbox } from '../helpers/http.js';


const mode = (path: string) => statSync(path).mode & 0o777;
const storeOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));

describe('login and logout', () => {
  it('stores a console token from stdin in a 0600 file in a 0700 folder, and logout forgets it', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir };
      const login = await runCli(['login', '--token-stdin', '--base-url', sandbox.baseUrl], { env, input: `${sandbox.token}\n` });
      expect(login.code).toBe(0);
      expect(login.stderr).toMatch(/Logged in: profile "default"/);
      expect(login.stdout + login.stderr).not.toContain(sandbox.token);
      expect(mode(dir)).toBe(0o700);
      expect(mode(join(dir, 'config.json'))).toBe(0o600);
      expect(storeOf(dir).profiles.default).toMatchObject({ baseUrl: sandbox.baseUrl, token: sandbox.token, source: 'console' });

      // the stored base URL and token are used without any flag or environment
      const campaigns = await runCli(['campaigns', '--json'], { env });
      expect(campaigns.code).toBe(0);
      expect(JSON.parse(campaigns.stdout).length).toBeGreaterThan(0);

      const whoami = await runCli(['whoami'], { env });
      expect(whoami.stdout).toMatch(/token:\s+stored \(console\)/);
      expect(whoami.stdout).not.toContain(sandbox.token);

      expect((await runCli(['logout'], { env })).code).toBe(0);
      expect(storeOf(dir).profiles.default.token).toBeUndefined();
      expect(storeOf(dir).profiles.default.baseUrl).toBe(sandbox.baseUrl);
      const after = await runCli(['campaigns'], { env });
      expect(after.code).toBe(3);
      expect(after.stderr).toMatch(/hint: run `reporting login/);
    });
  });

  it('tightens a folder that already existed with looser permissions', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const loose = join(dir, 'loose');
      mkdirSync(loose, { mode: 0o755 });
      chmodSync(loose, 0o755);
      const result = await runCli(['login', '--token-stdin', '--base-url', sandbox.baseUrl], { env: { REPORTING_CONFIG_DIR: loose }, input: sandbox.token });
      expect(result.code).toBe(0);
      expect(mode(loose)).toBe(0o700);
      expect(mode(join(loose, 'config.json'))).toBe(0o600);
    });
  });

  it('logs in with email and password (stdin or REPORTING_PASSWORD); the password is never stored', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      const viaStdin = await runCli(['login', '--email', sandbox.email, '--password-stdin', '--profile', 'a'], { env, input: `${sandbox.password}\n` });
      expect(viaStdin.code).toBe(0);
      const viaEnv = await runCli(['login', '--email', sandbox.email, '--profile', 'b'], { env: { ...env, REPORTING_PASSWORD: sandbox.password } });
      expect(viaEnv.code).toBe(0);
      const store = readFileSync(join(dir, 'config.json'), 'utf8');
      expect(store).not.toContain(sandbox.password);
      const profiles = JSON.parse(store).profiles;
      expect(profiles.a).toMatchObject({ source: 'login', email: sandbox.email, token: expect.stringMatching(/^[0-9a-f]{40}$/) });
      expect(profiles.b.token).not.toBe(profiles.a.token);
      const used = await runCli(['campaigns', '--profile', 'b', '--json'], { env });
      expect(used.code).toBe(0);
    });
  });

  // `script` (util-linux) gives the CLI a terminal; without it this is reported as skipped
  it.skipIf(spawnSync('script', ['--version']).status !== 0)('on a terminal, prompts without echoing the token or the password', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = baseEnv({ REPORTING_CONFIG_DIR: dir });
      const typed = async (command: string, keys: string) => {
        // script gives the CLI a pseudo-terminal; what it prints is what a user would see
        const child = spawn('script', ['-qfc', command, '/dev/null'], { env });
        const done = collect(child, { keepStdin: true, timeoutMs: 20_000 });
        // type once the prompt is up (the terminal is then in raw mode)
        await new Promise<void>((resolve) => {
          let seen = '';
          child.stdout!.on('data', (chunk: Buffer) => {
            seen += chunk.toString('utf8');
            if (/: $/.test(seen)) resolve();
          });
        });
        child.stdin!.end(`${keys}\r`);
        return done;
      };
      const cli = `"${NODE}" "${BIN}"`;
      // an emoji typed by mistake, then erased with one backspace, leaves nothing behind
      const token = await typed(`${cli} login --base-url ${sandbox.baseUrl}`, `${sandbox.token}\u{1F600}\u007f`);
      expect(token.stdout).toContain('Paste your token: ');
      expect(token.stdout).toMatch(/Logged in: profile "default"/);
      expect(token.stdout).not.toContain(sandbox.token);
      expect(storeOf(dir).profiles.default.token).toBe(sandbox.token);
      const password = await typed(`${cli} login --base-url ${sandbox.baseUrl} --email ${sandbox.email} --profile p`, sandbox.password);
      expect(password.stdout).toContain('Password: ');
      expect(password.stdout).not.toContain(sandbox.password);
      expect(storeOf(dir).profiles.p.source).toBe('login');
    });
  });

  it('a wrong password exits 3; no prompt without a terminal: a usage error naming the flags', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      const wrong = await runCli(['login', '--email', sandbox.email, '--password-stdin'], { env, input: 'not-it\n' });
      expect(wrong.code).toBe(3);
      expect(wrong.stderr).toMatch(/^error: login failed/);
      expect(wrong.stderr).not.toContain('not-it');
      const noTty = await runCli(['login', '--email', sandbox.email], { env });
      expect(noTty.code).toBe(2);
      expect(noTty.stderr).toMatch(/cannot prompt for the password: standard input is not a terminal/);
      expect(noTty.stderr).toMatch(/--password-stdin or REPORTING_PASSWORD/);
      const noToken = await runCli(['login'], { env });
      expect(noToken.code).toBe(2);
      expect(noToken.stderr).toMatch(/--token-stdin/);
    });
  });

  it('--token-stdin checks the token against the API before storing it (--no-verify: offline)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      const typo = await runCli(['login', '--token-stdin'], { env, input: `${sandbox.token.slice(0, -1)}${sandbox.token.endsWith('0') ? '1' : '0'}` });
      expect(typo.code).toBe(3);
      expect(typo.stderr).toBe(`error: the API rejected this token (HTTP 401: Invalid token)\nhint: paste the whole token from the web console of ${sandbox.baseUrl}; --no-verify stores it without checking\n`);
      expect(existsSync(join(dir, 'config.json'))).toBe(false);
      expect(sandbox.requests.map((r) => [r.endpoint, r.status])).toEqual([['campaigns', 401]]);
      const offline = await runCli(['login', '--token-stdin', '--no-verify'], { env, input: 'f'.repeat(40) });
      expect(offline.code).toBe(0);
      expect(sandbox.requests).toHaveLength(1);
      // two tokens (a file of several, the wrong file): which one is meant is not guessed
      const two = await runCli(['login', '--token-stdin'], { env, input: `${sandbox.token}\n${'e'.repeat(40)}\n` });
      expect(two.code).toBe(2);
      expect(two.stderr).toBe('error: --token-stdin: standard input held 2 lines; give the token alone, on one line\n');
      expect(sandbox.requests).toHaveLength(1);
      const good = await runCli(['login', '--token-stdin'], { env, input: sandbox.token });
      expect(good.code).toBe(0);
      expect(storeOf(dir).profiles.default.token).toBe(sandbox.token);
    });
  });

  it('REPORTING_TOKEN: whoami says it is in use (not the stored token\'s details), and a refused one is blamed, not the login', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      expect((await runCli(['login', '--email', sandbox.email], { env: { ...env, REPORTING_PASSWORD: sandbox.password } })).code).toBe(0);
      const stored = await runCli(['whoami', '--json'], { env });
      expect(JSON.parse(stored.stdout)).toMatchObject({ token: 'stored (login)', savedAt: expect.any(String), email: sandbox.email, storedTokenUnused: false });
      const overridden = await runCli(['whoami'], { env: { ...env, REPORTING_TOKEN: 'f'.repeat(40) } });
      expect(overridden.stdout).toMatch(/^token: {4}from REPORTING_TOKEN \(the profile's stored token is not used while it is set\)$/m);
      expect(overridden.stdout).not.toMatch(/saved|email/);
      const json = JSON.parse((await runCli(['whoami', '--json'], { env: { ...env, REPORTING_TOKEN: 'f'.repeat(40) } })).stdout);
      expect(json).toMatchObject({ token: 'from REPORTING_TOKEN', savedAt: null, email: null, storedTokenUnused: true });
      const refused = await runCli(['campaigns'], { env: { ...env, REPORTING_TOKEN: 'f'.repeat(40) } });
      expect(refused.code).toBe(3);
      expect(refused.stderr).toBe(`error: the API rejected the token (HTTP 401: Invalid token)\nhint: the token comes from REPORTING_TOKEN, which overrides the stored one: check that it is a valid token for ${sandbox.baseUrl}, or unset it to use the profile's stored token\n`);
      const alone = await runCli(['campaigns'], { env: { REPORTING_CONFIG_DIR: tempDir(), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: 'f'.repeat(40) } });
      expect(alone.stderr).toMatch(/^hint: the token comes from REPORTING_TOKEN: check that it is a valid token for .*, or unset it and run `reporting login --profile default`$/m);
    });
  });

  it('parallel logins to different profiles keep every profile\'s token', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      const tokens = Array.from({ length: 8 }, (_, i) => `${String(i).repeat(8)}${'a'.repeat(32)}`);
      const results = await Promise.all(tokens.map((token, i) => runCli(['login', '--token-stdin', '--no-verify', '--profile', `p${i}`], { env, input: token })));
      expect(results.map((result) => result.code)).toEqual(tokens.map(() => 0));
      const profiles = storeOf(dir).profiles;
      tokens.forEach((token, i) => expect(profiles[`p${i}`].token).toBe(token));
    });
  });
});

describe('exit codes and errors', () => {
  it('3: a rejected token without REPORTING_EMAIL/REPORTING_PASSWORD, with a hint', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      // a stored token that has expired (REPORTING_TOKEN's own hint: in 'login and logout')
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      expect((await runCli(['login', '--token-stdin', '--no-verify'], { env, input: 'f'.repeat(40) })).code).toBe(0);
      const result = await runCli(['campaigns'], { env });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^error: the API rejected the token \(HTTP 401: Invalid token\)\nhint: run `reporting login` again/);
    });
  });

  it('4: the API refuses the request (an unknown report)', async () => {
    await withSandbox({}, async (sandbox, dir) => {
      const result = await runCli(['status', 'nope'], { env: { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token } });
      expect(result.code).toBe(4);
      expect(result.stderr).toBe('error: POST /status-reporting: HTTP 404: no report with id nope (NOT_FOUND)\n');
    });
  });

  it('5: a server that keeps failing, after the retries; and a closed port', async () => {
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'campaigns' }] } }, async (sandbox, dir) => {
      const result = await runCli(['campaigns', '--retries', '2'], { env: { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/HTTP 503: injected fault: HTTP 503 \(SANDBOX_FAULT\), after 3 attempts/);
      expect(sandbox.requests.filter((r) => r.endpoint === 'campaigns')).toHaveLength(3);
    });
    const closed = await startSandbox({ port: 0 });
    const url = closed.baseUrl;
    await closed.close();
    const refused = await runCli(['campaigns', '--retries', '1'], { env: { REPORTING_CONFIG_DIR: tempDir(), REPORTING_BASE_URL: url, REPORTING_TOKEN: 'x'.repeat(40) } });
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/connection refused/);
  });

  it('5: an answer that does not match the contract', async () => {
    await withSandbox({ faults: { malformed: 'no-report-id' } }, async (sandbox, dir) => {
      const result = await runCli(['buyer', '--since', 'yesterday', '--until', 'yesterday'], { env: { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^error: \/buyer-reporting answered something unexpected/);
    });
  });

  it('6: status --wait on a report that fails, and one that is not ready within --max-wait', async () => {
    await withSandbox({ faults: { reportStatus: 'failed' } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const id = (await runCli(['buyer', '--since', 'yesterday', '--until', 'yesterday'], { env })).stdout.trim();
      const failed = await runCli(['status', id, '--wait', '--poll-interval', '50ms'], { env });
      expect(failed.code).toBe(6);
      expect(failed.stderr).toContain(`report ${id} ended in status "failed"`);
      // a failed report will never be ready: no hint to download it
      expect(failed.stderr).toMatch(/^hint: it will not become ready: submit the report again/m);
      expect(failed.stderr).not.toContain('reporting download');
    });
    await withSandbox({ readyDelayMs: 60_000 }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const id = (await runCli(['seller', '--since', 'yesterday', '--until', 'yesterday'], { env })).stdout.trim();
      const late = await runCli(['status', id, '--wait', '--max-wait', '300ms', '--poll-interval', '100ms'], { env });
      expect(late.code).toBe(6);
      expect(late.stderr).toContain(`report ${id} was not ready within 300ms`);
    });
  });

  it('2: plain HTTP to a host that is not loopback is refused before any connection', async () => {
    const result = await runCli(['campaigns'], { env: { REPORTING_CONFIG_DIR: tempDir(), REPORTING_BASE_URL: 'http://reporting.invalid:9', REPORTING_TOKEN: 'x'.repeat(40) } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/refusing to send a token over plain HTTP to reporting.invalid:9/);
  });

  it('2: no base URL anywhere says how to set one', async () => {
    const result = await runCli(['campaigns'], { env: { REPORTING_CONFIG_DIR: tempDir(), REPORTING_TOKEN: 'x'.repeat(40) } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no base URL for profile "default"\nhint: pass --base-url URL, set REPORTING_BASE_URL/);
  });
});

describe('retries and re-login through the sandbox faults', () => {
  it('retries 503s and a 429 with Retry-After, then succeeds', async () => {
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'buyer', first: 2 }, { status: 429, endpoint: 'status', first: 1, retryAfter: 1 }] } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const submitted = await runCli(['buyer', '--since', 'yesterday', '--until', 'yesterday', '-v'], { env });
      expect(submitted.code).toBe(0);
      expect(submitted.stderr.match(/retry \d of 4/g)).toHaveLength(2);
      const started = Date.now();
      const status = await runCli(['status', submitted.stdout.trim(), '-v'], { env });
      expect(status.code).toBe(0);
      expect(status.stderr).toMatch(/retry 1 of 4 in 1\.0s \(HTTP 429, Retry-After 1s\)/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    });
  });

  it('without -v, one line per retry on stderr (none with -q), and stdout stays the result', async () => {
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'buyer', first: 2 }, { status: 429, endpoint: 'status', first: 1, retryAfter: 1 }] } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const submitted = await runCli(['buyer', '--since', 'yesterday', '--until', 'yesterday'], { env });
      expect(submitted.code).toBe(0);
      expect(submitted.stdout).toMatch(/^[0-9a-f]{24}\n$/);
      expect(submitted.stderr).toMatch(/^HTTP 503 \(POST \/buyer-reporting\); retrying in \d\.\ds \(retry 1 of 4\)\nHTTP 503 \(POST \/buyer-reporting\); retrying in \d\.\ds \(retry 2 of 4\)\n$/);
      const status = await runCli(['status', submitted.stdout.trim(), '--retries', '2'], { env });
      expect(status.stderr).toBe('HTTP 429, Retry-After 1s (POST /status-reporting); retrying in 1.0s (retry 1 of 2)\n');
      expect(status.stdout).toBe('ready\n');
    });
    await withSandbox({ faults: { errors: [{ status: 503, endpoint: 'campaigns', first: 1 }] } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      const quiet = await runCli(['campaigns', '--json', '-q'], { env });
      expect(quiet.code).toBe(0);
      expect(quiet.stderr).toBe('');
    });
  });

  it('logs in again once when the token expires, with REPORTING_EMAIL/REPORTING_PASSWORD, and stores the new token', async () => {
    await withSandbox({ faults: { tokenUses: 1 } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token };
      expect((await runCli(['campaigns', '--json'], { env })).code).toBe(0);
      const expired = await runCli(['campaigns', '--json'], { env });
      expect(expired.code).toBe(3);
      const relogged = await runCli(['campaigns', '--json', '-v'], { env: { ...env, REPORTING_EMAIL: sandbox.email, REPORTING_PASSWORD: sandbox.password } });
      expect(relogged.code).toBe(0);
      expect(relogged.stderr).toMatch(/logging in again/);
      const stored = storeOf(dir).profiles.default;
      expect(stored).toMatchObject({ source: 'login', email: sandbox.email });
      expect(stored.token).toMatch(/^[0-9a-f]{40}$/);
      expect(stored.token).not.toBe(sandbox.token);
    });
  });
});

describe('secrets', () => {
  it('-v traces never show the token or the password, on success or failure', async () => {
    await withSandbox({ faults: { tokenUses: 2 } }, async (sandbox, dir) => {
      const env = { REPORTING_CONFIG_DIR: dir, REPORTING_BASE_URL: sandbox.baseUrl };
      const outputs: string[] = [];
      const login = await runCli(['-v', 'login', '--email', sandbox.email, '--password-stdin'], { env, input: sandbox.password });
      outputs.push(login.stdout, login.stderr);
      const token = storeOf(dir).profiles.default.token as string;
      for (const args of [['buyer', '--since', 'yesterday', '--until', 'yesterday'], ['campaigns'], ['status', 'nope']]) {
        const result = await runCli(['-v', ...args], { env: { ...env, REPORTING_EMAIL: sandbox.email, REPORTING_PASSWORD: sandbox.password } });
        outputs.push(result.stdout, result.stderr);
      }
      const all = outputs.join('\n');
      expect(all).toMatch(/> POST \/auth-reporting/);
      expect(all).toMatch(/Authorization: \*\*\*/);
      expect(all).not.toContain(sandbox.password);
      expect(all).not.toContain(token);
      expect(all).not.toContain(sandbox.token);
      expect(all).not.toMatch(/[0-9a-f]{40}/);
    });
  });
});
