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
 * The fan-out as CTEs, to follow others in one WITH statement. `events` is a FROM item (a CTE or a
 * sub-select) with one row per event to fan out: workspace_id, event_id, event_type, at
 * (timestamptz), delivery_prefix and patterns (text[], the subscription patterns that match the
 * type). `targets` pairs each event with its subscribed endpoints, `fanned` writes one delivery row
 * each (`pending` and due now for active endpoints, `disabled` and never sent for inactive ones)
 * and `fanout` counts the pending rows and, with `notify`, NOTIFYs workers (delivered at commit, so
 * a rolled-back change wakes nobody; see notifier.ts for why hot paths wake workers after commit).
 */
export function fanOutCtes(events: string, notify: boolean): string {
  return `targets AS (
       SELECT ev.workspace_id, ev.event_id, ev.event_type, ev.at, ev.delivery_prefix, w.id AS endpoint_id, w.active
         FROM ${events} ev
         JOIN webhook_endpoints w ON w.workspace_id = ev.workspace_id AND w.deleted_at IS NULL AND w.subscribed_events && ev.patterns
     ), fanned AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
       SELECT t.delivery_prefix || substr(md5(random()::text || t.endpoint_id), 1, 16), t.workspace_id, t.endpoint_id, t.event_id, t.event_type,
              CASE WHEN t.active THEN 'pending' ELSE 'disabled' END, 0,
              CASE WHEN t.active THEN t.at END, t.at
         FROM targets t
       RETURNING status
     ), fanout AS (
       SELECT c.pending${notify ? `, CASE WHEN c.pending > 0 THEN pg_notify('${DELIVERY_CHANNEL}', '')::text END AS notified` : ''}
         FROM (SELECT count(*)::int AS pending FROM fanned WHERE status = 'pending') c
     )`;
}

/**
 * One event as the `events` of fanOutCtes, from the six parameters of fanOutValues (workspace id,
 * event id, type, time, subscription patterns, id prefix). With `gate`, the name of a CTE, the event
 * is fanned out only if that CTE has a row (the event's own insert).
 */
export function singleEvent(p: (i: number) => string, gate: string | null): string {
  return `(SELECT ${p(1)}::text AS workspace_id, ${p(2)}::text AS event_id, ${p(3)}::text AS event_type,
                  ${p(4)}::timestamptz AS at, ${p(6)}::text AS delivery_prefix, ${p(5)}::text[] AS patterns${gate ? ` FROM ${gate}` : ''})`;
}

export function fanOutValues(event: StoredEvent): unknown[] {
  return [event.workspaceId, event.id, event.type, event.createdAt, subscriptionPatterns(event.type), idTimePrefix('whd', event.createdAt)];
}

/** Fans out an event already stored in this transaction, in one round trip, notifying at commit. */
export async function fanOut(q: Queryable, event: StoredEvent): Promise<number> {
  const [row] = await q.query<{ pending: number }>(
    `WITH ${fanOutCtes(singleEvent((i) => `$${i}`, null), true)} SELECT pending, notified FROM fanout`,
    fanOutValues(event),
  );
  return row?.pending ?? 0;
}
