// A report's body, streamed: chunks, backpressure, and the body faults (reset, stall).

import type { ServerResponse } from 'node:http';
import type { BodyFault } from './faults.js';

const CHUNK = 64 * 1024;

/** Writes a streamed body in chunks, with backpressure, and plays the body faults. */
export class BodyWriter {
  private buffer = '';
  private sent = 0;
  stopped = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly reset: BodyFault | undefined,
    private readonly stall: BodyFault | undefined,
    private readonly pending: Set<() => void>,
  ) {
    res.on('close', () => { this.stopped = true; });
  }

  async write(text: string): Promise<void> {
    this.buffer += text;
    if (this.buffer.length >= CHUNK) await this.flush();
  }

  async end(truncate: boolean): Promise<void> {
    if (truncate) this.buffer = this.buffer.slice(0, Math.max(1, Math.floor(this.buffer.length / 2)));
    await this.flush();
    if (!this.stopped) this.res.end();
  }

  private async flush(): Promise<void> {
    if (this.stopped || this.buffer === '') return;
    let bytes = Buffer.from(this.buffer);
    this.buffer = '';
    const limit = Math.min(this.reset?.afterBytes ?? Infinity, this.stall?.afterBytes ?? Infinity);
    if (this.sent + bytes.length >= limit && limit !== Infinity) {
      // send exactly up to the fault's byte (possibly inside a UTF-8 sequence), then misbehave
      bytes = bytes.subarray(0, limit - this.sent);
      await this.send(bytes);
      this.stopped = true;
      if (this.reset && this.reset.afterBytes === limit) {
        // give the client time to read what was sent, so the reset lands mid-body
        await new Promise((resolve) => setTimeout(resolve, 30));
        this.res.socket?.resetAndDestroy();
      } else {
        // stall: keep the connection open and silent until the client gives up or we close
        await new Promise<void>((resolve) => {
          this.pending.add(resolve);
          this.res.on('close', () => { this.pending.delete(resolve); resolve(); });
        });
      }
      return;
    }
    await this.send(bytes);
  }

  private send(bytes: Buffer): Promise<void> {
    this.sent += bytes.length;
    return new Promise<void>((resolve) => {
      if (bytes.length === 0) return resolve();
      const more = this.res.write(bytes);
      if (more) return resolve();
      const done = () => { this.res.off('drain', done); this.res.off('close', done); resolve(); };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }
}
