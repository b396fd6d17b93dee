import { arrayLiteral, type ArrayValue } from '../../db/arrays.js';
import type { Db, Queryable } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { Metrics } from '../../ops/metrics.js';
import { toIso } from '../../lib/iso.js';
import type { Attempted, Outcome } from './job.js';
import { AUTO_DISABLE_AFTER, GONE, autoDisable, type AutoDisableReason, type EventWriter } from './auto-disable.js';
import { MARK_OF_ROW } from './claim.js';

/**
 * Writes a batch of outcomes of rows not held by a row lock: the delivery rows with their attempts
 * log, each endpoint's count of consecutive failed deliveries, and any auto-disable that count calls for
 * or that a receiver asked for (410 Gone: the endpoint is disabled at once, reason `gone`).
 *
 * Writes are idempotent and guarded by the take: a row is only changed while it is still `pending`
 * with this worker's attempt number and mark (job.ts: its due time, or the lease it was handed over or
 * left a hold with), so a worker whose lease ran out (and whose row another worker took) changes nothing,
 * and a replayed write is a no-op. A row the API turned
 * `disabled` while the request was in flight (endpoint paused or deleted) stays `disabled`; the
 * attempt's facts are still logged on it. A failed attempt whose endpoint is no longer active ends
 * `disabled` instead of being retried.
 *
 * The common batch (successes on healthy endpoints, retries) is one statement. A batch that may
 * change an endpoint's count locks those endpoints first, in id order, as the API does before it
 * touches an endpoint's deliveries, so the two never wait on each other in a cycle.
 */
