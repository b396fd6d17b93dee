import { listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import { EVENT_CHANNEL, parseEventWake } from '../../engine/log/channel.js';
import type { Sequencer } from '../../engine/log/sequencer.js';
import { endOf, placeOf, readAfter, workspacesWithNews } from './log.js';
import type { Position } from './position.js';
import { SseBody } from './sse.js';
import { EventStream, type StreamDeps } from './stream.js';
import { WorkspaceTail } from './tail.js';

export interface EventHubDeps {
  db: Db;
  /** Positions committed batches (engine/log/sequencer.ts); its runs in this process wake the tails directly. */
  sequencer: Pick<Sequencer, 'origin' | 'subscribe' | 'settled'>;
  /** The fallback: how often open tails look for events no wake-up announced. */
  pollIntervalMs: number;
  onError?(error: unknown): void;
}

export interface StreamRequest {
  workspaceId: string;
  /** Only these event types; null: all. */
  types: ReadonlySet<string> | null;
  /** Resume after this place (placeAfter); null: from now, after every event committed before the stream opened. */
  after: Position | null;
  keepAliveMs: number;
  stillAllowed(): Promise<boolean>;
}

/**
 * The event streams of this process, fed by one listener whatever their number: one LISTEN on
 * EVENT_CHANNEL (shared with every other LISTEN of the process, db/listener.ts), one tail per
 * workspace that has streams (tail.ts), woken by this process's sequencer directly, by other
 * processes' sequencers through NOTIFY, by the LISTEN connection coming back (NOTIFYs sent
 * meanwhile were lost), and by one poll statement for every tail at once every pollIntervalMs.
 */
export class EventHub {
  private readonly tails = new Map<string, Promise<WorkspaceTail>>();
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
    const after = request.after ?? (await this.now(request.workspaceId));
    // No await between taking the tail and adding the stream: a tail without streams is closed.
    const tail = await this.tailOf(request.workspaceId);
    const deps: StreamDeps = {
      readLog: (position, types, limit) => readAfter(this.deps.db, request.workspaceId, position, types, limit),
      stillAllowed: request.stillAllowed,
      keepAliveMs: request.keepAliveMs,
    };
    const stream = new EventStream(new SseBody(), tail, after, request.types, deps, (closed) => this.closed(closed));
    this.streams.add(stream);
    return stream;
  }

  /**
   * The end of the workspace's log once every batch committed so far has its position: a stream
   * without a resume point begins after every event whose write had returned when it opened (the
   * tail's head may not have reached them yet).
   */
  private async now(workspaceId: string): Promise<Position> {
    await this.deps.sequencer.settled();
    return endOf(this.deps.db, workspaceId);
  }

  /**
   * The place right after event `eventId` of the workspace (Last-Event-ID), once its batch has a
   * position; null when the workspace has no such event.
   */
  async placeAfter(workspaceId: string, eventId: string): Promise<Position | null> {
    let place = await placeOf(this.deps.db, workspaceId, eventId);
    if (place && place.batch === null) {
      // Committed a moment ago and not yet positioned: after the sequencer's next run it is.
      await this.deps.sequencer.settled();
      place = await placeOf(this.deps.db, workspaceId, eventId);
    }
    return place && place.batch !== null ? { batch: place.batch, index: place.index } : null;
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
    for (const [id, tail] of this.tails) if (workspaceIds === null || workspaceIds.includes(id)) void tail.then((t) => t.refresh());
  }

  private async start(): Promise<void> {
    const { db, sequencer } = this.deps;
    this.stops.push(sequencer.subscribe((ids) => this.wake(ids)));
    const unlisten = await listenChannel(db, EVENT_CHANNEL, (payload) => {
      const { origin, workspaceIds } = parseEventWake(payload);
      // A commit not yet positioned is the sequencer's; this process's own runs woke its tails already.
      if (origin === sequencer.origin || (origin === '' && payload !== '')) return;
      this.wake(workspaceIds);
    });
    this.stops.push(unlisten);
  }

  /** The workspace's tail, made at the end of its log when the first stream of it opens. */
  private tailOf(workspaceId: string): Promise<WorkspaceTail> {
    let tail = this.tails.get(workspaceId);
    if (!tail) {
      tail = endOf(this.deps.db, workspaceId).then((end) => new WorkspaceTail(workspaceId, end, this.deps.db, (error) => this.deps.onError?.(error)));
      tail.catch(() => this.tails.delete(workspaceId));
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
    try {
      const tails = await Promise.all(this.tails.values());
      this.wake(await workspacesWithNews(this.deps.db, tails.map((t) => ({ workspaceId: t.workspaceId, head: t.head }))));
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
