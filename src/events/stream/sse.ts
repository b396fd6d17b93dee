import { PassThrough } from 'node:stream';

/**
 * The body of a `text/event-stream` answer (Server-Sent Events). Writes wait while the client reads
 * slower than events come: what is waiting is at most one write (about 16 KiB of events, stream.ts)
 * past the stream's buffer (16 KiB), never a queue that grows with the reader's lag (a reader that
 * falls behind is caught up from the log instead, stream.ts).
 */
export class SseBody {
  readonly body = new PassThrough();
  private ended = false;

  constructor() {
    this.body.on('close', () => (this.ended = true));
  }

  get open(): boolean {
    return !this.ended && !this.body.destroyed;
  }

  /**
   * Events, one message each: `id` is what a reconnecting client sends back as Last-Event-ID, `data`
   * the body (one line: stored bodies are JSON without line breaks).
   */
  events(events: { id: string; body: string }[]): Promise<void> {
    let text = '';
    for (const event of events) text += `id: ${event.id}\ndata: ${event.body}\n\n`;
    return this.write(text);
  }

  /** A comment line, which clients ignore: keeps idle connections (and proxies) from timing out. */
  comment(text: string): Promise<void> {
    return this.write(`: ${text}\n\n`);
  }

  /** The `retry` field: how long a client such as EventSource waits before it reconnects. */
  retry(ms: number): Promise<void> {
    return this.write(`retry: ${ms}\n\n`);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.body.end();
  }

  private write(text: string): Promise<void> {
    if (!this.open) return Promise.resolve();
    if (this.body.write(text)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.body.off('drain', done);
        this.body.off('close', done);
        resolve();
      };
      this.body.on('drain', done);
      this.body.on('close', done);
    });
  }
}
