// Knowing that output left the process, before exiting.

/** Resolves once everything written so far left the process (or failed): an empty write calls
 * back after the writes before it. */
export function flushed(stream: { write(chunk: string, callback?: (error?: Error | null) => void): boolean }): Promise<void> {
  return new Promise((resolve) => {
    try {
      stream.write('', () => resolve());
    } catch {
      resolve();
    }
  });
}
