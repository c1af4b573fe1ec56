// Several destinations of one run (`-o` repeated, `-o` and `--load` together): every window goes
// to each, its report body read once and handed to all (the slowest sets the pace: nothing is held
// but the chunks in hand). Each output takes the whole body before any is committed; then they
// commit in order: the table first, then the files, so that a file is never ahead of the table it
// describes. A take that fails aborts them all (nothing is put in place); a commit that fails
// leaves those committed before it (each whole) and aborts the others, and the run fails.

import type { Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';

export class FanOut implements Destination {
  private readonly all: readonly Destination[];

  /** `outputs`: several files (-o repeated), whose commits are one record (`Committed.others`) */
  constructor(first: Destination, ...rest: Destination[]) {
    this.all = [first, ...rest];
  }

  async prepare(): Promise<void> {
    for (const destination of this.all) await destination.prepare?.();
  }

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    const outputs: WindowOutput[] = [];
    try {
      for (const destination of this.all) outputs.push(await destination.begin(piece, origin, reportId));
    } catch (error) {
      await Promise.allSettled(outputs.map((output) => output.abort()));
      throw error;
    }
    return {
      take: async (body, progress) => {
        const readers = tee(body, outputs.length);
        const results = await Promise.allSettled(outputs.map((output, i) => output.take(readers[i] as AsyncIterable<Uint8Array>, i === 0 ? progress : undefined)));
        // the first failure is the cause: the others were ended by it (tee)
        const failed = results.find((result) => result.status === 'rejected' && !(result.reason instanceof OtherFailed));
        const any = failed ?? results.find((result) => result.status === 'rejected');
        if (any) throw (any as PromiseRejectedResult).reason;
        return (results[0] as PromiseFulfilledResult<Awaited<ReturnType<WindowOutput['take']>>>).value;
      },
      get restartable() { return outputs.every((output) => output.restartable); },
      abort: async () => { await Promise.allSettled(outputs.map((output) => output.abort())); },
      commit: async () => {
        const committed: Committed[][] = [];
        for (const [i, output] of outputs.entries()) {
          try {
            committed.push(await output.commit());
          } catch (error) {
            await Promise.allSettled(outputs.slice(i + 1).map((rest) => rest.abort()));
            throw error;
          }
        }
        return together(committed);
      },
    };
  }

  async finish(): Promise<Committed[]> {
    const committed: Committed[][] = [];
    for (const destination of this.all) committed.push(await destination.finish());
    return together(committed);
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.all.map((destination) => destination.abort()));
  }
}

/** What several destinations committed: a table's as it is; the files' (-o repeated), which hold
 * the same windows in the same order, as one record each: the first output's, the others in
 * `others` (the state records a window done once every output holds it). */
function together(committed: readonly Committed[][]): Committed[] {
  const tables = committed.flat().filter((output) => output.table !== undefined);
  const files = committed.map((outputs) => outputs.filter((output) => output.table === undefined)).filter((outputs) => outputs.length > 0);
  const [first, ...rest] = files;
  if (!first) return tables;
  return [...tables, ...first.map((output, i) => (rest.length ? { ...output, others: rest.map((outputs) => outputs[i] as Committed) } : output))];
}

/** The error of a reader ended because another reader of the body failed. */
export class OtherFailed extends Error {
  constructor() {
    super('another output of this window failed');
  }
}

/** `count` readers of one body, in step: none gets more than two chunks ahead of the slowest, so
 * memory holds two chunks at most. A reader that stops early (its consumer failed) ends the others
 * with an error. */
export function tee<T>(source: AsyncIterable<T>, count = 2): AsyncIterable<T>[] {
  const iterator = source[Symbol.asyncIterator]();
  const buffer: Promise<IteratorResult<T>>[] = [];
  let base = 0;
  const position = new Array<number>(count).fill(0);
  let stopped: Error | undefined;
  let waiting: (() => void)[] = [];
  const wakeAll = () => {
    const woken = waiting;
    waiting = [];
    for (const wake of woken) wake();
  };
  const slowest = () => Math.min(...position);
  const next = async (reader: number): Promise<IteratorResult<T>> => {
    while (!stopped && position[reader]! - slowest() >= 2) await new Promise<void>((resolve) => { waiting.push(resolve); });
    if (stopped) throw stopped;
    const at = position[reader]!++;
    if (at - base === buffer.length) buffer.push(iterator.next());
    const result = buffer[at - base] as Promise<IteratorResult<T>>;
    const least = slowest();
    while (base < least) { buffer.shift(); base++; }
    wakeAll();
    return result;
  };
  const reader = (index: number): AsyncIterable<T> => ({
    [Symbol.asyncIterator]: () => ({
      next: () => next(index),
      return: async () => {
        stopped ??= new OtherFailed();
        wakeAll();
        await iterator.return?.();
        return { done: true, value: undefined };
      },
    }),
  });
  return Array.from({ length: count }, (_, index) => reader(index));
}
