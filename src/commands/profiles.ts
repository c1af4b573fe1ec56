// `__profiles` (hidden): the profile names, one per line, for completion scripts at Tab time.

import type { Factory } from '../factory.js';

export type ProfilesOptions = Record<string, never>;

export async function run(_opts: ProfilesOptions, f: Factory): Promise<void> {
  try {
    const names = Object.keys(f.store().profiles()).sort();
    if (names.length) f.stdout.write(`${names.join('\n')}\n`);
  } catch {
    // an unreadable store completes nothing
  }
}
