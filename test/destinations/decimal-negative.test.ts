// Summing windows (run --chunk with RANGE or no time breakdown) adds each row's numbers with
// DecimalSum, whose fast path adds integers of up to 15 digits as doubles while that is exact. A
// refund or correction column can hold large negative counts: the total must stay exact past
// -2^53 as it does past +2^53, or the merged file is off by a few units with nothing to show it.

import { describe, expect, it } from 'vitest';
import { DecimalSum } from '../../src/destinations/decimal.js';

/** 15-digit negative integers, odd and varied, so that a double losing a unit shows in the total */
const values = Array.from({ length: 5_000 }, (_, i) => `-${999_999_999_999_999 - i * 7_919_113}`);

function exact(texts: readonly string[]): string {
  return texts.reduce((total, text) => total + BigInt(text), 0n).toString();
}

function summed(texts: readonly string[]): string {
  const sum = new DecimalSum();
  for (const text of texts) sum.add(text);
  return sum.toString();
}

describe('a sum of many large negative integers', () => {
  it('passes -2^53 and stays exact, as BigInt says', () => {
    const total = BigInt(exact(values));
    expect(total < -(2n ** 53n) * 100n).toBe(true);
    expect(summed(values)).toBe(exact(values));
  });

  it('stays exact at every step, not only at the end', () => {
    const sum = new DecimalSum();
    let reference = 0n;
    values.slice(0, 40).forEach((text, i) => {
      sum.add(text);
      reference += BigInt(text);
      expect(sum.toString(), `after ${i + 1} values`).toBe(reference.toString());
    });
  });

  it('and when positives and negatives mix around the limit', () => {
    const mixed = values.slice(0, 2_000).map((text, i) => (i % 3 === 0 ? text.slice(1) : text));
    expect(summed(mixed)).toBe(exact(mixed));
  });
});
