import type { Db } from '../../db/db.js';
import { enqueue } from '../../engine/outbox/deliveries.js';
import { notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import { endpointInactive } from './schemas.js';
import { lockEndpoint } from './store.js';

/**
 * Queues a webhook.ping delivery to one endpoint: a synthetic event sent to this endpoint only and
 * never written to the event log. 404 for an unknown or deleted endpoint, 409 when it is not active.
 */
export async function sendTestEvent(db: Db, workspaceId: string, id: string, now: Date): Promise<{ deliveryId: string; eventId: string }> {
  return db.tx(async (q) => {
    const endpoint = await lockEndpoint(q, workspaceId, id);
    if (!endpoint || endpoint.deleted_at) throw notFound('webhook endpoint');
    if (!endpoint.active) throw endpointInactive(endpoint);
    const eventId = newId('evt', now);
    const payload = JSON.stringify({ id: eventId, type: 'webhook.ping', created: toIso(now) });
    const [deliveryId] = await enqueue(q, [{ workspaceId, endpointId: id, eventId, eventType: 'webhook.ping', payload, replayOf: null }], now);
    return { deliveryId, eventId };
  });
}
