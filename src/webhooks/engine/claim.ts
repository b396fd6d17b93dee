import type { Queryable } from '../../db/db.js';
import { toIso } from '../../lib/iso.js';

/** A delivery taken by a worker, with everything needed to sign and send it. */
export interface ClaimedDelivery {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** Attempts made before this one. */
  attempt: number;
  /** The claim: the row's next_attempt_at while this worker holds it. Outcome writes check it. */
  lease: Date;
  /** The exact text to POST: the stored event, or the row's own payload (pings, replays). */
  body: string | null;
  url: string;
  /** False when the endpoint was paused, auto-disabled or deleted since the row was enqueued. */
  endpointActive: boolean;
  /** The endpoint's consecutive failed deliveries at claim time (0 for a healthy endpoint). */
  endpointFailures: number;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}

interface ClaimRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  body: string | null;
  url: string;
  endpoint_active: boolean;
  consecutive_failures: number;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * Takes up to `limit` due rows in one statement. SKIP LOCKED lets any number of workers claim side by
 * side without waiting on each other; the claim itself is pushing next_attempt_at forward by the
 * lease, so a row whose worker dies becomes due again when the lease runs out (at-least-once).
 * The MATERIALIZED CTE makes the locking sub-select run exactly once.
 */
export async function claimDue(q: Queryable, now: Date, leaseMs: number, limit: number): Promise<ClaimedDelivery[]> {
  const lease = new Date(now.getTime() + leaseMs);
  const rows = await q.query<ClaimRow>(
    `WITH due AS MATERIALIZED (
       SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= $1
        ORDER BY next_attempt_at
        LIMIT $3
        FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE webhook_deliveries d SET next_attempt_at = $2
         FROM due WHERE d.id = due.id
       RETURNING d.id, d.workspace_id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempt
     )
     SELECT c.id, c.workspace_id, c.endpoint_id, c.event_id, c.event_type, c.attempt,
            coalesce(c.payload, ev.body) AS body,
            e.url, (e.active AND e.deleted_at IS NULL) AS endpoint_active, e.consecutive_failures,
            e.secret_enc, e.previous_secret_enc, e.previous_secret_expires_at
       FROM claimed c
       JOIN webhook_endpoints e ON e.id = c.endpoint_id
       LEFT JOIN events ev ON ev.id = c.event_id AND c.payload IS NULL`,
    [now, lease, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    attempt: r.attempt,
    lease,
    body: r.body,
    url: r.url,
    endpointActive: r.endpoint_active,
    endpointFailures: r.consecutive_failures,
    secret_enc: r.secret_enc,
    previous_secret_enc: r.previous_secret_enc,
    previous_secret_expires_at: r.previous_secret_expires_at,
  }));
}

/**
 * Hands claimed rows that were never attempted back (a worker stopping): they become due at `now`
 * instead of when their lease runs out. Only rows still held under this claim are touched.
 */
export async function releaseClaims(q: Queryable, rows: ClaimedDelivery[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS r (id, lease)
      WHERE d.id = r.id AND d.status = 'pending' AND d.next_attempt_at = r.lease`,
    [rows.map((r) => r.id), rows.map((r) => toIso(r.lease)), now],
  );
}
