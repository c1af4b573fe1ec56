// Deterministic, seedable integer hashing: every synthetic value is a pure function of
// (seed, what, where), so any period can be generated on demand and always gives the same answer.

function mix(h: number, value: number): number {
  let x = Math.imul(h ^ (value | 0), 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  x = Math.imul(x + 0x9e3779b9, 0x27d4eb2d);
  return (x ^ (x >>> 15)) >>> 0;
}

export function hash(seed: number, ...parts: number[]): number {
  let h = mix(0x811c9dc5, seed);
  for (const part of parts) {
    h = mix(h, part);
    // large values (Unix seconds, hour numbers) do not fit 32 bits once multiplied: fold the high part in
    if (part > 0xffffffff || part < 0) h = mix(h, Math.floor(part / 0x100000000));
  }
  return h;
}

/** A float in [0, 1). */
export function unit(h: number): number {
  return h / 0x100000000;
}

export function pick<T>(items: readonly T[], h: number): T {
  const item = items[h % items.length];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

/** Picks by weight: weights are relative. */
export function pickWeighted<T extends { weight: number }>(items: readonly T[], h: number): T {
  const total = items.reduce((sum, item) => sum + item.weight, 0);
  let target = unit(h) * total;
  for (const item of items) {
    target -= item.weight;
    if (target < 0) return item;
  }
  return items[items.length - 1] as T;
}
