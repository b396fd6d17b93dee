import type { Queryable } from '../../db/db.js';
import { newId } from '../../lib/ids.js';
import { enqueue } from '../../engine/outbox/deliveries.js';
import { parseBody, subjectOf } from './store.js';

/** A delivery to copy: its id, its event type and the exact text it sent (or was to send). */
export interface Original {
  id: string;
  event_type: string;
  body: string;
}

/**
 * Queues a replay of each original to `endpointId`, inside the caller's transaction (the endpoint
 * locked and found active by the caller): the same bytes go out again under a new delivery id (so
 * a new webhook-id) and a synthetic event id, with replay_of naming the original. Workers are woken
 * at commit, as for any queued delivery. The single replay route and bulk recoveries both write
 * their replays here. On an endpoint that orders by subject, a replay queues behind the pending
 * deliveries of the subject its body names. Returns the new delivery ids, in order.
 */
export async function queueReplays(
  q: Queryable,
  workspaceId: string,
  endpoint: { id: string; ordering: string },
  originals: Original[],
  now: Date,
): Promise<string[]> {
  return enqueue(
    q,
    originals.map((original) => ({
      workspaceId,
      endpointId: endpoint.id,
      eventId: newId('evt', now),
      eventType: original.event_type,
      payload: original.body,
      replayOf: original.id,
      orderingKey: endpoint.ordering === 'subject' ? (subjectOf(parseBody(original.body))?.id ?? null) : null,
    })),
    now,
  );
}
