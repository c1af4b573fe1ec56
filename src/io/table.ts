// Aligned plain-text tables for the terminal.

/** A plain aligned table; on a narrow terminal the widest column is cut with an ellipsis. */
export function table(header: string[], rows: string[][], width?: number): string {
  const clean = (cell: string) => cell.replace(/\s+/g, ' ');
  const all = [header, ...rows.map((row) => row.map(clean))];
  const widths = header.map((_, i) => Math.max(...all.map((row) => [...(row[i] ?? '')].length)));
  if (width) {
    const total = widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
    const widest = widths.indexOf(Math.max(...widths));
    if (total > width) widths[widest] = Math.max(8, (widths[widest] ?? 0) - (total - width));
  }
  const fit = (cell: string, w: number) => {
    const chars = [...cell];
    return chars.length > w ? `${chars.slice(0, w - 1).join('')}…` : cell + ' '.repeat(w - chars.length);
  };
  return `${all.map((row) => row.map((cell, i) => fit(cell, widths[i] ?? 0)).join('  ').trimEnd()).join('\n')}\n`;
}
