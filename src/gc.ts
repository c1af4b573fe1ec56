// A full garbage collection on demand, for the few places where V8 collects too late for the
// memory targets (measured: test/bench/RESULTS.md, "Parquet memory" and "Chunked runs"). V8 exposes
// its collector to code only behind a flag, which may be set while running; where it cannot be,
// this is a no-op.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
})();

export function collectGarbage(): void {
  gc?.();
}
