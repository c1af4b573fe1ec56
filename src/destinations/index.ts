// Where destinations are chosen: one line per kind. A new kind (a database table, an object in a
// bucket) is a new file implementing Destination and one line here.

import type { Window } from '../report/windows.js';
import type { Destination } from './destination.js';
import { MergedOutput } from './merged.js';
import type { OutputSpec } from './outputs.js';
import { PerWindowFiles } from './per-window.js';
import { FanOut } from './fanout.js';
import { TableDestination, type TableSpec } from './table.js';

export type { Committed, Destination, Receiver, WindowOutput } from './destination.js';

export interface DestinationChoice extends OutputSpec {
  /** -o's template, expanded for a window and a report ID; undefined: stdout */
  fileOf?: (window: Window, reportId: string) => string;
  /** one file per planned window */
  perWindow: boolean;
  /** one report streamed straight in */
  whole: boolean;
  /** the run's period (a merged output stands for it) */
  period: Window;
  /** --load: a table (with -o too: both) */
  table?: TableSpec;
  /** `-o -` given with --load: stdout as well as the table */
  stdoutToo?: boolean;
}

export function chooseDestination(choice: DestinationChoice): Destination {
  const { fileOf, table } = choice;
  if (table) return fileOf || choice.stdoutToo ? new FanOut(new TableDestination(table), files(choice)) : new TableDestination(table);
  return files(choice);
}

function files(choice: DestinationChoice): Destination {
  const { fileOf } = choice;
  if (choice.perWindow && fileOf) return new PerWindowFiles((window) => fileOf(window, ''), choice);
  return new MergedOutput((reportId) => fileOf?.(choice.period, reportId), choice.period, choice);
}
