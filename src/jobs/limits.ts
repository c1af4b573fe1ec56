// The bounds of --concurrency, apart from the pool so that declaring the flag loads nothing else.

export const MAX_CONCURRENCY = 16;
/**
 * Measured (test/bench/RESULTS.md, "Chunked runs"): against a platform that runs 8 reports at once,
 * wall time falls as 1/N up to 8; 16 is 15% slower than 8 (429s, halving, Retry-After), 4 twice as
 * slow. Overshooting a platform's limit costs little (AIMD settles under it), undershooting costs
 * in proportion, so the default is 8.
 */
export const DEFAULT_CONCURRENCY = 8;
