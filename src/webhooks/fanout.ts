import type { Queryable } from '../db/db.js';
import type { StoredEvent } from '../events/store.js';
import { newId } from '../lib/ids.js';

export const DELIVERY_CHANNEL = 'webhook_deliveries';

/** `product.created` is matched by itself and by the prefix pattern `product.*`. */
export function subscriptionPatterns(type: string): string[] {
  const parts = type.split('.');
  const patterns = [type];
  for (let i = parts.length - 1; i >= 1; i--) patterns.push(`${parts.slice(0, i).join('.')}.*`);
  return patterns;
}

/**
 * One delivery row per subscribed endpoint of the workspace, in the event's own transaction: `pending`
 * and due now for active endpoints, `disabled` (never sent, kept for replay) for inactive ones. The
 * NOTIFY is delivered at commit, waking workers; a rolled-back change sends nothing.
 */
export async function fanOut(q: Queryable, event: StoredEvent): Promise<number> {
  const endpoints = await q.query<{ id: string; active: boolean }>(
    `SELECT id, active FROM webhook_endpoints
      WHERE workspace_id = $1 AND deleted_at IS NULL AND subscribed_events && $2::text[]`,
    [event.workspaceId, subscriptionPatterns(event.type)],
  );
  if (endpoints.length === 0) return 0;
  await q.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
     SELECT d.id, $1, d.endpoint_id, $2, $3, d.status, 0, CASE WHEN d.status = 'pending' THEN $4::timestamptz END, $4
       FROM unnest($5::text[], $6::text[], $7::text[]) AS d (id, endpoint_id, status)`,
    [
      event.workspaceId,
      event.id,
      event.type,
      event.createdAt,
      endpoints.map(() => newId('whd', event.createdAt)),
      endpoints.map((e) => e.id),
      endpoints.map((e) => (e.active ? 'pending' : 'disabled')),
    ],
  );
  const pending = endpoints.filter((e) => e.active).length;
  if (pending > 0) await q.query(`SELECT pg_notify('${DELIVERY_CHANNEL}', '')`);
  return pending;
}
