// Where destinations are chosen: one line per kind. A new kind (a database table, an object in a
// bucket) is a new file implementing Destination and one line here.

import type { Window } from '../report/windows.js';
import type { Destination } from './destination.js';
import type { Format } from '../export/output.js';
import type { CsvOptions } from '../export/writers.js';
import { MergedOutput } from './merged.js';
import type { OutputSpec } from './outputs.js';
import { PerWindowFiles } from './per-window.js';
import { FanOut } from './fanout.js';
import { TableDestination, type TableSpec } from './table.js';

export type { Committed, Destination, Receiver, WindowOutput } from './destination.js';

/** One output of the run: its format, CSV options and file. */
export interface OutputChoice {
  format: Format;
  csv: CsvOptions;
  /** -o's template, expanded for a window and a report ID; undefined: stdout */
  fileOf?: (window: Window, reportId: string) => string;
}

export interface DestinationChoice extends OutputSpec, OutputChoice {
  /** -o repeated: the outputs after the first, each written whole from the same body */
  more?: readonly OutputChoice[];
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
  const outputs = [choice, ...choice.more ?? []].map((output) => files({ ...choice, ...output }));
  if (table) return fileOf || choice.stdoutToo || outputs.length > 1 ? new FanOut(new TableDestination(table), ...outputs) : new TableDestination(table);
  const [first, ...rest] = outputs as [Destination, ...Destination[]];
  return rest.length ? new FanOut(first, ...rest) : first;
}

function files(choice: DestinationChoice): Destination {
  const { fileOf } = choice;
  if (choice.perWindow && fileOf) return new PerWindowFiles((window) => fileOf(window, ''), choice);
  return new MergedOutput((reportId) => fileOf?.(choice.period, reportId), choice.period, choice);
}
