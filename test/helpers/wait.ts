// Waiting for something a test can observe, instead of sleeping for a fixed time.

/** Resolves once `condition` holds (checked every 20 ms; it may ask a server, and be awaited);
 * fails with `what` after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
