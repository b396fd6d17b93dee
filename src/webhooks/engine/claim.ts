import type { Queryable } from '../../db/db.js';
import { toIso } from '../../lib/iso.js';

import type { HeldClaim } from './held-claim.js';

/** A delivery taken by a worker, with everything needed to sign and send it. */
export interface ClaimedDelivery {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** Attempts made before this one. */
  attempt: number;
  /**
   * A claim by lease: the row's next_attempt_at while this worker holds it; outcome writes check it.
   * Null while the row is held by a row lock instead (`held`).
   */
  lease: Date | null;
  /** The open transaction whose row lock holds this row, until it commits (held-claim.ts). */
  held: HeldClaim | null;
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
 * What a claimed row is sent with: its endpoint and its body (the stored event, or the row's own
 * payload), for rows of the CTE `c`. Each is a LATERAL sub-select by primary key with LIMIT 1, which
 * keeps it from being pulled up into a join the planner may turn into a scan: the claims run with
 * generic plans (planned once per connection, not on every claim, where planning took as long as
 * the claim itself), and a generic plan does not know how few rows a claim takes.
 */
const SEND_WITH = `SELECT c.id, c.workspace_id, c.endpoint_id, c.event_id, c.event_type, c.attempt,
            coalesce(c.payload, ev.body) AS body,
            e.url, e.endpoint_active, e.consecutive_failures, e.secret_enc, e.previous_secret_enc, e.previous_secret_expires_at
       FROM c
       CROSS JOIN LATERAL (
         SELECT url, (active AND deleted_at IS NULL) AS endpoint_active, consecutive_failures,
                secret_enc, previous_secret_enc, previous_secret_expires_at
           FROM webhook_endpoints WHERE id = c.endpoint_id LIMIT 1) e
       LEFT JOIN LATERAL (SELECT body FROM events WHERE id = c.event_id AND c.payload IS NULL LIMIT 1) ev ON true`;

/**
 * Takes up to `limit` due rows by lease, in one statement. SKIP LOCKED lets any number of workers
 * claim side by side without waiting on each other; the claim itself is pushing next_attempt_at
 * forward by the lease, so a row whose worker dies becomes due again when the lease runs out
 * (at-least-once). The rows are found by primary key from the array the locking sub-select makes,
 * which a generic plan cannot turn into a scan of the key.
 */
export async function claimDue(q: Queryable, now: Date, leaseMs: number, limit: number): Promise<ClaimedDelivery[]> {
  const lease = new Date(now.getTime() + leaseMs);
  const rows = await q.query<ClaimRow>(
    `WITH c AS (
       UPDATE webhook_deliveries d SET next_attempt_at = $2
        WHERE d.id = ANY (ARRAY(
          SELECT id FROM webhook_deliveries
           WHERE status = 'pending' AND next_attempt_at <= $1
           ORDER BY next_attempt_at
           LIMIT $3
           FOR UPDATE SKIP LOCKED))
       RETURNING d.id, d.workspace_id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempt
     )
     ${SEND_WITH}`,
    [now, lease, limit],
  );
  return rows.map((r) => claimedOf(r, lease, null));
}

/**
 * Takes up to `limit` due rows under row locks of the open transaction `held` and writes nothing:
 * the rows stay taken while the transaction is open, and the outcomes are written in it (see
 * held-claim.ts). A worker that dies loses its connection, and its rows are due again at once.
 * The MATERIALIZED CTE locks each row exactly once and returns its newest version.
 */
export async function claimHeld(held: HeldClaim, now: Date, limit: number): Promise<ClaimedDelivery[]> {
  const rows = await held.tx.query<ClaimRow>(
    `WITH c AS MATERIALIZED (
       SELECT id, workspace_id, endpoint_id, event_id, event_type, payload, attempt
         FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= $1
        ORDER BY next_attempt_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     )
     ${SEND_WITH}`,
    [now, limit],
  );
  return rows.map((r) => claimedOf(r, null, held));
}

function claimedOf(r: ClaimRow, lease: Date | null, held: HeldClaim | null): ClaimedDelivery {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    attempt: r.attempt,
    lease,
    held,
    body: r.body,
    url: r.url,
    endpointActive: r.endpoint_active,
    endpointFailures: r.consecutive_failures,
    secret_enc: r.secret_enc,
    previous_secret_enc: r.previous_secret_enc,
    previous_secret_expires_at: r.previous_secret_expires_at,
  };
}

/**
 * Hands claimed rows that were never attempted back (a worker stopping): rows taken by lease become
 * due at `now` instead of when their lease runs out (only those still held under this claim are
 * touched); rows held by a row lock are free once their transaction ends.
 */
export async function releaseClaims(q: Queryable, rows: ClaimedDelivery[], now: Date): Promise<void> {
  const leased = rows.flatMap((r) => (r.lease ? [{ id: r.id, lease: r.lease }] : []));
  if (leased.length === 0) return;
  await q.query(
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS r (id, lease)
      WHERE d.id = r.id AND d.status = 'pending' AND d.next_attempt_at = r.lease`,
    [leased.map((r) => r.id), leased.map((r) => toIso(r.lease)), now],
  );
}
