#!/usr/bin/env node
// npm run completions: writes completions/ from the commander program (the same text as
// `reporting completion <shell>`). test/completion checks that the files are up to date.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const FILES = { bash: 'reporting.bash', zsh: '_reporting', fish: 'reporting.fish' };
for (const [shell, file] of Object.entries(FILES)) {
  const script = execFileSync(process.execPath, [join(root, 'bin', 'reporting.js'), 'completion', shell], { encoding: 'utf8' });
  writeFileSync(join(root, 'completions', file), script);
  console.log(`completions/${file}`);
}
