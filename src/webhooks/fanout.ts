import type { Queryable } from '../db/db.js';
import type { StoredEvent } from '../events/store.js';
import { idTimePrefix } from '../lib/ids.js';

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
 * NOTIFY is delivered at commit, waking workers; a rolled-back change sends nothing. Matching,
 * inserting and notifying are one statement: the fan-out costs the transaction one round trip.
 */
export async function fanOut(q: Queryable, event: StoredEvent): Promise<number> {
  const [row] = await q.query<{ pending: number }>(
    `WITH targets AS (
       SELECT id, active FROM webhook_endpoints
        WHERE workspace_id = $1 AND deleted_at IS NULL AND subscribed_events && $5::text[]
     ), inserted AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
       SELECT $6 || substr(md5(random()::text || t.id), 1, 16), $1, t.id, $2, $3,
              CASE WHEN t.active THEN 'pending' ELSE 'disabled' END, 0,
              CASE WHEN t.active THEN $4::timestamptz END, $4
         FROM targets t
       RETURNING status
     )
     SELECT p.pending, CASE WHEN p.pending > 0 THEN pg_notify('${DELIVERY_CHANNEL}', '')::text END AS notified
       FROM (SELECT count(*)::int AS pending FROM inserted WHERE status = 'pending') p`,
    [event.workspaceId, event.id, event.type, event.createdAt, subscriptionPatterns(event.type), idTimePrefix('whd', event.createdAt)],
  );
  return row?.pending ?? 0;
}
