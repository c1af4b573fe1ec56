// A plain aligned table for the terminal. Columns are padded by display width (an emoji or a CJK
// character takes two columns, a combining accent none), cells are shown through the one sanitizer,
// and on a terminal the table fits its width: the widest columns are cut with an ellipsis.

import stringWidth from 'string-width';
import { safeLine } from './safe-text.js';

// string-width segments every string (Intl.Segmenter); plain ASCII, most cells, needs none of it
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
function displayWidth(text: string): number {
  return PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
}

/** A column is never cut narrower than this (or its heading). */
const MIN_WIDTH = 8;

function truncate(text: string, width: number): string {
  let out = '';
  let used = 0;
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    const w = displayWidth(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return `${out}…`;
}

function fit(cell: string, cellWidth: number, width: number): string {
  if (cellWidth > width) {
    const cut = truncate(cell, width);
    return cut + ' '.repeat(Math.max(0, width - displayWidth(cut)));
  }
  return cell + ' '.repeat(width - cellWidth);
}

/** A column is cut below MIN_WIDTH (or its heading) only when the columns kept whole need it. */
const LAST_WIDTH = 4;

/**
 * The table as text; `width` is the terminal's (undefined when not a terminal: nothing is cut).
 * Columns in `keep` (dates, IDs, counts: a cut one means nothing) are cut only once the others are
 * as narrow as they can be.
 */
export function table(header: string[], rows: string[][], width?: number, options: { keep?: readonly number[] } = {}): string {
  const all = [header, ...rows.map((row) => row.map(safeLine))];
  const cellWidths = all.map((row) => row.map(displayWidth));
  // loops, not Math.max(...): a spread of 200,000 values overflows the call stack
  const widths = header.map(() => 0);
  for (const row of cellWidths) row.forEach((w, i) => { if (w > (widths[i] ?? 0)) widths[i] = w; });
  if (width) {
    const keep = new Set(options.keep ?? []);
    const floor = header.map((heading) => Math.max(MIN_WIDTH, displayWidth(heading)));
    let total = widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
    // the others to their floor, then below it, and only then the columns kept whole
    const passes: [(i: number) => boolean, (i: number) => number][] = [
      [(i) => !keep.has(i), (i) => floor[i] ?? 0],
      [(i) => !keep.has(i), () => LAST_WIDTH],
      [(i) => keep.has(i), (i) => floor[i] ?? 0],
    ];
    for (const [eligible, least] of passes) {
      while (total > width) {
        // narrow the widest column that can still give, one column of characters at a time
        let widest = -1;
        widths.forEach((w, i) => { if (eligible(i) && w > least(i) && (widest < 0 || w > (widths[widest] ?? 0))) widest = i; });
        if (widest < 0) break;
        widths[widest] = (widths[widest] ?? 0) - 1;
        total--;
      }
    }
  }
  const lines = all.map((row, r) => row.map((cell, i) => fit(cell, cellWidths[r]?.[i] ?? 0, widths[i] ?? 0)).join('  ').trimEnd());
  return `${lines.join('\n')}\n`;
}
