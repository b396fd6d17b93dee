import { randomBytes } from 'node:crypto';
import { channelSql } from '../db/channels.js';
import type { Db } from '../db/db.js';
import { EVENT_CHANNEL, eventWakePayload } from '../events/channel.js';

/** Something of this process that follows new events (the event streams), woken with the workspaces written to. */
export type EventListener = (workspaceIds: string[]) => void;

/**
 * Wake-ups for readers of the event log after writes commit events, as DeliveryNotifier does for
 * delivery workers: listeners of this process are called at once, and other processes (on
 * PostgreSQL; the embedded database has no others) hear a NOTIFY on EVENT_CHANNEL naming the
 * workspaces. NOTIFYs are coalesced: at most one is in flight, and workspaces written meanwhile go
 * in the next one. A NOTIFY lost with its process costs the other processes' readers one polling
 * interval (their fallback), never an event.
 */
export class EventWakeups {
  readonly origin = randomBytes(8).toString('hex');
  private readonly local = new Set<EventListener>();
  private readonly waiting = new Set<string>();
  private sending = false;

  constructor(private readonly db: Db) {}

  subscribe(listener: EventListener): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }

  /** Events of these workspaces have committed. */
  committed(workspaceIds: string[]): void {
    if (workspaceIds.length === 0) return;
    for (const listener of this.local) listener(workspaceIds);
    for (const id of workspaceIds) this.waiting.add(id);
    if (!this.sending) {
      this.sending = true;
      void this.send();
    }
  }

  private async send(): Promise<void> {
    while (this.waiting.size > 0) {
      const payload = eventWakePayload(this.origin, this.waiting);
      this.waiting.clear();
      await this.db.query(`SELECT pg_notify(${channelSql(EVENT_CHANNEL)}, $1)`, [payload]).catch(() => {});
    }
    this.sending = false;
  }
}
