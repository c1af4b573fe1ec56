// Loaded with `node --import` by test/bench/state.mjs: when the process exits, appends the bytes it
// passed to write(2) (`wchar` of /proc/self/io: every file, pipe and socket) to $BENCH_IO_FILE.

import { appendFileSync, readFileSync } from 'node:fs';

process.on('exit', () => {
  const wchar = /wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1];
  if (process.env.BENCH_IO_FILE && wchar) appendFileSync(process.env.BENCH_IO_FILE, `${wchar}\n`);
});
