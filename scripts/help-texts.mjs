// Writes dist/help.json: what commander prints for `reporting [command...] --help`, for every
// command, 100 columns wide, plain, and which of its lines are titles, bold on a colour terminal;
// so that src/main.ts can answer help without loading the program (src/cli/quick-help.ts says
// when). Run by `npm run build`, after tsc (it runs dist/cli/program.js).
import { readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';

const dist = new URL('../dist/', import.meta.url);
const { helpCases, runCli } = await import(new URL('cli/program.js', dist).href);
const { withBoldTitles } = await import(new URL('cli/quick-help.js', dist).href);
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** A terminal-less stream, as a pipe is (no isTTY, no columns), or a terminal 100 columns wide. */
const collector = (tty = false) => {
  const stream = new Writable({ write(chunk, _encoding, callback) { stream.text += chunk; callback(); } });
  stream.text = '';
  if (tty) Object.assign(stream, { isTTY: true, columns: 100 });
  return stream;
};
const context = (tty = false) => ({
  stdout: collector(tty), stderr: collector(), stdin: undefined, env: {}, cwd: process.cwd(), now: () => Date.now(),
  random: Math.random, signal: new AbortController().signal, version, host: undefined,
});

const help = async (words, tty) => {
  const ctx = context(tty);
  const code = await runCli(['node', 'reporting', ...words, '--help'], ctx);
  if (code !== 0 || ctx.stderr.text !== '') throw new Error(`reporting ${words.join(' ')} --help: exit ${code}, ${ctx.stderr.text}`);
  return ctx.stdout.text;
};

const { paths, env } = helpCases(context());
const texts = {};
const titles = {};
// commander keeps styles only where it sees colours (its own rule, on this process's stdout)
process.env.FORCE_COLOR = '1';
for (const words of paths) {
  const key = words.join(' ');
  texts[key] = await help(words, false);
  const bold = await help(words, true);
  // each title: its line and its length (a title starts its line: `Usage: reporting ...`, `Options:`)
  titles[key] = bold.split('\n').flatMap((line, at) => (line.startsWith('\u001b[1m') ? [[at, line.indexOf('\u001b[22m') - 4]] : []));
  if (withBoldTitles(texts[key], titles[key]) !== bold) throw new Error(`reporting ${key} --help: the colour text is not the plain text with bold titles`);
}
writeFileSync(new URL('help.json', dist), JSON.stringify({ env, texts, titles }));
