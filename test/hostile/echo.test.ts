// A server that echoes the request body back inside its error, in nested encodings (issue 20,
// item 9): the password sent in the login body must not survive in any of them, on stdout, in the
// -v trace, in the error line or in the JSON log. A fragment of 4 characters is enough to fail.

import { afterEach, describe, expect, it } from 'vitest';
import { json, startHostile, type Handler, type Hostile } from './server.js';
import { makeWorld } from './world.js';

// not a real secret: every character JSON or a URL escapes, spaces, non-ASCII letters
const PASSWORD = 'p"a\\ss/w%rd é ü';
const RUN = ['run', 'buyer', '--since', '2026-11-01', '--until', '2026-11-01', '--poll-interval', '10ms', '--retries', '0'];

/** Every fragment of 4 characters or more of the password (all longer ones hold one of these). */
const FRAGMENTS = Array.from({ length: PASSWORD.length - 3 }, (_, i) => PASSWORD.slice(i, i + 4));

const unescapeJson = (text: string) => text.replace(/\\(["\\/bfnrt]|u[0-9a-fA-F]{4})/g, (_, e: string) =>
  (e.length === 5 ? String.fromCharCode(parseInt(e.slice(1), 16)) : ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[e] ?? e));
const unescapeUrl = (text: string) => text.replace(/\+/g, ' ').replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
  try { return decodeURIComponent(run); } catch { return run; }
});

/** A text as printed, and as it reads once its JSON and URL escapes are undone, up to 4 layers. */
function decodings(text: string): string[] {
  const all = new Set([text]);
  let layer = [text];
  for (let depth = 0; depth < 4; depth++) {
    layer = layer.flatMap((t) => [unescapeJson(t), unescapeUrl(t)]).filter((t) => !all.has(t));
    for (const t of layer) all.add(t);
  }
  return [...all];
}

/** No fragment of the password, as printed or in any decoding of what was printed. */
function expectNoFragment(text: string, where: string): void {
  for (const decoded of decodings(text)) {
    for (const fragment of FRAGMENTS) expect(decoded.includes(fragment), `${where} holds ${JSON.stringify(fragment)}:\n${text}`).toBe(false);
  }
}

const twice = (text: string) => JSON.stringify(JSON.stringify(text));
/** How the server echoes the body it received, each inside its JSON error (itself JSON-escaped). */
const ECHOES: Record<string, (body: string) => string> = {
  'as received': (body) => body,
  'JSON-escaped': (body) => JSON.stringify(body),
  'JSON-escaped twice': twice,
  'form-encoded': (body) => encodeURIComponent(body),
  'form-encoded, + for spaces': (body) => new URLSearchParams({ echo: body }).toString(),
  'form-encoded, then JSON-escaped': (body) => JSON.stringify(encodeURIComponent(body)),
  'JSON-escaped, then form-encoded': (body) => encodeURIComponent(JSON.stringify(body)),
  'form-encoded twice': (body) => encodeURIComponent(encodeURIComponent(body)),
  'JSON-escaped as \\u escapes': (body) => JSON.stringify(body).replace(/[^\w]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
};

const echo = (encode: (body: string) => string): Handler => (req, res) =>
  json(res, 400, { response: { error_id: 'BAD', error: `you sent ${encode(req.body)}` } });

let server: Hostile;
afterEach(async () => { await server.close(); });

describe('a server that echoes the login body in its error', () => {
  it.each(Object.entries(ECHOES))('%s: no fragment of the password in the -v trace or on stdout', async (_name, encode) => {
    server = await startHostile({ auth: echo(encode) });
    const world = makeWorld(server, { REPORTING_PASSWORD: PASSWORD, REPORTING_TOKEN: '' });
    const result = await world.run(['login', '-v', '--email', 'me@example.com']);
    expect(result.code, result.stderr).toBe(4);
    // the echo was shown, masked: the test sees what a user would see
    expect(result.stderr).toContain('you sent');
    expect(result.stderr).toContain('POST /auth-reporting');
    expectNoFragment(result.stdout, 'stdout');
    expectNoFragment(result.stderr, 'stderr');
  });

  it('a run logging in again with REPORTING_PASSWORD: no fragment in the JSON log, with or without -v', async () => {
    const all = (body: string) => Object.values(ECHOES).map((encode) => encode(body)).join(' | ');
    server = await startHostile({ auth: echo(all) });
    const world = makeWorld(server, { REPORTING_EMAIL: 'me@example.com', REPORTING_PASSWORD: PASSWORD, REPORTING_TOKEN: '' });
    for (const verbose of [[], ['-v']]) {
      const result = await world.run([...RUN, '-o', 'r.csv', '--log-format', 'json', ...verbose]);
      expect(result.code, result.stderr).toBe(4);
      expectNoFragment(result.stdout, 'stdout');
      expectNoFragment(result.stderr, 'stderr');
      const lines = result.stderr.split('\n').filter((line) => line.startsWith('{'));
      const error = JSON.parse(lines.at(-1) as string) as { event: string; message: string };
      expect(error.event).toBe('error');
      expect(error.message).toContain('you sent');
      // the log as a reader sees it, once parsed
      for (const line of lines) expectNoFragment(JSON.stringify(JSON.parse(line), null, 0), 'a JSON log line');
      expectNoFragment(error.message, 'the JSON error message');
    }
  });
});
