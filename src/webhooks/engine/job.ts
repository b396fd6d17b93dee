/**
 * What one taken job came to, ready to be written. `attempted` is false when no request was made:
 * the endpoint turned inactive before the attempt (`disabled`), or the job was put off to a later
 * time without an attempt (`pending`, its endpoint being busy or rate limited; see lanes.ts). Built
 * by attempt.ts.
 */
export interface Outcome {
  id: string;
  endpointId: string;
  /** The endpoint's count of consecutive failed deliveries when the row was taken. */
  endpointFailures: number;
  claimedAttempt: number;
  /** The row's `next_attempt_at` while taken (job.ts): the write is guarded by it. */
  mark: Date;
  attempted: boolean;
  status: 'success' | 'pending' | 'failed' | 'disabled';
  nextAttemptAt: Date | null;
  attemptedAt: Date;
  error: string | null;
  responseStatus: number | null;
  responseTimeMs: number | null;
  /** The attempt's webhook-signature: with it, the log rebuilds the standard headers sent (migrations/016). */
  requestSignature: string | null;
  /** The endpoint's own headers sent, values redacted; null when it has none. */
  requestHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseHeaders: Record<string, string> | null;
  /** The attempt got no complete answer in time (lanes.ts narrows such an endpoint's share). */
  timedOut: boolean;
}

/**
 * What holds a job's row while its worker has it, besides the row's own `next_attempt_at`: the open
 * transaction of a held claim (held-claim.ts), whose row lock keeps every other worker off it.
 */
export interface RowLock {
  /** The job's outcome, to be written by the lock's transaction (or after it, see held-claim.ts). */
  finish(job: Job, outcome: Outcome): void;
  /** The job will not be attempted by this worker: its row is freed, due as it was. */
  drop(job: Job): void;
}

/**
 * One delivery taken by a worker, with everything needed to sign and send it: the engine's own job
 * type. Claims (claim.ts) and writes that hand their new deliveries straight to a worker
 * (../handoff.ts) make them.
 *
 * A taken row is marked by its `next_attempt_at`, and every outcome write is guarded by that mark
 * (outcome.ts): a row is changed only while it still holds exactly what this worker took it with.
 * Under a row lock the mark is the row's due time, left as it was; under a lease it is the lease.
 */
export interface Job {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** Attempts made before this one. */
  attempt: number;
  /** The row's `next_attempt_at` while this worker has it. Changed only once a write has committed it. */
  mark: Date;
  /** The row lock that holds it, until that transaction has ended; null when only the mark holds it. */
  held: RowLock | null;
  /** Not to be sent before this time (the endpoint's rate limit, rate.ts); null: now. */
  notBefore: Date | null;
  /** The exact text to POST: the stored event, or the row's own payload (pings, replays). */
  body: string | null;
  url: string;
  /** False when the endpoint was paused, auto-disabled or deleted since the row was enqueued. */
  endpointActive: boolean;
  /** The endpoint's consecutive failed deliveries when the row was taken (0 for a healthy endpoint). */
  endpointFailures: number;
  /** Deliveries per second the endpoint accepts, across every worker; null: no limit. */
  rateLimit: number | null;
  /** The endpoint's extra request headers, sealed; null (the common case) for none. */
  headers_enc: string | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * A delivery a write inserted already taken for a worker of its process (../../outbox/fanout.ts,
 * the `handed` rows of a fan-out with hand-off), as that statement returns it.
 */
export interface HandedRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  url: string;
  consecutive_failures: number;
  rate_limit: number | null;
  headers_enc: string | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: string | null;
}

/** A handed row as a job: its first attempt, under the lease the write gave it, with its event's text. */
export function handedJob(row: HandedRow, lease: Date, body: string | null): Job {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: 0,
    mark: lease,
    held: null,
    notBefore: null,
    body,
    url: row.url,
    endpointActive: true,
    endpointFailures: row.consecutive_failures,
    rateLimit: row.rate_limit,
    headers_enc: row.headers_enc,
    secret_enc: row.secret_enc,
    previous_secret_enc: row.previous_secret_enc,
    previous_secret_expires_at: row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at),
  };
}
