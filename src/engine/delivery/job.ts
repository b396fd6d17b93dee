import type { AttemptSubject } from '../../lib/trace.js';

/**
 * One delivery taken by a worker, with everything needed to sign and send it. A claim (claim.ts) or
 * a hand-off (handoff.ts) reads its row and `jobOf` makes it; nothing changes it afterwards.
 *
 * A taken row is known by its mark, the `next_attempt_at` it was taken with, and every outcome write
 * is guarded by the mark (outcome.ts): a row is changed only while it still holds exactly what this
 * worker took it with. Under a hold the mark is the row's due time, left as it was; a row handed
 * over carries its lease.
 */
export interface Job extends AttemptSubject {
  mark: Date;
  /** The hold whose row lock took it (hold.ts); null for a row handed over under a lease. */
  hold: Holding | null;
  /** The exact text to POST: the stored event, or the row's own payload (pings, replays). */
  body: string | null;
  /** The URL as the endpoint shows it (a broker's password redacted). */
  url: string;
  /** The whole URL, sealed, when it carries credentials; sent to instead of `url`. */
  urlEnc: string | null;
  /** Where a broker destination publishes (amqp: exchange, routing key; nats: subject); null: the defaults. */
  exchange: string | null;
  routingKey: string | null;
  subject: string | null;
  /** False when the endpoint was paused, auto-disabled or deleted since the row was enqueued. */
  endpointActive: boolean;
  /** The endpoint's consecutive failed deliveries when the row was taken (0 for a healthy endpoint). */
  endpointFailures: number;
  /** The endpoint showed a throttle when the row was taken (lanes.ts clears one no lane holds any more). */
  endpointThrottled: boolean;
  /** Deliveries per second the endpoint accepts, across every worker; null: no limit. */
  rateLimit: number | null;
  /** The endpoint's extra request headers, sealed; null (the common case) for none. */
  headersEnc: string | null;
  secretEnc: string;
  previousSecretEnc: string | null;
  previousSecretExpiresAt: Date | null;
}

/** A taken row as a claim or a hand-off reads it: the delivery and its endpoint's columns. */
export interface JobRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  url: string;
  url_enc: string | null;
  exchange: string | null;
  routing_key: string | null;
  subject: string | null;
  propagate_trace: boolean;
  consecutive_failures: number;
  endpoint_throttled: boolean;
  rate_limit: number | null;
  headers_enc: string | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  /** A Date from a claim, text from a hand-off's statement. */
  previous_secret_expires_at: Date | string | null;
}

/** What a row was taken with, besides its columns. */
export interface Taken {
  attempt: number;
  mark: Date;
  hold: Holding | null;
  endpointActive: boolean;
  body: string | null;
  trace: string | null;
}

/** The one place a row becomes a job. */
export function jobOf(row: JobRow, taken: Taken): Job {
  const expires = row.previous_secret_expires_at;
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: taken.attempt,
    mark: taken.mark,
    hold: taken.hold,
    body: taken.body,
    trace: taken.trace,
    url: row.url,
    urlEnc: row.url_enc,
    exchange: row.exchange,
    routingKey: row.routing_key,
    subject: row.subject,
    propagateTrace: row.propagate_trace,
    endpointActive: taken.endpointActive,
    endpointFailures: row.consecutive_failures,
    endpointThrottled: row.endpoint_throttled,
    rateLimit: row.rate_limit,
    headersEnc: row.headers_enc,
    secretEnc: row.secret_enc,
    previousSecretEnc: row.previous_secret_enc,
    previousSecretExpiresAt: expires === null ? null : new Date(expires),
  };
}

/** What every outcome carries: which row, under which mark, and when it was decided. */
interface OutcomeOf {
  id: string;
  endpointId: string;
  /** The endpoint's count of consecutive failed deliveries when the row was taken. */
  endpointFailures: number;
  claimedAttempt: number;
  /** The row's mark when the outcome is written: the job's, or the lease a hold gave it (hold.ts). */
  mark: Date;
  /** A second mark the row may hold instead: the lease of a hold whose commit's answer was lost (hold.ts). */
  otherMark?: Date;
  attemptedAt: Date;
}

/** Put off without an attempt, still pending: its endpoint's lane was full, or its rate limit. */
export interface Deferred extends OutcomeOf {
  kind: 'deferred';
  status: 'pending';
  nextAttemptAt: Date;
}

/** No attempt: the endpoint was no longer active when the job came to it. */
export interface Disabled extends OutcomeOf {
  kind: 'disabled';
  status: 'disabled';
}

/** An attempt was made (or failed before its request could go: no body, a secret that does not open). */
export interface Attempted extends OutcomeOf {
  kind: 'attempted';
  status: 'success' | 'pending' | 'failed';
  nextAttemptAt: Date | null;
  error: string | null;
  responseStatus: number | null;
  responseTimeMs: number | null;
  /** The attempt's webhook-signature: with it, the log rebuilds the standard headers sent (migrations/016). */
  requestSignature: string | null;
  /** The endpoint's own headers sent, values redacted; null when it has none. */
  requestHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseHeaders: Record<string, string> | null;
  /** The attempt got no complete answer in time. */
  timedOut: boolean;
}

/** What one job came to, ready to be written. Built by attempt.ts. */
export type Outcome = Deferred | Disabled | Attempted;

/** What holds a job's row besides its mark: the open transaction of a hold, whose row lock keeps every other worker off it. */
export interface Holding {
  /** The job's outcome, written by the hold's transaction, or after it under the row's lease. */
  finish(job: Job, outcome: Outcome): void;
  /** The job will not be attempted by this worker: its row is freed, due as it was. */
  drop(job: Job): void;
}
