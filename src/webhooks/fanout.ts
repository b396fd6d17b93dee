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
 * The fan-out as CTEs, to follow others in one WITH statement: `targets` (subscribed endpoints),
 * `fanned` (one delivery row each: `pending` and due now for active endpoints, `disabled` and never
 * sent for inactive ones) and `fanout`, which counts the pending rows and, with `notify`, NOTIFYs
 * workers (delivered at commit, so a rolled-back change wakes nobody; see notifier.ts for why hot
 * paths wake workers after commit instead). `gate` names a CTE that must have a row for the
 * fan-out to happen (the event's insert), or is null.
 * Parameters: workspace id, event id, event type, event time, subscription patterns, id prefix.
 */
export function fanOutCtes(p: (i: number) => string, gate: string | null, notify: boolean): string {
  return `targets AS (
       SELECT id, active FROM webhook_endpoints
        WHERE workspace_id = ${p(1)} AND deleted_at IS NULL AND subscribed_events && ${p(5)}::text[]
          ${gate ? `AND EXISTS (SELECT 1 FROM ${gate})` : ''}
     ), fanned AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
       SELECT ${p(6)} || substr(md5(random()::text || t.id), 1, 16), ${p(1)}, t.id, ${p(2)}, ${p(3)},
              CASE WHEN t.active THEN 'pending' ELSE 'disabled' END, 0,
              CASE WHEN t.active THEN ${p(4)}::timestamptz END, ${p(4)}
         FROM targets t
       RETURNING status
     ), fanout AS (
       SELECT c.pending${notify ? `, CASE WHEN c.pending > 0 THEN pg_notify('${DELIVERY_CHANNEL}', '')::text END AS notified` : ''}
         FROM (SELECT count(*)::int AS pending FROM fanned WHERE status = 'pending') c
     )`;
}

export function fanOutValues(event: StoredEvent): unknown[] {
  return [event.workspaceId, event.id, event.type, event.createdAt, subscriptionPatterns(event.type), idTimePrefix('whd', event.createdAt)];
}

/** Fans out an event already stored in this transaction, in one round trip, notifying at commit. */
export async function fanOut(q: Queryable, event: StoredEvent): Promise<number> {
  const [row] = await q.query<{ pending: number }>(
    `WITH ${fanOutCtes((i) => `$${i}`, null, true)} SELECT pending, notified FROM fanout`,
    fanOutValues(event),
  );
  return row?.pending ?? 0;
}
