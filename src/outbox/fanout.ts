import { channelSql } from '../db/channels.js';
import type { Queryable } from '../db/db.js';
import { subscriptionPatterns } from '../events/patterns.js';
import type { StoredEvent } from '../events/store.js';
import { idTimePrefix } from '../lib/ids.js';
import { DELIVERY_CHANNEL } from '../webhooks/engine/wakeups.js';
import type { HandOff } from './notifier.js';

/** A delivery's ordering key: its event's subject id, when its endpoint orders by subject (claim.ts). */
const ORDERING_KEY = `CASE WHEN w.ordering = 'subject' THEN ev.subject_id END`;

/** Its place in that order, drawn for ordered rows only (migrations/010_endpoint_headers_ordering.sql). */
export const ORDERING_SEQ = `CASE WHEN t.ordering_key IS NOT NULL THEN nextval('webhook_deliveries_ordering_seq') END`;

/**
 * The fan-out as CTEs, to follow others in one WITH statement. `events` is a FROM item (a CTE or a
 * sub-select) with one row per event to fan out: workspace_id, event_id, event_type, at
 * (timestamptz), delivery_prefix, patterns (text[], the subscription patterns that match the
 * type) and subject_id (null for an event without a subject). `targets` pairs each event with its subscribed endpoints, `fanned` writes one delivery row
 * each (`pending` and due now for active endpoints, `disabled` and never sent for inactive ones)
 * and `fanout` counts the pending rows due now and, with `notify`, NOTIFYs workers (delivered at
 * commit, so a rolled-back change wakes nobody; see notifier.ts for why hot paths wake workers after
 * commit).
 *
 * With `handOff`, `events` also has `lease` (timestamptz) and `slots` (int, the same on every row):
 * up to `slots` of the pending rows are written already claimed, their next_attempt_at being the
 * lease, and `fanout.handed` returns them (JSON, see notifier.ts) for a worker of this process to
 * send once the statement has committed (its columns are the engine's HandedRow). A handed row is told
 * apart by next_attempt_at after its creation: a row due now has next_attempt_at = created_at.
 */
export function fanOutCtes(events: string, notify: boolean, handOff = false): string {
  // A row in its subject's order may have to wait for an older one (claim.ts): it is never handed over.
  const lease = handOff
    ? `, CASE WHEN w.active AND ${ORDERING_KEY} IS NULL AND row_number() OVER (PARTITION BY w.active AND ${ORDERING_KEY} IS NULL) <= ev.slots
              THEN ev.lease END AS lease`
    : ', NULL::timestamptz AS lease';
  return `targets AS (
       SELECT ev.workspace_id, ev.event_id, ev.event_type, ev.at, ev.delivery_prefix, w.id AS endpoint_id, w.active,
              ${ORDERING_KEY} AS ordering_key${lease}
         FROM ${events} ev
         JOIN webhook_endpoints w ON w.workspace_id = ev.workspace_id AND w.deleted_at IS NULL AND w.subscribed_events && ev.patterns
     ), fanned AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, ordering_key, ordering_seq, status, attempt,
                                       next_attempt_at, created_at)
       SELECT t.delivery_prefix || substr(md5(random()::text || t.endpoint_id), 1, 16), t.workspace_id, t.endpoint_id, t.event_id, t.event_type,
              t.ordering_key, ${ORDERING_SEQ}, CASE WHEN t.active THEN 'pending' ELSE 'disabled' END, 0,
              CASE WHEN t.active THEN coalesce(t.lease, t.at) END, t.at
         FROM targets t
       RETURNING id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at
     ), ${
       handOff
         ? `handed AS (
       SELECT f.id, f.workspace_id, f.endpoint_id, f.event_id, f.event_type, w.url, w.consecutive_failures, w.rate_limit,
              w.headers_enc, w.secret_enc, w.previous_secret_enc, w.previous_secret_expires_at
         FROM fanned f JOIN webhook_endpoints w ON w.id = f.endpoint_id
        WHERE f.status = 'pending' AND f.next_attempt_at > f.created_at
     ), `
         : ''
     }fanout AS (
       SELECT c.pending${handOff ? ', (SELECT json_agg(handed) FROM handed) AS handed' : ''}${
         notify ? `, CASE WHEN c.pending > 0 THEN pg_notify(${channelSql(DELIVERY_CHANNEL)}, '')::text END AS notified` : ''
       }
         FROM (SELECT count(*)::int AS pending FROM fanned WHERE status = 'pending' AND next_attempt_at = created_at) c
     )`;
}

/**
 * One event as the `events` of fanOutCtes, from the parameters of fanOutValues (workspace id, event
 * id, type, time, subscription patterns, id prefix, subject id, then with `handOff` the lease and the slots).
 * With `gate`, the name of a CTE, the event is fanned out only if that CTE has a row (the event's
 * own insert).
 */
export function singleEvent(p: (i: number) => string, gate: string | null, handOff = false): string {
  const lease = handOff ? `, ${p(8)}::timestamptz AS lease, ${p(9)}::int AS slots` : '';
  return `(SELECT ${p(1)}::text AS workspace_id, ${p(2)}::text AS event_id, ${p(3)}::text AS event_type,
                  ${p(4)}::timestamptz AS at, ${p(6)}::text AS delivery_prefix, ${p(5)}::text[] AS patterns,
                  ${p(7)}::text AS subject_id${lease}${gate ? ` FROM ${gate}` : ''})`;
}

export function fanOutValues(event: StoredEvent): unknown[] {
  return [
    event.workspaceId,
    event.id,
    event.type,
    event.createdAt,
    subscriptionPatterns(event.type),
    idTimePrefix('whd', event.createdAt),
    event.subject?.id ?? null,
  ];
}

/** The lease and slot parameters of a fan-out with hand-off (none reserved: no row is handed). */
export function handOffValues(handOff: HandOff | null): [Date | null, number] {
  return handOff ? [handOff.lease, handOff.slots] : [null, 0];
}

/** Fans out an event already stored in this transaction, in one round trip, notifying at commit. */
export async function fanOut(q: Queryable, event: StoredEvent): Promise<number> {
  const [row] = await q.query<{ pending: number }>(
    `WITH ${fanOutCtes(singleEvent((i) => `$${i}`, null), true)} SELECT pending, notified FROM fanout`,
    fanOutValues(event),
  );
  return row?.pending ?? 0;
}
