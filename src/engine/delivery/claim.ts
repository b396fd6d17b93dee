import type { Queryable } from '../../db/db.js';
import { toIso } from '../../lib/iso.js';
import { jobOf, type Job, type JobRow, type Holding } from './job.js';
import type { DuePosition } from './position.js';

/**
 * A row's mark as SQL (job.ts): its next_attempt_at to the millisecond, as JavaScript's Date holds
 * it. The service writes whole milliseconds, but a row written by other means (a data migration, a
 * seed with now()) may carry microseconds, and a guard comparing them with the Date read back would
 * match nothing: the outcome lost, the delivery sent again and again.
 */
export const MARK_OF_ROW = `date_trunc('milliseconds', d.next_attempt_at)`;

interface ClaimRow extends JobRow {
  attempt: number;
  due: Date;
  body: string | null;
  trace_context: string | null;
  endpoint_active: boolean;
  previous_secret_expires_at: Date | null;
}

/**
 * What a claimed row is sent with: its endpoint and its body (the stored event, or the row's own
 * payload), for rows of the CTE `c`. Each is a LATERAL sub-select by primary key with LIMIT 1, which
 * keeps it from being pulled up into a join the planner may turn into a scan: the claims run with
 * generic plans (planned once per connection, not on every claim, where planning took as long as
 * the claim itself), and a generic plan does not know how few rows a claim takes.
 */
const SEND_WITH = `SELECT c.id, c.workspace_id, c.endpoint_id, c.event_id, c.event_type, c.attempt, c.due,
            coalesce(c.payload, ev.body) AS body, ev.trace_context,
            e.url, e.url_enc, e.exchange, e.routing_key, e.subject, e.propagate_trace, e.endpoint_active, e.consecutive_failures, e.endpoint_throttled, e.rate_limit, e.headers_enc, e.secret_enc, e.previous_secret_enc,
            e.previous_secret_expires_at
       FROM c
       CROSS JOIN LATERAL (
         SELECT url, url_enc, exchange, routing_key, subject, propagate_trace, (active AND deleted_at IS NULL) AS endpoint_active, consecutive_failures,
                throttled_since IS NOT NULL AS endpoint_throttled, rate_limit, headers_enc,
                secret_enc, previous_secret_enc, previous_secret_expires_at
           FROM webhook_endpoints WHERE id = c.endpoint_id LIMIT 1) e
       LEFT JOIN LATERAL (SELECT body, trace_context FROM events WHERE id = c.event_id AND c.payload IS NULL LIMIT 1) ev ON true`;

/**
 * The ordering guard of a claim, on the candidate row named `row`: a row with an ordering key (its endpoint
 * orders by subject, fanout.ts) waits while an older delivery of its endpoint and subject is still
 * pending, whether due, retrying later or in another worker's hands. Rows without a key, every row
 * of an endpoint that does not order, stop at the first test and never run the sub-select; the
 * sub-select is one probe of the partial index webhook_deliveries_ordering, which holds pending
 * ordered rows only. "Older" is by ordering_seq, the order in which the rows were written.
 * A final status is never left again (a replay is a new row), so no claim can see the older row
 * finished while it is not: at worst it sees it pending a moment longer and leaves the row for the
 * next claim.
 */
const inOrder = (row: string) => `(${row}.ordering_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM webhook_deliveries o
              WHERE o.endpoint_id = ${row}.endpoint_id AND o.ordering_key = ${row}.ordering_key AND o.ordering_key IS NOT NULL
                AND o.status = 'pending' AND o.ordering_seq < ${row}.ordering_seq))`;

/**
 * Takes up to `limit` due rows, oldest due first, under row locks of the open transaction `tx`
 * (hold.ts), and writes nothing: the rows stay taken while the transaction is open, and their
 * outcomes are written in it. A worker that dies loses its connection, and its rows are due again
 * at once. SKIP LOCKED lets any number of workers claim side by side without waiting on each other;
 * the MATERIALIZED CTE locks each row exactly once and returns its newest version. With `after`,
 * only rows after that place in the due order are looked at (position.ts).
 */
export async function claimLocked(tx: Queryable, hold: Holding, now: Date, limit: number, after: DuePosition | null = null): Promise<Job[]> {
  const rows = await tx.query<ClaimRow>(
    `WITH c AS MATERIALIZED (
       SELECT id, workspace_id, endpoint_id, event_id, event_type, payload, attempt, ${MARK_OF_ROW} AS due
         FROM webhook_deliveries d
        WHERE status = 'pending' AND next_attempt_at <= $1 AND (next_attempt_at, id) > ($3::timestamptz, $4::text) AND ${inOrder('d')}
        ORDER BY next_attempt_at, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     )
     ${SEND_WITH}`,
    [now, limit, after ? after.due : '-infinity', after ? after.id : ''],
  );
  return rows.map((r) => jobOf(r, { attempt: r.attempt, mark: r.due, hold, endpointActive: r.endpoint_active, body: r.body, trace: r.trace_context }));
}

/**
 * Gives rows handed over under a lease and never attempted back (a worker stopping): they become
 * due at `now` instead of when their lease runs out; only rows still holding the job's mark are
 * touched.
 */
export async function releaseLeases(q: Queryable, jobs: Job[], now: Date): Promise<void> {
  if (jobs.length === 0) return;
  await q.query(
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS r (id, mark)
      WHERE d.id = r.id AND d.status = 'pending' AND ${MARK_OF_ROW} = r.mark`,
    [jobs.map((j) => j.id), jobs.map((j) => toIso(j.mark)), now],
  );
}

/**
 * When the next pending row comes due after `now` (a retry, a put-off job, a lease running out), so
 * an idle worker wakes then rather than at its next poll. One step into the due-rows index.
 */
export async function nextDue(q: Queryable, now: Date): Promise<Date | null> {
  const [row] = await q.query<{ at: Date | null }>(
    `SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > $1`,
    [now],
  );
  return row?.at ?? null;
}

/** When the earliest pending row is due, now or later (null: none pending). One step into the due-rows index. */
export async function earliestDue(q: Queryable): Promise<Date | null> {
  const [row] = await q.query<{ at: Date | null }>(`SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'`);
  return row?.at ?? null;
}
