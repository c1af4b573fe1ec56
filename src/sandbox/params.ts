// Request parameters as the API receives them: form-encoded with indexed arrays
// (`breakdowns[0]=DAILY`), or a JSON object with the same names. Both become one shape.

// what a request to the sandbox carried (the CLI's own outgoing parameters are api/encode.ts Params)
export type ReceivedParams = Record<string, string | string[] | Record<string, unknown>>;

const INDEXED = /^([^[\]]+)\[(\d*)\]$/;
const NESTED = /^([^[\]]+)\[([^[\]]+)\]$/;

export function parseForm(text: string): ReceivedParams {
  const params: ReceivedParams = {};
  const indexed = new Map<string, { index: number; order: number; value: string }[]>();
  let order = 0;
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const arrayMatch = INDEXED.exec(rawKey);
    if (arrayMatch) {
      const [, name = '', index] = arrayMatch;
      const list = indexed.get(name) ?? [];
      list.push({ index: index === '' ? Number.MAX_SAFE_INTEGER : Number(index), order: order++, value });
      indexed.set(name, list);
      continue;
    }
    const nestedMatch = NESTED.exec(rawKey);
    if (nestedMatch) {
      const [, name = '', field = ''] = nestedMatch;
      const existing = params[name];
      const object = existing && typeof existing === 'object' && !Array.isArray(existing) ? existing : {};
      object[field] = value;
      params[name] = object;
      continue;
    }
    const existing = params[rawKey];
    if (existing === undefined) params[rawKey] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else if (typeof existing === 'string') params[rawKey] = [existing, value];
  }
  for (const [name, list] of indexed) {
    list.sort((a, b) => a.index - b.index || a.order - b.order);
    params[name] = list.map((item) => item.value);
  }
  return params;
}

export class BadBody extends Error {}

export function parseJsonBody(text: string): ReceivedParams {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BadBody('the body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new BadBody('the body must be a JSON object');
  }
  const params: ReceivedParams = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (Array.isArray(value)) params[name] = value.map((item) => scalarText(item, name));
    else if (value !== null && typeof value === 'object') params[name] = value as Record<string, unknown>;
    else if (value !== null && value !== undefined) params[name] = scalarText(value, name);
  }
  return params;
}

function scalarText(value: unknown, name: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new BadBody(`${name} holds a value that is neither a string nor a number`);
}

/** The values of a parameter as a list (a single value is a list of one). */
export function listOf(params: ReceivedParams, name: string): string[] | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value;
  return undefined;
}

/** A parameter that must be a single string. */
export function single(params: ReceivedParams, name: string): string | undefined {
  const value = params[name];
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.length === 1) return value[0];
  return undefined;
}
