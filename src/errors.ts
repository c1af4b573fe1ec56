// Typed errors, one per exit code of SPEC section 4. Commands throw them; only src/cli.ts turns
// them into an exit code and a one-line message.

export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  auth: 3,
  rejected: 4,
  network: 5,
  report: 6,
  /** the command stopped without a result: what it waited for could never answer */
  unfinished: 70,
  interrupted: 130,
} as const;

export class CliError extends Error {
  /** the command's log is JSON (a job file's `log-format: json`): this error, its last line, too */
  jsonLog = false;
  /** the flag the error is about, as written (`--until`, `-o`): a job file's error is placed at
   * that key's value (src/commands/jobs.ts) */
  flag?: string;

  constructor(
    message: string,
    readonly exitCode: number,
    /** a second line telling the user what to do */
    readonly hint?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** Names the flag the error is about (none: undefined). */
  about(flag: string | undefined): this {
    if (flag !== undefined) this.flag = flag;
    return this;
  }
}

export class UsageError extends CliError {
  constructor(message: string, hint?: string) {
    super(message, EXIT.usage, hint);
  }
}

export class AuthError extends CliError {
  constructor(message: string, hint = 'run `reporting login` (or set REPORTING_TOKEN)') {
    super(message, EXIT.auth, hint);
  }
}

/** The API understood the request and refused it (a 4xx other than authentication). */
export class ApiRejectedError extends CliError {
  constructor(message: string, readonly status: number, readonly errorId?: string, hint?: string) {
    super(message, EXIT.rejected, hint);
  }
}

/** Network failures, 5xx after retries, and answers that do not match the contract. */
export class NetworkError extends CliError {
  constructor(message: string, hint?: string) {
    super(message, EXIT.network, hint);
  }
}

/** A downloaded report is not the one asked for: its summary names another period or other
 * breakdowns (a report ID recorded for the wrong window, a server that answers something else). */
export class ReportMismatchError extends CliError {
  constructor(message: string) {
    super(message, EXIT.network, 'nothing was written for it; the next run submits it again');
  }
}

/** HTTP 429 still, after the client's retries: the API is refusing more work for now. */
export class ThrottledError extends NetworkError {
  constructor(message: string, readonly retryAfterMs?: number, hint?: string) {
    super(message, hint);
  }
}

export class UnexpectedResponseError extends CliError {
  constructor(message: string, readonly excerpt?: string) {
    super(message, EXIT.network, 'run again with -v to see what the server answered');
  }
}

/** The report failed, or was not ready in time. */
export class ReportError extends CliError {
  constructor(message: string, readonly reportId: string, hint?: string) {
    super(message, EXIT.report, hint);
  }
}

/** The report itself ended in a failure status: it will never be ready (unlike a wait that gave up). */
export class ReportFailedError extends ReportError {}

export class InterruptedError extends CliError {
  /** true when the call it stopped never went out: nothing of it reached the server */
  unsent = false;

  constructor(readonly signal: string, hint?: string) {
    super(`interrupted (${signal})`, signal === 'SIGTERM' ? 143 : EXIT.interrupted, hint);
  }
}

/** Why writing a file (or stdout) failed, in words: `cannot write PATH: <this>`. Shared by the
 * file sinks and the process edge (`--version > /dev/full`), so that one failure reads the same
 * everywhere. */
export function whyWriteFailed(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === 'ENOSPC' ? 'the disk is full'
    : code === 'EACCES' || code === 'EPERM' ? 'permission denied'
      : code === 'EROFS' ? 'the file system is read-only'
        : code === 'ENOTDIR' || code === 'EISDIR' ? 'not a file path'
          // /proc and the like answer ENOENT to mkdir in a folder that exists
          : code === 'ENOENT' && (error as NodeJS.ErrnoException).syscall === 'mkdir' ? 'the file system there does not allow creating folders'
            : error instanceof Error ? error.message : String(error);
}
