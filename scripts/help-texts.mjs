// Writes dist/help.json: what commander prints for `reporting [command...] --help`, for every
// command, plain and 100 columns wide, so that src/main.ts can answer help without loading the
// program (src/cli/quick-help.ts says when). Run by `npm run build`, after tsc (it runs dist/cli/program.js).
import { readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';

const dist = new URL('../dist/', import.meta.url);
const { helpCases, runCli } = await import(new URL('cli/program.js', dist).href);
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** A terminal-less stream, as a pipe is: no isTTY, no columns. */
const collector = () => {
  const stream = new Writable({ write(chunk, _encoding, callback) { stream.text += chunk; callback(); } });
  stream.text = '';
  return stream;
};
const context = () => ({
  stdout: collector(), stderr: collector(), stdin: undefined, env: {}, cwd: process.cwd(), now: () => Date.now(),
  random: Math.random, signal: new AbortController().signal, version, host: undefined,
});

const { paths, env } = helpCases(context());
const texts = {};
for (const words of paths) {
  const ctx = context();
  const code = await runCli(['node', 'reporting', ...words, '--help'], ctx);
  if (code !== 0 || ctx.stderr.text !== '') throw new Error(`reporting ${words.join(' ')} --help: exit ${code}, ${ctx.stderr.text}`);
  texts[words.join(' ')] = ctx.stdout.text;
}
writeFileSync(new URL('help.json', dist), JSON.stringify({ env, texts }));
