// Commands printed for the user to paste ("pick it up later with: reporting download ...") hold
// server-chosen IDs and user paths: every word is quoted for POSIX shells, so pasting one runs
// exactly that command and nothing else.

// words made only of these need no quotes in sh, bash, zsh or dash (`=` not first: zsh expands `=cmd`)
const PLAIN = /^[A-Za-z0-9_./:@+,-][A-Za-z0-9_./:=@+,-]*$/;

/** One word, quoted for a POSIX shell when it needs to be: `it's` becomes `'it'\''s'`. */
export function shellQuote(word: string): string {
  if (PLAIN.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line of words, each quoted as needed. */
export function shellCommand(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