export async function recordOutcomes(
  deps: { db: Db; clock: Clock; outbox: EventWriter; metrics?: Pick<Metrics, 'autoDisabled'>; push?: { wake(): void } },
  outcomes: Outcome[],
): Promise<void> {
  if (outcomes.length === 0) return;
  const counted = outcomes.filter(changesCount);
  if (counted.length === 0) {
    // A success may still find a count that another worker raised since the claim: reset it inline.
    await withDeadlockRetry(() => writeDeliveries(deps.db, outcomes, true));
    return;
  }
  const endpointIds = [...new Set(counted.map((o) => o.endpointId))].sort();
  const disabled = await withDeadlockRetry(() =>
    deps.db.tx(async (q) => {
      await q.query('SELECT id FROM webhook_endpoints WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [endpointIds]);
      const written = await writeDeliveries(q, outcomes, false);
      const autoDisabled: string[] = [];
      const now = deps.clock.now();
      const disable = async (endpoint: EndpointRow, reason: AutoDisableReason) => {
        const disabled = await autoDisable(q, deps.outbox, { id: endpoint.id, workspaceId: endpoint.workspace_id, url: endpoint.url }, now, reason);
        if (disabled) autoDisabled.push(endpoint.id);
      };
      await countFailures(q, outcomes, written, disable);
      return autoDisabled;
    }),
  );
  for (let i = 0; i < disabled.length; i++) deps.metrics?.autoDisabled();
  // Their notifications are committed: pushed to the users' devices in the background, never awaited here.
  if (disabled.length > 0) deps.push?.wake();
}

/**
 * Whether an outcome may change its endpoint's count of consecutive failed deliveries: a delivery
 * failing for good, or a success on an endpoint with failures on record. Such outcomes lock the
 * endpoint, so rows under a hold write them after its transaction (hold.ts).
 */
export function changesCount(o: Outcome): boolean {
  return o.status === 'failed' || (o.status === 'success' && o.endpointFailures > 0) || gone(o);
}

/** The receiver answered 410 Gone: it asks not to be sent anything more (Standard Webhooks). */
function gone(o: Outcome): boolean {
  return o.kind === 'attempted' && o.responseStatus === GONE;
}

/**
 * Writes outcomes of rows held by row locks of the open transaction `q`, none of which changes a
 * count (`changesCount`), and returns the endpoints whose count must be reset: a success found
 * failures that another worker recorded since the claim. The reset is left to the caller, after
 * commit: an endpoint locked while this transaction holds deliveries would wait on the API in a
 * cycle (the API locks an endpoint, then its deliveries).
 */
export async function writeHeldOutcomes(q: Queryable, outcomes: Outcome[]): Promise<string[]> {
  if (outcomes.length === 0) return [];
  const reset = await writeDeliveries(q, outcomes, false, 'resets');
  return reset.map((r) => r.endpoint_id);
}

/** The earliest time a written outcome made its row due again, if any. */
export function earliestRetry(outcomes: Outcome[]): Date | null {
  let next: Date | null = null;
  for (const o of outcomes) if (o.status === 'pending' && o.nextAttemptAt && (!next || o.nextAttemptAt < next)) next = o.nextAttemptAt;
  return next;
}

/** A success resets its endpoint's count of consecutive failed deliveries. */
export async function resetFailures(q: Queryable, endpointIds: string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await q.query('UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id = ANY($1::text[]) AND consecutive_failures <> 0', [endpointIds]);
}

/**
 * Where a guarded row goes: a row disabled meanwhile stays disabled; a 2xx is a success; any other
 * outcome for an endpoint that is no longer active ends disabled rather than being retried.
 */
const NEW_STATUS = `CASE
    WHEN d.status = 'disabled' THEN 'disabled'
    WHEN o.status = 'success' THEN 'success'
    WHEN NOT (e.active AND e.deleted_at IS NULL) THEN 'disabled'
    ELSE o.status
  END`;

interface Written {
  id: string;
  endpoint_id: string;
  status: string;
  /** The endpoint's count was not 0 when the row was written. */
  endpoint_failing: boolean;
}

/**
 * How a write knows the row is still this worker's: it is `pending` with the attempt number and the
 * mark it was taken with (job.ts); a row the API disabled meanwhile still gets the attempt's facts.
 * A row held by a lock of the writing transaction passes trivially: nothing else can have changed it.
 * Written as a CASE so that the planner draws no condition on the row's status alone from it: from
 * `status = 'pending' OR status = 'disabled'` it would read every pending row by the due index
 * whenever the statistics say few are pending (a backlog they do not know of yet), for every batch.
 */
const GUARD = `CASE d.status WHEN 'pending' THEN ${MARK_OF_ROW} IN (o.mark, o.other_mark) WHEN 'disabled' THEN o.attempted ELSE false END`;

/**
 * What a write answers: every row it changed, with its new status (`rows`), or one row per endpoint
 * whose count a success must reset (`resets`; none, as a rule), for held rows, whose writer reads
 * nothing else.
 */
const ANSWER = {
  rows: 'SELECT id, endpoint_id, status, endpoint_failing FROM written',
  resets: `SELECT DISTINCT ON (endpoint_id) id, endpoint_id, status, endpoint_failing FROM written
            WHERE status = 'success' AND endpoint_failing`,
};

/**
 * Every attempt written (the row's guard passed and a request was made) is kept in the attempts log,
 * numbered by the row's new attempt count, by the same statement: no round trip of its own. A data-
 * modifying CTE runs whether or not the answer reads it. Its key, (delivery, attempt), is unique by
 * the guard: a row's attempt count only ever grows, and a write passes the guard only with the count
 * it was taken with, so each attempt number is written once. The insert therefore has no ON
 * CONFLICT clause: a speculative insertion checks the key before and confirms the row after, which
 * cost one more WAL record and three more buffer visits per attempt (EXPLAIN (ANALYZE, WAL, BUFFERS):
 * 9.1 records and 26.3 buffers per recorded outcome with it, 8.1 and 23.3 without).
 */
const LOG_ATTEMPTS = `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status,
                                              response_time_ms, error, request_signature, request_headers, response_headers, response_body)
       SELECT id, attempt, workspace_id, endpoint_id, attempted_at, ok, response_status, response_time_ms, error, request_signature,
              request_headers, response_headers, response_body
         FROM written WHERE attempted`;

/**
 * Writes the rows, logs their attempts (LOG_ATTEMPTS) and answers as `answer` says (ANSWER).
 *
 * The batch travels as one array per column (array literals, db/arrays.ts). Unlike a JSON document
 * of row objects, arrays are not parsed into a tree whose keys are sorted row by row, which cut
 * PostgreSQL's CPU per delivery by about a tenth. The headers, stored as jsonb anyway, travel as
 * two JSON arrays taken apart by position: one JSON.stringify each, where an array literal would
 * escape every quote of every row. Of the request, only the signature and the endpoint's own
 * headers are kept (migrations/016).
 * `o` drives the join and each row is then found by primary key, in the generic plan too: joined
 * the other way round, every row of the table side rescans the whole batch (quadratic in its size).
 */
async function writeDeliveries(
  q: Queryable,
  outcomes: Outcome[],
  resetOnSuccess: boolean,
  answer: keyof typeof ANSWER = 'rows',
): Promise<Written[]> {
  const column = (value: (o: Outcome) => ArrayValue): string => arrayLiteral(outcomes.map(value));
  const reset = resetOnSuccess
    ? `, reset AS (
         UPDATE webhook_endpoints SET consecutive_failures = 0
          WHERE id IN (SELECT endpoint_id FROM written WHERE status = 'success') AND consecutive_failures <> 0
       )`
    : '';
  return q.query<Written>(
    `WITH o AS (
       SELECT *, nullif($11::jsonb -> (n - 1)::int, 'null') AS request_headers,
              nullif($13::jsonb -> (n - 1)::int, 'null') AS response_headers
         FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::boolean[], $5::text[], $6::timestamptz[],
                     $7::timestamptz[], $8::text[], $9::int[], $10::int[], $12::text[], $14::text[], $15::timestamptz[]) WITH ORDINALITY
           AS o (id, claimed_attempt, mark, attempted, status, next_attempt_at, attempted_at, error, response_status,
                 response_time_ms, response_body, request_signature, other_mark, n)
     ), written AS (
       UPDATE webhook_deliveries d SET
         status = ${NEW_STATUS},
         next_attempt_at = CASE WHEN ${NEW_STATUS} = 'pending' THEN o.next_attempt_at END,
         attempt = d.attempt + CASE WHEN o.attempted THEN 1 ELSE 0 END,
         delivered_at = CASE WHEN ${NEW_STATUS} = 'success' THEN o.attempted_at ELSE d.delivered_at END,
         last_attempt_at = CASE WHEN o.attempted THEN o.attempted_at ELSE d.last_attempt_at END,
         error = CASE WHEN o.attempted THEN o.error ELSE d.error END,
         response_status = CASE WHEN o.attempted THEN o.response_status ELSE d.response_status END,
         response_time_ms = CASE WHEN o.attempted THEN o.response_time_ms ELSE d.response_time_ms END
         FROM o, webhook_endpoints e
        WHERE d.id = o.id AND e.id = d.endpoint_id
          AND d.attempt = o.claimed_attempt
          AND ${GUARD}
       RETURNING d.id, d.endpoint_id, d.status, e.consecutive_failures <> 0 AS endpoint_failing,
                 d.workspace_id, d.attempt, o.attempted, o.attempted_at, o.status = 'success' AS ok, o.response_status,
                 o.response_time_ms, o.error, o.request_signature, o.request_headers, o.response_headers, o.response_body
     ), logged AS (
       ${LOG_ATTEMPTS}
     )${reset}
     ${ANSWER[answer]}`,
    [
      column((o) => o.id),
      column((o) => o.claimedAttempt),
      column((o) => toIso(o.mark)),
      column((o) => o.kind === 'attempted'),
      column((o) => o.status),
      column((o) => (o.kind !== 'disabled' && o.nextAttemptAt ? toIso(o.nextAttemptAt) : null)),
      column((o) => toIso(o.attemptedAt)),
      column((o) => attempt(o)?.error ?? null),
      column((o) => attempt(o)?.responseStatus ?? null),
      column((o) => attempt(o)?.responseTimeMs ?? null),
      // Most endpoints have no headers of their own: then no document at all (-> of NULL is NULL).
      outcomes.some((o) => attempt(o)?.requestHeaders) ? JSON.stringify(outcomes.map((o) => attempt(o)?.requestHeaders ?? null)) : null,
      column((o) => attempt(o)?.responseBody ?? null),
      JSON.stringify(outcomes.map((o) => attempt(o)?.responseHeaders ?? null)),
      column((o) => attempt(o)?.requestSignature ?? null),
      // Almost always none: then no array at all (unnest pads it with nulls).
      outcomes.some((o) => o.otherMark) ? column((o) => (o.otherMark ? toIso(o.otherMark) : null)) : null,
    ],
  );
}

/** An endpoint as an auto-disable needs it. */
interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
}

