import { channelSql } from '../../db/channels.js';
import { DEFERRALS, DELIVERY_CHANNEL, deferredAt, handed, handedLease } from '../delivery/handoff.js';

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
 * commit, so a rolled-back change wakes nobody; see the engine's handoff.ts for why standalone writes
 * wake workers after commit instead).
 *
 * With `handOff`, `events` also has `lease` (timestamptz) and `slots` (int, the same on every row),
 * and up to `slots` of the pending rows are written already leased, for a worker of this process
 * (handoff.ts): `fanout.handed` returns them as JSON. The rows of endpoints whose lanes defer every
 * job (with `deferring`, the parameters of DEFERRALS) are written deferred instead, and
 * `fanout.deferred` counts them.
 */
export function fanOutCtes(events: string, notify: boolean, handOff = false, deferring = false): string {
  const lease = handOff ? `, ${handedLease(ORDERING_KEY, deferring)} AS lease` : ', NULL::timestamptz AS lease';
  const deferred = deferring ? `, ${deferredAt(ORDERING_KEY)} AS deferred_at` : ', NULL::timestamptz AS deferred_at';
  return `targets AS (
       SELECT ev.workspace_id, ev.event_id, ev.event_type, ev.at, ev.delivery_prefix, w.id AS endpoint_id, w.active,
              ${ORDERING_KEY} AS ordering_key${lease}${deferred}
         FROM ${events} ev
         JOIN webhook_endpoints w ON w.workspace_id = ev.workspace_id AND w.deleted_at IS NULL AND w.subscribed_events && ev.patterns${
           deferring ? `
         LEFT JOIN ${DEFERRALS} ON dfr.endpoint_id = w.id` : ''
         }
     ), fanned AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, ordering_key, ordering_seq, status, attempt,
                                       next_attempt_at, created_at)
       SELECT t.delivery_prefix || substr(md5(random()::text || t.endpoint_id), 1, 16), t.workspace_id, t.endpoint_id, t.event_id, t.event_type,
              t.ordering_key, ${ORDERING_SEQ}, CASE WHEN t.active THEN 'pending' ELSE 'disabled' END, 0,
              CASE WHEN t.active THEN coalesce(t.lease, t.deferred_at, t.at) END, t.at
         FROM targets t
       RETURNING id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at
     ), ${
       handOff ? `${handed(deferring)}, ` : ''
     }fanout AS (
       SELECT c.pending${handOff ? ', (SELECT json_agg(handed) FROM handed) AS handed' : ''}${
         deferring ? ', (SELECT json_object_agg(endpoint_id, n) FROM deferred) AS deferred' : ''
       }${
         notify ? `, CASE WHEN c.pending > 0 THEN pg_notify(${channelSql(DELIVERY_CHANNEL)}, '')::text END AS notified` : ''
       }
         FROM (SELECT count(*)::int AS pending FROM fanned WHERE status = 'pending' AND next_attempt_at = created_at) c
     )`;
}
