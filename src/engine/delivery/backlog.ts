import type { Queryable } from '../../db/db.js';

/** Rows one move takes at most; the rest are taken by the next. */
export const BACKLOG_MOST = 1_000;

/**
 * Moves an endpoint's due backlog behind its lane's horizon in one statement (lanes.ts): the rows a
 * claim would take now (pending, due, not locked by a worker) get next_attempt_at `after + n ×
 * stepMs` in their due order, n from 1. Without it, every row of an endpoint that cannot take more
 * would be claimed, offered and deferred one by one, and a backlog of thousands at the head of the
 * due index would keep everyone else's deliveries waiting behind it. Rows of a hand-off under lease
 * are not due, so never moved. Whole milliseconds, as every time the service writes. Returns how
 * many rows moved.
 */
export async function moveBacklog(db: Queryable, endpointId: string, now: Date, after: Date, stepMs: number): Promise<number> {
  const rows = await db.query<{ moved: number }>(
    `WITH due AS (
       SELECT id, row_number() OVER (ORDER BY next_attempt_at, id) AS n
         FROM (SELECT id, next_attempt_at FROM webhook_deliveries
                WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= $2
                LIMIT $5 FOR UPDATE SKIP LOCKED) d
     ), moved AS (
       UPDATE webhook_deliveries w SET next_attempt_at = $3::timestamptz + due.n * $4::int * interval '1 millisecond'
         FROM due WHERE w.id = due.id
       RETURNING 1
     )
     SELECT count(*)::int AS moved FROM moved`,
    [endpointId, now, after, Math.max(1, Math.ceil(stepMs)), BACKLOG_MOST],
  );
  return rows[0].moved;
}
