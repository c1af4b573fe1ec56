// The examples of README.md and docs/: every fenced shell block is run by test/e2e/docs.test.ts,
// so that the docs cannot drift from the CLI. The rules, which a forgotten example cannot slip
// through:
//
// - A block in `sh`, `bash`, `shell` or `console` is an example: each of its commands is run, in
//   order, in one bash per block (a variable set by one line is seen by the next), and must exit
//   0, or the code its line states in a trailing comment: `reporting status "$id"   # exits 6`.
// - A block in any other language (or none) that shows a `reporting` command (a cron line, a
//   Kubernetes manifest) cannot be run, and must say so: the line just before its fence is
//   `<!-- not run: REASON -->`. The same marker before a shell block skips it, with its reason.
// - A marker that is not followed by a fence, or gives no reason, is an error; so is a command
//   that names an absolute path (it would write outside the test's folder): use a relative path.
// - JSON blocks and blocks that show no command are data, not examples (the state file and log
//   examples are checked by test/engine/state.test.ts and test/engine/log.test.ts).

import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

export const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console']);
const MARKER = /^<!--\s*not run:(.*?)-->\s*$/;
const ANY_MARKER = /<!--\s*not[\s_-]*run/i;
/** A `reporting` command in any spelling a non-shell block may have: `reporting run`, YAML's
 * `[reporting, run`, a path ending in `/reporting run`. */
const MENTIONS_CLI = /\breporting\b["',\s\]]+(login|logout|whoami|buyer|seller|status|download|run|jobs|state|campaigns|schema|sandbox|completion|help)\b/;

export interface Command {
  /** 1-based line of the command's first line in its file */
  line: number;
  /** the command as bash will run it: continuation lines joined, a trailing comment removed */
  text: string;
  /** the exit code its comment states (`# exits N`), else 0 */
  exits: number;
}

export interface Block {
  file: string;
  /** 1-based line of the opening fence */
  line: number;
  lang: string;
  body: string;
  /** the marker's reason when the block is marked `<!-- not run: REASON -->` */
  notRun?: string;
  commands: Command[];
}

export interface Extracted {
  /** blocks that are examples: shell blocks, and other blocks that show a command */
  examples: Block[];
  /** what breaks the rules above, as `file:line: why` */
  errors: string[];
}

/** Where a shell comment starts in a line (an unquoted `#` at a word's start), or -1. */
export function commentStart(line: string): number {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '\\') i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] as string))) return i;
  }
  return -1;
}

/** The commands of a shell block: `\` continuations joined, comments and blank lines left out. */
export function commandsOf(body: string, firstLine: number): Command[] {
  const commands: Command[] = [];
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = '';
    let comment = '';
    for (;;) {
      const raw = text ? (lines[i] as string).trimStart() : (lines[i] as string);
      const at = commentStart(raw);
      const code = at < 0 ? raw : raw.slice(0, at);
      if (at >= 0) comment += raw.slice(at);
      if (/\\\s*$/.test(code) && at < 0 && i + 1 < lines.length) {
        text += code.replace(/\s*\\\s*$/, ' ');
        i++;
        continue;
      }
      text += code;
      break;
    }
    text = text.replace(/\s+$/, '').replace(/^\s+/, '');
    if (!text) continue;
    const exits = /#\s*exits (\d+)\b/.exec(comment);
    commands.push({ line: firstLine + 1 + start, text, exits: exits ? Number(exits[1]) : 0 });
  }
  return commands;
}

/** The examples of one Markdown file, and what breaks the rules. */
export function extract(markdown: string, file: string): Extracted {
  const lines = markdown.split('\n');
  const examples: Block[] = [];
  const errors: string[] = [];
  let pending: { reason: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const fence = /^( {0,3})(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (!fence) {
      const marker = MARKER.exec(line.trim());
      if (pending) errors.push(`${file}:${pending.line}: a "not run" marker must be the line just before a fenced block`);
      pending = undefined;
      if (marker) {
        const reason = (marker[1] ?? '').trim();
        if (!reason) errors.push(`${file}:${i + 1}: a "not run" marker needs a reason: <!-- not run: why -->`);
        pending = { reason, line: i + 1 };
      } else if (ANY_MARKER.test(line.replace(/`[^`]*`/g, ''))) {
        errors.push(`${file}:${i + 1}: a "not run" marker is spelled <!-- not run: REASON --> on a line of its own`);
      }
      continue;
    }
    const [, indent, ticks, langRaw] = fence as unknown as [string, string, string, string];
    const open = i;
    const body: string[] = [];
    for (i++; i < lines.length; i++) {
      const current = lines[i] as string;
      if (current.startsWith(`${indent}${ticks}`) && current.slice(indent.length + ticks.length).trim() === '') break;
      body.push(current.startsWith(indent) ? current.slice(indent.length) : current);
    }
    const text = body.join('\n');
    const lang = langRaw.toLowerCase();
    const shell = SHELL_LANGS.has(lang);
    const notRun = pending?.reason;
    pending = undefined;
    if (!shell && !MENTIONS_CLI.test(text)) {
      if (notRun !== undefined) errors.push(`${file}:${open + 1}: a "not run" marker on a block that is not an example (${lang || 'no language'})`);
      continue;
    }
    if (!shell && notRun === undefined) {
      errors.push(`${file}:${open + 1}: a ${lang || 'plain'} block shows a reporting command but cannot be run: mark it <!-- not run: REASON -->, or make it a sh block`);
    }
    const commands = shell ? commandsOf(text, open + 1) : [];
    if (shell && notRun === undefined) {
      if (commands.length === 0) errors.push(`${file}:${open + 1}: a shell block with no command`);
      for (const command of commands) {
        if (/(^|[\s"'=<>(])\/(?!dev\/)[\w.{]/.test(command.text)) {
          errors.push(`${file}:${command.line}: an absolute path would be written or read outside the test's folder: use a relative one, or mark the block not run`);
        }
      }
    }
    examples.push({ file, line: open + 1, lang, body: text, notRun, commands });
  }
  if (pending) errors.push(`${file}:${pending.line}: a "not run" marker must be the line just before a fenced block`);
  return { examples, errors };
}

/** README.md and every Markdown file under docs/, as paths relative to the root. */
export function docFiles(root: string): string[] {
  const found = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(relative(root, join(root, path)));
    }
  };
  walk('docs');
  return found;
}

export function extractAll(root: string): Extracted {
  const all: Extracted = { examples: [], errors: [] };
  for (const file of docFiles(root)) {
    const { examples, errors } = extract(readFileSync(join(root, file), 'utf8'), file);
    all.examples.push(...examples);
    all.errors.push(...errors);
  }
  return all;
}

/** The programs a command runs (the first word of each pipeline stage, command substitution and
 * `&&`/`||` part), so that a block needing a missing tool is skipped with that reason. */
export function programsOf(command: string): string[] {
  const programs = new Set<string>();
  const stages = command.replace(/'[^']*'/g, "''").split(/\|\||&&|[|;]|\$\(|<\(/);
  for (const stage of stages) {
    const words = stage.trim().split(/\s+/).filter((word) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word));
    const first = words[0];
    if (first && /^[a-z][\w.-]*$/.test(first)) programs.add(first);
  }
  return [...programs];
}
