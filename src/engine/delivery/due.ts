import type { Db } from '../../db/db.js';
import { DUE_COUNT_CAP } from '../../ops/metrics.js';

/**
 * Due deliveries and the oldest one's due time, from the `webhook_deliveries_due` index
 * (next_attempt_at of pending rows): a range scan up to now, at most DUE_COUNT_CAP entries.
 */
export async function dueDeliveries(db: Db, now: Date): Promise<{ due: number; oldest: Date | null }> {
  const [row] = await db.query<{ due: number; oldest: Date | null }>(
    `SELECT count(*)::int AS due, min(next_attempt_at) AS oldest
       FROM (SELECT next_attempt_at FROM webhook_deliveries
              WHERE status = 'pending' AND next_attempt_at <= $1
              ORDER BY next_attempt_at LIMIT ${DUE_COUNT_CAP}) d`,
    [now],
  );
  return row;
}
