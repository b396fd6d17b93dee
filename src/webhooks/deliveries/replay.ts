import type { Db, Queryable } from '../../db/db.js';
import { notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { enqueue } from '../../engine/outbox/deliveries.js';
import { endpointInactive } from '../endpoints/schemas.js';
import { lockEndpoint } from '../endpoints/store.js';
import { findDelivery, parseBody, subjectOf } from './store.js';

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

/**
 * Replays one delivery to its endpoint: 404 when the delivery is unknown in this workspace or its
 * body is gone, 409 when its endpoint is paused, disabled or deleted. Returns the new delivery.
 */
export async function replayDelivery(db: Db, workspaceId: string, id: string, now: Date): Promise<{ id: string; endpointId: string }> {
  return db.tx(async (q) => {
    const original = await findDelivery(q, workspaceId, id);
    if (!original || original.body === null) throw notFound('webhook delivery');
    const endpoint = await lockEndpoint(q, workspaceId, original.endpoint_id);
    if (!endpoint) throw notFound('webhook delivery');
    if (endpoint.deleted_at || !endpoint.active) throw endpointInactive(endpoint);
    const [replay] = await queueReplays(q, workspaceId, endpoint, [{ id: original.id, event_type: original.event_type, body: original.body }], now);
    return { id: replay, endpointId: endpoint.id };
  });
}
