// `-o` and `--load` together: every window goes to both, its report body read once and handed to
// each (the slower one sets the pace: nothing is held but the chunk in hand). The table commits
// first, then the file: a file is never ahead of the table it describes.

import type { Window } from '../report/windows.js';
import type { Committed, Destination, WindowOutput } from './destination.js';

export class FanOut implements Destination {
  constructor(private readonly first: Destination, private readonly second: Destination) {}

  async prepare(): Promise<void> {
    await this.first.prepare?.();
    await this.second.prepare?.();
  }

  async begin(piece: Window, origin: Window, reportId: string): Promise<WindowOutput> {
    const a = await this.first.begin(piece, origin, reportId);
    const b = await this.second.begin(piece, origin, reportId);
    return {
      take: async (body, progress) => {
        const [left, right] = tee(body);
        const [result] = await Promise.all([a.take(left, progress), b.take(right)]);
        return result;
      },
      get restartable() { return a.restartable && b.restartable; },
      abort: async () => { await Promise.allSettled([a.abort(), b.abort()]); },
      commit: async () => [...await a.commit(), ...await b.commit()],
    };
  }

  async finish(): Promise<Committed[]> {
    return [...await this.first.finish(), ...await this.second.finish()];
  }

  async abort(): Promise<void> {
    await Promise.allSettled([this.first.abort(), this.second.abort()]);
  }
}

/** Two readers of one body, in step: neither gets more than two chunks ahead of the other, so
 * memory holds two chunks at most. A reader that stops early (its consumer failed) ends the other
 * with an error. */
export function tee<T>(source: AsyncIterable<T>): [AsyncIterable<T>, AsyncIterable<T>] {
  const iterator = source[Symbol.asyncIterator]();
  const buffer: Promise<IteratorResult<T>>[] = [];
  let base = 0;
  const position = [0, 0];
  let stopped: Error | undefined;
  let wake: (() => void) | undefined;
  const next = async (reader: 0 | 1): Promise<IteratorResult<T>> => {
    const other = 1 - reader;
    while (!stopped && position[reader]! - position[other]! >= 2) await new Promise<void>((resolve) => { wake = resolve; });
    if (stopped) throw stopped;
    const at = position[reader]!++;
    if (at - base === buffer.length) buffer.push(iterator.next());
    const result = buffer[at - base] as Promise<IteratorResult<T>>;
    while (base < Math.min(position[0]!, position[1]!)) { buffer.shift(); base++; }
    const woken = wake;
    wake = undefined;
    woken?.();
    return result;
  };
  const reader = (index: 0 | 1): AsyncIterable<T> => ({
    [Symbol.asyncIterator]: () => ({
      next: () => next(index),
      return: async () => {
        stopped ??= new Error('the other destination of this window failed');
        const woken = wake;
        wake = undefined;
        woken?.();
        await iterator.return?.();
        return { done: true, value: undefined };
      },
    }),
  });
  return [reader(0), reader(1)];
}
