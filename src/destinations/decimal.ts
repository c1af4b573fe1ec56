// Exact sums of JSON number texts, for merging windows (issue 13: 0.1 + 0.2 is written 0.3, never
// 0.30000000000000004). A number is kept as an integer coefficient (BigInt) times a power of ten,
// so any JSON number text adds exactly: big integers, negatives, fractions, exponents.
//
// Speed: integers of up to 15 digits, the common case (counts), are added as plain doubles, which
// is exact while the running total stays below 2^53; anything else goes through BigInt. Measured
// in test/bench/RESULTS.md (decimal sums).
//
// Output: plain notation (no exponent), no trailing zeros after the point ("1.50" + "1.50" is
// "3", as JSON.stringify would write the double), and a value that was never added to keeps the
// text the server sent.

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const SMALL_INTEGER = /^-?\d{1,15}$/;
/** beyond this the plain-double part is moved to BigInt (2^52: one more 15-digit addend stays exact) */
const SMALL_LIMIT = 2 ** 52;
/** a JSON number with a larger exponent is not a count or an amount: refused rather than
 * expanded into a string of a million digits */
const MAX_EXPONENT = 400;

export class DecimalError extends Error {}

/** value = coefficient × 10^exponent */
export interface Decimal {
  coefficient: bigint;
  exponent: number;
}

export function parseDecimal(text: string): Decimal {
  const match = NUMBER.exec(text);
  if (!match) throw new DecimalError(`${JSON.stringify(text)} is not a JSON number`);
  const [, sign = '', whole = '', fraction = '', power = '0'] = match;
  const exponent = Number(power) - fraction.length;
  if (Math.abs(exponent) > MAX_EXPONENT) throw new DecimalError(`${text} is out of the range this tool sums (exponent beyond ±${MAX_EXPONENT})`);
  return { coefficient: BigInt(`${sign}${whole}${fraction}`), exponent };
}

const POWERS: bigint[] = [];
function pow10(n: number): bigint {
  let power = POWERS[n];
  if (power === undefined) {
    power = 10n ** BigInt(n);
    if (n < 64) POWERS[n] = power;
  }
  return power;
}

function add(a: Decimal, b: Decimal): Decimal {
  if (a.exponent === b.exponent) return { coefficient: a.coefficient + b.coefficient, exponent: a.exponent };
  if (a.exponent > b.exponent) return { coefficient: a.coefficient * pow10(a.exponent - b.exponent) + b.coefficient, exponent: b.exponent };
  return { coefficient: a.coefficient + b.coefficient * pow10(b.exponent - a.exponent), exponent: a.exponent };
}

/** Plain notation, shortest: no exponent, no trailing zeros after the point, no "-0". */
export function formatDecimal(value: Decimal): string {
  const { coefficient, exponent } = value;
  if (coefficient === 0n) return '0';
  if (exponent >= 0) return (coefficient * pow10(exponent)).toString();
  const negative = coefficient < 0n;
  const digits = (negative ? -coefficient : coefficient).toString().padStart(-exponent + 1, '0');
  const point = digits.length + exponent;
  const fraction = digits.slice(point).replace(/0+$/, '');
  return `${negative ? '-' : ''}${digits.slice(0, point)}${fraction ? `.${fraction}` : ''}`;
}

/** The exact sum of two JSON number texts. */
export function addDecimals(a: string, b: string): string {
  return formatDecimal(add(parseDecimal(a), parseDecimal(b)));
}

/** A running total of JSON number texts. */
export class DecimalSum {
  /** the only text added so far, kept as sent */
  private first?: string;
  private count = 0;
  /** integers of up to 15 digits, summed as a double while that is exact */
  private small = 0;
  private big: Decimal = { coefficient: 0n, exponent: 0 };

  add(text: string): void {
    this.count++;
    if (this.count === 1) {
      this.first = text;
      return;
    }
    if (this.count === 2) {
      const first = this.first as string;
      this.first = undefined;
      this.accumulate(first);
    }
    this.accumulate(text);
  }

  private accumulate(text: string): void {
    if (SMALL_INTEGER.test(text)) {
      this.small += Number(text);
      if (this.small > SMALL_LIMIT || this.small < -SMALL_LIMIT) {
        this.big = add(this.big, { coefficient: BigInt(this.small), exponent: 0 });
        this.small = 0;
      }
      return;
    }
    this.big = add(this.big, parseDecimal(text));
  }

  /** how many values were added */
  get size(): number {
    return this.count;
  }

  toString(): string {
    if (this.first !== undefined) return this.first;
    if (this.count === 0) return '0';
    if (this.big.coefficient === 0n) return String(this.small);
    return formatDecimal(this.small === 0 ? this.big : add(this.big, { coefficient: BigInt(this.small), exponent: 0 }));
  }
}
