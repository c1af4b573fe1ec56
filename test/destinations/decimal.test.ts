import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DecimalError, DecimalSum, addDecimals, formatDecimal, parseDecimal } from '../../src/destinations/decimal.js';

/** A reference written differently: every value scaled to 10^-SCALE as a BigInt. */
const SCALE = 40;
function scaled(text: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) throw new Error(text);
  const [, sign, whole = '', fraction = '', power = '0'] = match;
  const shift = SCALE + Number(power) - fraction.length;
  const digits = BigInt(`${whole}${fraction}`);
  const value = shift >= 0 ? digits * 10n ** BigInt(shift) : digits / 10n ** BigInt(-shift);
  return sign ? -value : value;
}
const sumOf = (texts: string[]) => {
  const sum = new DecimalSum();
  for (const text of texts) sum.add(text);
  return sum.toString();
};

/** JSON number texts of every shape: integers of any size, fractions, exponents, negatives, zeros */
const numberText = fc.oneof(
  fc.integer({ min: -1e6, max: 1e6 }).map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 1, max: 12 })).map(([digits, scale]) => {
    const text = (digits < 0n ? -digits : digits).toString().padStart(scale + 1, '0');
    return `${digits < 0n ? '-' : ''}${text.slice(0, -scale)}.${text.slice(-scale)}`;
  }),
  fc.tuple(fc.integer({ min: -999, max: 999 }), fc.integer({ min: -20, max: 20 }), fc.constantFrom('e', 'E')).map(([m, e, letter]) => `${m}${letter}${e}`),
  fc.constantFrom('0', '-0', '0.0', '1e-7', '2.5E+3', '9007199254740993', '-0.000000001'),
);

describe('exact decimal sums', () => {
  it('writes 0.1 + 0.2 as 0.3', () => {
    expect(addDecimals('0.1', '0.2')).toBe('0.3');
    expect(sumOf(['0.1', '0.2'])).toBe('0.3');
  });

  it('keeps big integers, negatives and exponents exact', () => {
    expect(sumOf(['9007199254740993', '1'])).toBe('9007199254740994');
    expect(sumOf(['123456789012345678901234567890', '1'])).toBe('123456789012345678901234567891');
    expect(sumOf(['-5', '3', '-0.25'])).toBe('-2.25');
    expect(sumOf(['1e-7', '0.0000002'])).toBe('0.0000003');
    expect(sumOf(['2.5E+3', '1e2'])).toBe('2600');
  });

  it('trims trailing zeros of a sum, and never writes -0', () => {
    expect(sumOf(['1.50', '1.50'])).toBe('3');
    expect(sumOf(['0.125', '0.375'])).toBe('0.5');
    expect(sumOf(['-0.5', '0.5'])).toBe('0');
    expect(formatDecimal(parseDecimal('-0.000'))).toBe('0');
  });

  it('leaves a value that was never added to as the server wrote it', () => {
    expect(sumOf(['12.50'])).toBe('12.50');
    expect(sumOf(['1E3'])).toBe('1E3');
  });

  it('is exact past 2^53 when many small integers add up', () => {
    const sum = new DecimalSum();
    for (let i = 0; i < 2000; i++) sum.add('999999999999999');
    expect(sum.toString()).toBe((999999999999999n * 2000n).toString());
    expect(sum.size).toBe(2000);
  });

  it('refuses what is not a JSON number, or an absurd exponent', () => {
    expect(() => addDecimals('1,5', '1')).toThrow(DecimalError);
    expect(() => addDecimals('NaN', '1')).toThrow(DecimalError);
    expect(() => addDecimals('1e999', '1')).toThrow(/out of the range/);
  });

  it('agrees with a BigInt reference on any list of JSON numbers (property)', () => {
    fc.assert(
      fc.property(fc.array(numberText, { minLength: 2, maxLength: 30 }), (texts) => {
        const sum = sumOf(texts);
        const reference = texts.reduce((total, text) => total + scaled(text), 0n);
        expect(scaled(sum)).toBe(reference);
        // and the text is a JSON number that means that value
        expect(Number.isFinite(JSON.parse(sum))).toBe(true);
        expect(sum).not.toMatch(/e|\.\d*0$|^-0$/i);
      }),
      { numRuns: 500 },
    );
  });

  it('the sum does not depend on the order of the values (property)', () => {
    fc.assert(
      fc.property(fc.array(numberText, { minLength: 2, maxLength: 20 }), (texts) => {
        expect(sumOf([...texts].reverse())).toBe(sumOf(texts));
      }),
      { numRuns: 300 },
    );
  });
});
