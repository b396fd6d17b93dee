import { channelSql } from '../../db/channels.js';
import type { Queryable } from '../../db/db.js';
import { newId } from '../../lib/ids.js';
import { DELIVERY_CHANNEL } from '../delivery/handoff.js';
import { ORDERING_SEQ } from './fanout.js';

/** A delivery whose body is not an event of the log: a test ping, a replay, a recovery's replay. */
export interface DirectDelivery {
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
  replayOf: string | null;
  /** The subject id when the endpoint orders by subject (ordering_key, fanout.ts); null or absent otherwise. */
  orderingKey?: string | null;
}

/**
 * Queues deliveries with their own payload inside the caller's transaction: pending, due now,
 * attempt 0. Workers are NOTIFYed when the transaction commits. Returns their ids, in order.
 */
export async function enqueue(q: Queryable, deliveries: DirectDelivery[], now: Date): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const ids = deliveries.map(() => newId('whd', now));
  await q.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, replay_of, ordering_key, ordering_seq, status,
                                     attempt, next_attempt_at, created_at)
     SELECT t.id, t.workspace_id, t.endpoint_id, t.event_id, t.event_type, t.payload, t.replay_of, t.ordering_key, ${ORDERING_SEQ}, 'pending', 0, $8, $8
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $9::text[])
         AS t (id, workspace_id, endpoint_id, event_id, event_type, payload, replay_of, ordering_key)`,
    [
      ids,
      deliveries.map((d) => d.workspaceId),
      deliveries.map((d) => d.endpointId),
      deliveries.map((d) => d.eventId),
      deliveries.map((d) => d.eventType),
      deliveries.map((d) => d.payload),
      deliveries.map((d) => d.replayOf),
      now,
      deliveries.map((d) => d.orderingKey ?? null),
    ],
  );
  await q.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, '')`);
  return ids;
}

/** A delivery sent under a synthetic event id: its id, what it replays, and the event its body carries. */
export interface SentUnder {
  id: string;
  eventType: string;
  replayOf: string | null;
  /** The `id` of a replayed event's body; null for pings and their replays. */
  sourceEventId: string | null;
}

/**
 * The ping or replay whose synthetic event id is `eventId`, or null. The delivery's id and the
 * synthetic event id are made at one instant (enqueue's callers), so the look-up is a short range
 * of the primary key, as for the deliveries list's eventId filter (webhooks/deliveries/store.ts).
 */
export async function findSentUnder(q: Queryable, workspaceId: string, eventId: string): Promise<SentUnder | null> {
  const prefix = `whd_${eventId.slice(4, 14)}`;
  const [row] = await q.query<{ id: string; event_type: string; replay_of: string | null; source: string | null }>(
    `SELECT id, event_type, replay_of, CASE WHEN event_type <> 'webhook.ping' THEN payload::jsonb->>'id' END AS source
       FROM webhook_deliveries
      WHERE id > $1 AND id < $2 AND event_id = $3 AND workspace_id = $4 AND payload IS NOT NULL
      LIMIT 1`,
    [prefix, `${prefix}~`, eventId, workspaceId],
  );
  return row ? { id: row.id, eventType: row.event_type, replayOf: row.replay_of, sourceEventId: row.source } : null;
}