/** Disables an endpoint inside the batch's transaction (auto-disable.ts). */
type Disable = (endpoint: EndpointRow, reason: AutoDisableReason) => Promise<void>;

/**
 * A success resets the endpoint's count of consecutive failed deliveries; a delivery that ends
 * `failed` adds one. Taken in the batch's order, an endpoint's new count is (0 if any success, else
 * the stored count) plus the failures after its last success.
 */
async function countFailures(q: Queryable, outcomes: Outcome[], writes: Written[], disable: Disable): Promise<void> {
  // A row reaches `success` or `failed` only from `pending`; `disabled` never counts.
  const written = new Map(writes.map((r) => [r.id, r.status]));
  const changes = new Map<string, { reset: boolean; failures: number }>();
  for (const o of outcomes) {
    const status = written.get(o.id);
    if (status !== 'success' && status !== 'failed') continue;
    const change = changes.get(o.endpointId) ?? { reset: false, failures: 0 };
    if (status === 'success') changes.set(o.endpointId, { reset: true, failures: 0 });
    else changes.set(o.endpointId, { ...change, failures: change.failures + 1 });
  }
  await disableGone(q, outcomes, writes, disable);
  if (changes.size === 0) return;
  const rows = [...changes].map(([id, c]) => ({ id, reset: c.reset, failures: c.failures }));
  const endpoints = await q.query<EndpointRow & { consecutive_failures: number; active: boolean }>(
    `UPDATE webhook_endpoints e
        SET consecutive_failures = CASE WHEN c.reset THEN 0 ELSE e.consecutive_failures END + c.failures
       FROM jsonb_to_recordset($1::jsonb) AS c (id text, reset boolean, failures int)
      WHERE e.id = c.id AND (c.failures > 0 OR e.consecutive_failures <> 0)
     RETURNING e.id, e.workspace_id, e.url, e.consecutive_failures, (e.active AND e.deleted_at IS NULL) AS active`,
    [JSON.stringify(rows)],
  );
  for (const endpoint of endpoints.sort((a, b) => a.id.localeCompare(b.id))) {
    if (endpoint.active && endpoint.consecutive_failures >= AUTO_DISABLE_AFTER) await disable(endpoint, 'auto');
  }
}

/** Endpoints whose receiver answered 410 Gone to an attempt written here: disabled at once. */
async function disableGone(q: Queryable, outcomes: Outcome[], writes: Written[], disable: Disable): Promise<void> {
  const written = new Set(writes.map((r) => r.id));
  const endpointIds = [...new Set(outcomes.filter((o) => gone(o) && written.has(o.id)).map((o) => o.endpointId))].sort();
  if (endpointIds.length === 0) return;
  const endpoints = await q.query<EndpointRow>(
    'SELECT id, workspace_id, url FROM webhook_endpoints WHERE id = ANY($1::text[]) AND active AND deleted_at IS NULL ORDER BY id',
    [endpointIds],
  );
  for (const endpoint of endpoints) await disable(endpoint, 'gone');
}

/** The attempt an outcome records, if one was made. */
function attempt(o: Outcome): Attempted | null {
  return o.kind === 'attempted' ? o : null;
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
