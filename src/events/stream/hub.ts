import { listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import { EVENT_CHANNEL, parseEventWake } from '../channel.js';
import { readAfter, workspacesWithNews } from './log.js';
import { through, type Position } from './position.js';
import { SseBody } from './sse.js';
import { EventStream, type StreamDeps } from './stream.js';
import { WorkspaceTail } from './tail.js';

/** The writes in flight of this process (outbox/in-flight.ts), as the streams see them. */
export interface SettledHorizon {
  horizon(): number;
  settleDelay(at: number): number;
  onRelease(listener: () => void): () => void;
}

/** Wake-ups from this process's own writes (outbox/event-wakeups.ts). */
export interface LocalEventWrites {
  readonly origin: string;
  subscribe(listener: (workspaceIds: string[]) => void): () => void;
}

export interface EventHubDeps {
  db: Db;
  writes: SettledHorizon;
  wakeups: LocalEventWrites;
  /** The fallback: how often open tails look for events no wake-up announced. */
  pollIntervalMs: number;
  onError?(error: unknown): void;
}

export interface StreamRequest {
  workspaceId: string;
  /** Only these event types; null: all. */
  types: ReadonlySet<string> | null;
  /** Resume after this event id; null: from now (the settled horizon). */
  after: Position | null;
  keepAliveMs: number;
  stillAllowed(): Promise<boolean>;
}

/**
 * The event streams of this process, fed by one listener whatever their number: one LISTEN on
 * EVENT_CHANNEL (shared with every other LISTEN of the process, db/listener.ts), one tail per
 * workspace that has streams (tail.ts), woken by this process's own writes directly, by other
 * processes' NOTIFYs, by the end of a write that held events back, by the LISTEN connection coming
 * back (NOTIFYs sent meanwhile were lost), and by one poll statement for every tail at once every
 * pollIntervalMs (a process that died between its commit and its NOTIFY).
 */
export class EventHub {
  private readonly tails = new Map<string, WorkspaceTail>();
  private readonly streams = new Set<EventStream>();
  private starting: Promise<void> | null = null;
  private stops: (() => unknown)[] = [];
  private poll: NodeJS.Timeout | null = null;

  constructor(private readonly deps: EventHubDeps) {}

  /** Opens a stream: its body is ready to send; it runs until closed or the client goes. */
  async open(request: StreamRequest): Promise<EventStream> {
    // A failed start is tried again by the next stream.
    await (this.starting ??= this.start().catch((error: unknown) => {
      this.starting = null;
      throw error;
    }));
    const tail = this.tailOf(request.workspaceId);
    const deps: StreamDeps = {
      readLog: (position, types, limit) => readAfter(this.deps.db, request.workspaceId, position, types, limit),
      horizon: () => this.deps.writes.horizon(),
      stillAllowed: request.stillAllowed,
      keepAliveMs: request.keepAliveMs,
    };
    const position = request.after ?? through(this.deps.writes.horizon());
    const stream = new EventStream(new SseBody(), tail, position, request.types, deps, (closed) => this.closed(closed));
    this.streams.add(stream);
    return stream;
  }

  /** Streams open now, for metrics and tests. */
  get size(): number {
    return this.streams.size;
  }

  /** Ends every stream (the server is stopping); the listener stays for streams opened later. */
  closeAll(): void {
    for (const stream of [...this.streams]) stream.close();
  }

  /** New events may be in these workspaces (null: any). */
  wake(workspaceIds: readonly string[] | null): void {
    if (workspaceIds === null) {
      for (const tail of this.tails.values()) tail.refresh();
      return;
    }
    for (const id of workspaceIds) this.tails.get(id)?.refresh();
  }

  private async start(): Promise<void> {
    const { db, writes, wakeups } = this.deps;
    this.stops.push(wakeups.subscribe((ids) => this.wake(ids)));
    this.stops.push(
      writes.onRelease(() => {
        for (const tail of this.tails.values()) if (tail.held !== null) tail.refresh();
      }),
    );
    const unlisten = await listenChannel(db, EVENT_CHANNEL, (payload) => {
      const { origin, workspaceIds } = parseEventWake(payload);
      // This process's own writes woke its tails already.
      if (origin !== '' && origin === wakeups.origin) return;
      this.wake(workspaceIds);
    });
    this.stops.push(unlisten);
  }

  private tailOf(workspaceId: string): WorkspaceTail {
    let tail = this.tails.get(workspaceId);
    if (!tail) {
      tail = new WorkspaceTail(workspaceId, {
        db: this.deps.db,
        horizon: () => this.deps.writes.horizon(),
        settleDelay: (at) => this.deps.writes.settleDelay(at),
        onError: (error) => this.deps.onError?.(error),
      });
      this.tails.set(workspaceId, tail);
      this.poll ??= setInterval(() => void this.pollTails(), this.deps.pollIntervalMs);
      this.poll.unref();
    }
    return tail;
  }

  private closed(stream: EventStream): void {
    this.streams.delete(stream);
    const tail = stream.tail;
    for (const other of this.streams) if (other.tail === tail) return;
    tail.close();
    this.tails.delete(tail.workspaceId);
    if (this.tails.size === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = null;
    }
  }

  private async pollTails(): Promise<void> {
    const tails = [...this.tails.values()].map((t) => ({ workspaceId: t.workspaceId, position: t.head }));
    try {
      this.wake(await workspacesWithNews(this.deps.db, tails));
    } catch (error) {
      this.deps.onError?.(error);
    }
  }

  /** Stops listening (the process is stopping): after closeAll. */
  async stop(): Promise<void> {
    this.closeAll();
    const stops = this.stops;
    this.stops = [];
    this.starting = null;
    for (const stop of stops) await stop();
  }
}
