// Request bodies: form-encoded with indexed arrays (the contract's samples), or JSON with the same
// names (arrays as arrays, metrics as the comma-separated string).

/** `since`/`until` are numbers: JSON bodies send them as integers, as the contract says. */
export type Params = Record<string, string | number | string[]>;
export type BodyEncoding = 'form' | 'json';

/** Brackets are kept literal, as in the contract's samples: `breakdowns[0]=DAILY`. */
export function formEncode(params: Params): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    const key = encodeURIComponent(name);
    if (Array.isArray(value)) value.forEach((item, i) => parts.push(`${key}[${i}]=${encodeURIComponent(item)}`));
    else parts.push(`${key}=${encodeURIComponent(value)}`);
  }
  return parts.join('&');
}

export function encodeBody(params: Params, encoding: BodyEncoding): { body: string; contentType: string } {
  return encoding === 'json'
    ? { body: JSON.stringify(params), contentType: 'application/json' }
    : { body: formEncode(params), contentType: 'application/x-www-form-urlencoded' };
}
