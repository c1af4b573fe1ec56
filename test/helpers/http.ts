// Plain HTTP against the sandbox: fetch, not the CLI's client, so that the two cannot share a mistake.

import { join } from 'node:path';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/server.js';
import { tempDir } from './tmp.js';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface CallOptions {
  token?: string | null;
  form?: Record<string, string | number | (string | number)[]>;
  json?: unknown;
  method?: string;
  raw?: { body: string; type: string };
}

/** Form-encodes arrays in the contract's indexed notation: name[0]=a&name[1]=b. */
export function formBody(fields: Record<string, string | number | (string | number)[]>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (Array.isArray(value)) value.forEach((item, i) => parts.push(`${name}[${i}]=${encodeURIComponent(String(item))}`));
    else parts.push(`${name}=${encodeURIComponent(String(value))}`);
  }
  return parts.join('&');
}

export async function call(sandbox: Sandbox, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const token = options.token === undefined ? sandbox.token : options.token;
  if (token !== null) headers.Authorization = token;
  let body: string | undefined;
  if (options.raw) {
    body = options.raw.body;
    headers['Content-Type'] = options.raw.type;
  } else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['Content-Type'] = 'application/json';
  } else if (options.form) {
    body = formBody(options.form);
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  const method = options.method ?? (path === '/campaigns' ? 'GET' : 'POST');
  const response = await fetch(sandbox.baseUrl + path, { method, headers, body });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** The one way tests start a sandbox: on 127.0.0.1, a free port, reports ready after 30 ms; the
 * body also gets a fresh temporary folder (removed after the test). Always closed. */
export async function withSandbox<T>(options: SandboxOptions, body: (sandbox: Sandbox, dir: string) => Promise<T>): Promise<T> {
  const sandbox = await startSandbox({ port: 0, readyDelayMs: 30, ...options });
  try {
    return await body(sandbox, tempDir());
  } finally {
    await sandbox.close();
  }
}

/** The environment a spawned CLI needs to reach `sandbox` as its one account (REPORTING_TOKEN),
 * with its configuration folder inside the test's `dir`. */
export const sandboxEnv = (sandbox: Sandbox, dir: string): Record<string, string> => ({
  REPORTING_CONFIG_DIR: join(dir, '.config'), REPORTING_BASE_URL: sandbox.baseUrl, REPORTING_TOKEN: sandbox.token,
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Submits a report, waits for it, and returns the downloaded JSON. */
export async function fetchReport(
  sandbox: Sandbox,
  side: 'buyer' | 'seller',
  fields: Record<string, string | number | (string | number)[]>,
  encoding: 'form' | 'json' = 'form',
): Promise<{ data: Record<string, unknown>[]; summary: Record<string, unknown> }> {
  const submitted = await call(sandbox, `/${side}-reporting`, encoding === 'form' ? { form: fields } : { json: fields });
  if (submitted.status !== 200) throw new Error(`submit failed: ${submitted.status} ${submitted.text}`);
  const id = submitted.json.response.report_id as string;
  for (let i = 0; i < 200; i++) {
    const status = await call(sandbox, '/status-reporting', { form: { id } });
    if (status.json.response.status === 'ready') break;
    await sleep(10);
  }
  const downloaded = await call(sandbox, '/download-reporting', { form: { id } });
  if (downloaded.status !== 200) throw new Error(`download failed: ${downloaded.status} ${downloaded.text}`);
  return downloaded.json;
}
