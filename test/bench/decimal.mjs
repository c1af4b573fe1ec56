// Exact decimal sums (src/destinations/decimal.ts): how many additions per second, for the texts a merged
// RANGE run adds up. Run after `npm run build`: node test/bench/decimal.mjs
import { DecimalSum } from '../../dist/destinations/decimal.js';

const N = 2_000_000;
const cases = {
  'counts (integers < 10^6)': (i) => String((i * 7919) % 1_000_000),
  'revenue (9 decimals, as the sandbox sends)': (i) => `${(i * 7919) % 100000}.${String((i * 104729) % 1e9).padStart(9, '0')}`,
  'mixed with exponents': (i) => (i % 3 === 0 ? `${i % 997}e-7` : `${i % 1000}.25`),
};

console.log('| values | additions | DecimalSum | rate | Number() + (inexact) |');
console.log('|---|---|---|---|---|');
for (const [name, make] of Object.entries(cases)) {
  const texts = Array.from({ length: 10_000 }, (_, i) => make(i));
  // 1,000 groups, as a merge holds one sum per distinct key and metric
  const sums = Array.from({ length: 1000 }, () => new DecimalSum());
  let naive = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) sums[i % 1000].add(texts[i % 10_000]);
  for (const sum of sums) sum.toString();
  const t1 = performance.now();
  for (let i = 0; i < N; i++) naive += Number(texts[i % 10_000]);
  const t2 = performance.now();
  if (Number.isNaN(naive)) throw new Error('bad input');
  console.log(`| ${name} | ${N.toLocaleString('en')} | ${(t1 - t0).toFixed(0)} ms | ${((N / (t1 - t0)) * 1000 / 1e6).toFixed(1)} M/s | ${(t2 - t1).toFixed(0)} ms |`);
}
