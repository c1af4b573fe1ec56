#!/usr/bin/env node
// A stand-in for the `duckdb` command line, for test/e2e/docs.test.ts where the real one is not
// installed: the same engine (@duckdb/node-api, a dev dependency), the few things the docs use:
// `duckdb [DATABASE] -c SQL ...`, where SQL may be the dot command `.read FILE`. Each result is
// printed as tab-separated lines. An error is printed on stderr and exits 1, as duckdb does.

import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
const database = args[0] && !args[0].startsWith('-') ? args.shift() : ':memory:';
const commands = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '-c' && i + 1 < args.length) commands.push(args[++i]);
  else {
    console.error(`duckdb (test stand-in): unsupported argument ${args[i]}`);
    process.exit(2);
  }
}
try {
  const instance = await DuckDBInstance.create(database);
  const connection = await instance.connect();
  for (const command of commands) {
    const read = /^\.read\s+(\S+)\s*$/.exec(command.trim());
    const sql = read ? readFileSync(read[1], 'utf8') : command;
    const result = await connection.runAndReadAll(sql);
    const rows = result.getRows();
    if (result.columnCount > 0 && rows.length) {
      console.log(result.columnNames().join('\t'));
      for (const row of rows) console.log(row.map((value) => String(value)).join('\t'));
    }
  }
  connection.closeSync?.();
} catch (error) {
  console.error(`Error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
