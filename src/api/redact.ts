// Secrets known to this process (tokens, passwords) are replaced wherever text leaves it: traces,
// error messages, body excerpts.

const secrets = new Set<string>();

export function registerSecret(secret: string | undefined): void {
  if (secret && secret.length >= 4) secrets.add(secret);
}

const PATTERNS: [RegExp, string][] = [
  [/("(?:token|password|access_token)"\s*:\s*")[^"]*(")/gi, '$1***$2'],
  [/((?:^|[?&])(?:token|password)=)[^&\s]*/gi, '$1***'],
];

export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('***');
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}
