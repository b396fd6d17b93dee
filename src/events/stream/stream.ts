import type { SseBody } from './sse.js';
import type { WorkspaceTail } from './tail.js';
import { compare, later, type LogEvent, type Position } from './position.js';

/** Events a stream behind its workspace's tail reads from the log per statement. */
const CATCH_UP_PAGE = 200;
/** Event bodies written to the client at once, at most about this much. */
const WRITE_BYTES = 16 * 1024;

export interface StreamDeps {
  /** Events of the stream's workspace after `position`, in the log's order (log.ts readAfter). */
  readLog(position: Position, types: readonly string[] | null, limit: number): Promise<LogEvent[]>;
  /** False once the credential may no longer read the stream (revoked, expired, membership gone). */
  stillAllowed(): Promise<boolean>;
  keepAliveMs: number;
}

/**
 * One client's stream: every event of its workspace after `position`, in the log's order,
 * each once, filtered by `types`. While it is behind its workspace's tail (a resume from an older
 * event, or a reader slower than the events) it reads the log itself, page by page, waiting for the
 * client before it reads the next; once it has reached the tail it takes events from what the tail
 * keeps and waits for it. A comment goes out every keepAliveMs, after the credential is checked
 * again.
 */
export class EventStream {
  private closed = false;
  private wakeup: (() => void) | null = null;
  private keepAlive: NodeJS.Timeout | null = null;

  constructor(
    readonly out: SseBody,
    readonly tail: WorkspaceTail,
    private position: Position,
    private readonly types: ReadonlySet<string> | null,
    private readonly deps: StreamDeps,
    private readonly onClose: (stream: EventStream) => void,
  ) {}

  /** Sends until closed; resolves when the stream has ended. */
  async run(): Promise<void> {
    this.keepAlive = setInterval(() => void this.ping(), this.deps.keepAliveMs);
    this.keepAlive.unref();
    this.tail.readers.add(this);
    try {
      while (!this.closed && this.out.open) {
        if (compare(this.position, this.tail.start) < 0) await this.catchUp();
        else if (compare(this.position, this.tail.head) < 0) await this.fromTail();
        else await new Promise<void>((resolve) => (this.wakeup = resolve));
      }
    } catch {
      // The log could not be read: the stream ends, and the client resumes from its last event.
    } finally {
      this.close();
    }
  }

  wake(): void {
    const wakeup = this.wakeup;
    this.wakeup = null;
    wakeup?.();
  }

  /** Ends the stream (client gone, server stopping, credential no longer valid). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.tail.readers.delete(this);
    this.out.end();
    this.wake();
    this.onClose(this);
  }

  private matches(event: LogEvent): boolean {
    return this.types === null || this.types.has(event.type);
  }

  /** The matching events, several to a write (one write per event cost a system call per event and reader). */
  private async send(events: LogEvent[]): Promise<void> {
    let batch: LogEvent[] = [];
    let bytes = 0;
    for (const event of events) {
      if (!this.matches(event)) continue;
      batch.push(event);
      bytes += event.body.length;
      if (bytes >= WRITE_BYTES) {
        if (this.closed) return;
        await this.out.events(batch);
        batch = [];
        bytes = 0;
      }
    }
    if (batch.length > 0 && !this.closed) await this.out.events(batch);
  }

  /** The events the tail keeps after this stream's position; the stream then stands at the tail's head. */
  private async fromTail(): Promise<void> {
    const events = this.tail.after(this.position);
    this.position = this.tail.head;
    await this.send(events);
  }

  /** One page of the log after this stream's position. */
  private async catchUp(): Promise<void> {
    // Everything up to the tail's head now is in the log already: a short page has read up to there.
    const end = this.tail.head;
    const events = await this.deps.readLog(this.position, this.types ? [...this.types] : null, CATCH_UP_PAGE);
    const reached = events.length > 0 ? events[events.length - 1].position : this.position;
    this.position = events.length === CATCH_UP_PAGE ? reached : later(reached, end);
    await this.send(events);
  }

  private async ping(): Promise<void> {
    if (this.closed) return;
    if (!(await this.deps.stillAllowed().catch(() => true))) return this.close();
    await this.out.comment('keep-alive');
  }
}
