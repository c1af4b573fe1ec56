// Colour only on a terminal, and never with --no-color, NO_COLOR or TERM=dumb.

export function wantsColor(env: Record<string, string | undefined>, stream: { isTTY?: boolean }, noColorFlag = false): boolean {
  return Boolean(stream.isTTY) && !noColorFlag && env.NO_COLOR === undefined && env.TERM !== 'dumb';
}
