import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/db.js';
import type { Outcome } from './attempt.js';
import { AUTO_DISABLE_AFTER, autoDisable } from './auto-disable.js';

/**
 * Writes a batch of outcomes in one transaction: the delivery rows, then each endpoint's count of
 * consecutive failed deliveries, then any auto-disable that count calls for.
 *
 * Writes are idempotent and guarded by the claim: a row is only changed while it is still `pending`
 * with this worker's attempt number and lease, so a worker whose lease ran out (and whose row
 * another worker took) changes nothing, and a replayed write is a no-op. A row the API turned
 * `disabled` while the request was in flight (endpoint paused or deleted) stays `disabled`; the
 * attempt's facts are still logged on it. A failed attempt whose endpoint is no longer active ends
 * `disabled` instead of being retried.
 */
export async function recordOutcomes(ctx: AppContext, outcomes: Outcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  await withDeadlockRetry(() =>
    ctx.db.tx(async (q) => {
      const endpointIds = [...new Set(outcomes.map((o) => o.endpointId))].sort();
      // Lock endpoints in a fixed order before touching their deliveries, as the API does, so two
      // workers (or a worker and a PATCH) never wait on each other in a cycle.
      await q.query('SELECT id FROM webhook_endpoints WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [endpointIds]);
      const written = await writeDeliveries(q, outcomes);
      await countFailures(q, ctx, outcomes, written);
    }),
  );
}

async function writeDeliveries(q: Queryable, outcomes: Outcome[]): Promise<Map<string, string>> {
  const rows = outcomes.map((o) => ({
    id: o.id,
    claimed_attempt: o.claimedAttempt,
    lease: o.lease.toISOString(),
    attempted: o.attempted,
    status: o.status,
    next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
    attempted_at: o.attemptedAt.toISOString(),
    error: o.error,
    response_status: o.responseStatus,
    response_time_ms: o.responseTimeMs,
    request_headers: o.requestHeaders,
    response_body: o.responseBody,
    response_headers: o.responseHeaders,
  }));
  const updated = await q.query<{ id: string; status: string }>(
    `WITH o AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS o (
         id text, claimed_attempt int, lease timestamptz, attempted boolean, status text,
         next_attempt_at timestamptz, attempted_at timestamptz, error text, response_status int,
         response_time_ms int, request_headers jsonb, response_body text, response_headers jsonb)
     ), target AS (
       SELECT o.*, d.status AS current_status, (e.active AND e.deleted_at IS NULL) AS endpoint_active
         FROM o
         JOIN webhook_deliveries d ON d.id = o.id
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.attempt = o.claimed_attempt
          AND ((d.status = 'pending' AND d.next_attempt_at = o.lease) OR (d.status = 'disabled' AND o.attempted))
     ), decided AS (
       SELECT target.*, CASE
           WHEN current_status = 'disabled' THEN 'disabled'
           WHEN status = 'success' THEN 'success'
           WHEN NOT endpoint_active THEN 'disabled'
           ELSE status
         END AS new_status
         FROM target
     )
     UPDATE webhook_deliveries d SET
       status = x.new_status,
       next_attempt_at = CASE WHEN x.new_status = 'pending' THEN x.next_attempt_at END,
       attempt = d.attempt + CASE WHEN x.attempted THEN 1 ELSE 0 END,
       delivered_at = CASE WHEN x.new_status = 'success' THEN x.attempted_at ELSE d.delivered_at END,
       last_attempt_at = CASE WHEN x.attempted THEN x.attempted_at ELSE d.last_attempt_at END,
       error = CASE WHEN x.attempted THEN x.error ELSE d.error END,
       response_status = CASE WHEN x.attempted THEN x.response_status ELSE d.response_status END,
       response_time_ms = CASE WHEN x.attempted THEN x.response_time_ms ELSE d.response_time_ms END,
       request_headers = CASE WHEN x.attempted THEN x.request_headers ELSE d.request_headers END,
       response_body = CASE WHEN x.attempted THEN x.response_body ELSE d.response_body END,
       response_headers = CASE WHEN x.attempted THEN x.response_headers ELSE d.response_headers END
       FROM decided x
      WHERE d.id = x.id
     RETURNING d.id, x.new_status AS status, x.current_status`,
    [JSON.stringify(rows)],
  );
  // Only a move out of `pending` counts for the endpoint.
  return new Map(
    (updated as { id: string; status: string; current_status: string }[])
      .filter((r) => r.current_status === 'pending')
      .map((r) => [r.id, r.status]),
  );
}

/**
 * A success resets the endpoint's count of consecutive failed deliveries; a delivery that ends
 * `failed` adds one. Taken in the batch's order, an endpoint's new count is (0 if any success, else
 * the stored count) plus the failures after its last success.
 */
async function countFailures(q: Queryable, ctx: AppContext, outcomes: Outcome[], written: Map<string, string>): Promise<void> {
  const changes = new Map<string, { reset: boolean; failures: number }>();
  for (const o of outcomes) {
    const status = written.get(o.id);
    if (status !== 'success' && status !== 'failed') continue;
    const change = changes.get(o.endpointId) ?? { reset: false, failures: 0 };
    if (status === 'success') changes.set(o.endpointId, { reset: true, failures: 0 });
    else changes.set(o.endpointId, { ...change, failures: change.failures + 1 });
  }
  if (changes.size === 0) return;
  const rows = [...changes].map(([id, c]) => ({ id, reset: c.reset, failures: c.failures }));
  const endpoints = await q.query<{ id: string; workspace_id: string; url: string; consecutive_failures: number; active: boolean }>(
    `UPDATE webhook_endpoints e
        SET consecutive_failures = CASE WHEN c.reset THEN 0 ELSE e.consecutive_failures END + c.failures
       FROM jsonb_to_recordset($1::jsonb) AS c (id text, reset boolean, failures int)
      WHERE e.id = c.id
     RETURNING e.id, e.workspace_id, e.url, e.consecutive_failures, (e.active AND e.deleted_at IS NULL) AS active`,
    [JSON.stringify(rows)],
  );
  const now = ctx.clock.now();
  for (const endpoint of endpoints.sort((a, b) => a.id.localeCompare(b.id))) {
    if (endpoint.active && endpoint.consecutive_failures >= AUTO_DISABLE_AFTER) {
      await autoDisable(q, ctx, { id: endpoint.id, workspaceId: endpoint.workspace_id, url: endpoint.url }, now);
    }
  }
}

/** PostgreSQL may still pick a deadlock victim (e.g. against an API transaction); the batch is then simply written again. */
async function withDeadlockRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw error;
    }
  }
}
