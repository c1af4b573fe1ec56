// Getting a window's report: resume the one an earlier run submitted (from the state file or the
// journal) when the server still knows it, else submit a new one. A report ID the server has
// forgotten (404: its reports expire), or that ended in failure, is not an error: the window is
// submitted again, and the log says which report the new one replaces.

import type { StatusResponse } from '../api/schemas.js';
import { ApiRejectedError } from '../errors.js';
import type { LogEvent, ResumeSource } from './events.js';
import { isFailed } from '../report/poll.js';
import type { Window } from '../report/windows.js';

/** The server answered 404 for a report ID: it never knew it, or forgot it. */
export const isForgotten = (error: unknown): boolean => error instanceof ApiRejectedError && error.status === 404;

export interface Previous {
  reportId: string;
  source: ResumeSource;
}

export interface StartDeps {
  /** submits this window's report; resolves with its ID */
  submit(): Promise<string>;
  /** one status request (the client's) */
  status(reportId: string): Promise<StatusResponse>;
  emit(event: LogEvent): void;
  /** records a new report ID as soon as it is known (state file, journal), before any wait */
  onSubmitted(reportId: string, attempt: number): Promise<void>;
}

export interface Started {
  reportId: string;
  resumed: boolean;
  /** the status answered when resuming (the wait can start from it) */
  status?: StatusResponse;
}

/**
 * The report for `window`: `previous` resumed if the server knows it, else a new submission
 * (attempt number `attempt`, from 1).
 */
export async function startReport(window: Window, previous: Previous | undefined, attempt: number, deps: StartDeps): Promise<Started> {
  let replaces: string | undefined;
  let ended: string | undefined;
  if (previous) {
    try {
      const status = await deps.status(previous.reportId);
      // a report that ended in failure (or expired, or was canceled) will never be ready
      if (isFailed(status)) {
        replaces = previous.reportId;
        ended = status.status;
      } else {
        deps.emit({ event: 'resumed', window, reportId: previous.reportId, source: previous.source });
        return { reportId: previous.reportId, resumed: true, status };
      }
    } catch (error) {
      if (!isForgotten(error)) throw error;
      replaces = previous.reportId;
    }
  }
  const reportId = await deps.submit();
  await deps.onSubmitted(reportId, attempt);
  deps.emit({ event: 'submitted', window, reportId, attempt, replaces, ...(ended === undefined ? {} : { replacedStatus: ended }) });
  return { reportId, resumed: false };
}
