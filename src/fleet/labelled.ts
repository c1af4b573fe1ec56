// Several jobs write to one stderr: each job's lines say whose they are. A JSON log line gets
// `job` and `profile` after `v` and `ts`; a text line starts with the job's name. Lines are
// written whole (a job's partial line waits for its end), so jobs' lines never interleave.

import type { Output } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { jsonLine, safeText } from '../io/safe-text.js';

export function labelledOutput(target: Output, job: string, profile: string, redact: (text: string) => string = (text) => text): Output & { flush(): void } {
  let pending = '';
  const line = (raw: string) => {
    // what `${VAR}` read (a job's words, in a retry command) is masked like the command's secrets
    const text = redact(raw);
    if (text.startsWith('{')) {
      try {
        const { v, ts, ...rest } = JSON.parse(text) as Record<string, unknown>;
        return jsonLine({ v, ts, job, profile, ...rest });
      } catch {
        // not a JSON line after all: labelled as text
      }
    }
    return `${job}: ${text}`;
  };
  const output: Output & { flush(): void } = {
    isTTY: false,
    columns: target.columns,
    write(chunk, callback) {
      pending += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const end = pending.lastIndexOf('\n');
      if (end >= 0) {
        // a live line's carriage returns and clears mean nothing off a terminal
        const lines = pending.slice(0, end).split('\n').map((text) => text.replace(/^.*\r(\u001b\[K)?/, '')).filter((text) => text !== '');
        pending = pending.slice(end + 1);
        if (lines.length > 0) return target.write(`${lines.map(line).join('\n')}\n`, callback);
      }
      callback?.();
      return true;
    },
    once: (event, listener) => target.once(event, listener),
    off: (event, listener) => target.off?.(event, listener),
    flush() {
      if (pending !== '') target.write(`${line(pending)}\n`);
      pending = '';
    },
  };
  return output;
}

/** A job's error, as `run` would print it, on the job's own lines (a JSON line with JSON logs). */
export function writeJobError(stderr: Output, error: unknown, how: { json: boolean; at: number; redact: (text: string) => string }): void {
  const message = error instanceof Error ? error.message : String(error);
  const hint = error instanceof CliError ? error.hint : undefined;
  const exitCode = error instanceof CliError ? error.exitCode : EXIT.internal;
  if (how.json) {
    stderr.write(`${jsonLine({ v: 1, ts: new Date(how.at).toISOString(), event: 'error', message: how.redact(message), ...(hint ? { hint: how.redact(hint) } : {}), exitCode })}\n`);
    return;
  }
  stderr.write(`error: ${safeText(how.redact(message.replace(/\s*\n\s*/g, ' ')))}\n`);
  if (hint) stderr.write(`hint: ${safeText(how.redact(hint))}\n`);
}
