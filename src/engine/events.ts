// What a run tells about itself: one typed union, consumed by the views (src/engine/view.ts: the
// terminal's live line, plain text lines, the JSON log of src/engine/log.ts). Stages emit events;
// they never format a line themselves.

import type { Window } from '../report/windows.js';

/** Where a resumed report ID came from. */
export type ResumeSource = 'state' | 'journal';
export type SkipReason = 'done';

export type LogEvent =
  | { event: 'submitted'; window: Window; reportId: string; attempt: number; /** the report ID it replaces, forgotten by the server */ replaces?: string; /** or ended in this status */ replacedStatus?: string }
  | { event: 'resumed'; window: Window; reportId: string; source: ResumeSource }
  | { event: 'polled'; window: Window; reportId: string; status: string; polls: number; durationMs: number }
  | { event: 'ready'; window: Window; reportId: string; polls: number; durationMs: number }
  | { event: 'failed'; window: Window; reportId?: string; attempt?: number; message: string; durationMs?: number; /** the report is kept: the next run resumes it (--max-wait gave up, the network) */ resumable?: true }
  | { event: 'split'; window: Window; reportId?: string; into: readonly [Window, Window]; message: string }
  | { event: 'done'; window: Window; fetched: number; skipped: number; unchanged: number; rows: number; files: readonly string[]; exitCode: 0; durationMs: number }
  | { event: 'warning'; window: Window; reportId?: string; message: string }
  /** the token was refused and a new one got from the environment's login (said once a process) */
  | { event: 'relogin'; window: Window; message: string }
  | { event: 'retried'; window: Window; reportId?: string; attempt: number; message: string; delayMs?: number }
  | { event: 'download_started'; window: Window; reportId: string; attempt: number; file?: string }
  | { event: 'download_done'; window: Window; reportId: string; rows: number; bytes: number; durationMs: number }
  | { event: 'loaded'; window: Window; reportId?: string; table: string; rows: number; sha256: string }
  | { event: 'written'; window: Window; reportId?: string; file?: string; rows: number; /** of the file (unknown for stdout) */ bytes?: number; sha256?: string }
  | { event: 'unchanged'; window: Window; reportId?: string; file?: string; table?: string; rows: number; bytes?: number; sha256: string }
  | { event: 'skipped'; window: Window; reportId?: string; file?: string; reason: SkipReason };

export type EventName = LogEvent['event'];
