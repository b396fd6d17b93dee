import type { AppContext } from '../context.js';
import type { Queryable } from '../db/db.js';
import type { EventType } from './catalog.js';
import { fanOut } from '../webhooks/fanout.js';
import { insertEvent, type StoredEvent, type Subject } from './store.js';

/**
 * Records an event inside the caller's transaction. Everything that reacts to events (webhook
 * fan-out) is written in the same transaction, so a rolled-back change leaves no trace.
 */
export async function emitEvent(
  q: Queryable,
  _ctx: AppContext,
  input: { workspaceId: string; type: EventType; subject: Subject | null; at: Date },
): Promise<StoredEvent> {
  const event = await insertEvent(q, input);
  await fanOut(q, event);
  return event;
}
