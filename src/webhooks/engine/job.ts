import type { AttemptSubject } from '../../ops/trace.js';

/**
 * One delivery taken by a worker, with everything needed to sign and send it. A claim (claim.ts) or
 * a hand-off (handoff.ts) makes it; nothing changes it afterwards.
 *
 * A taken row is known by its mark, the `next_attempt_at` it was taken with, and every outcome write
 * is guarded by the mark (outcome.ts): a row is changed only while it still holds exactly what this
 * worker took it with. Under a hold the mark is the row's due time, left as it was; a row handed
 * over carries its lease.
 */
export interface Job extends AttemptSubject {
  mark: Date;
  /** The hold whose row lock took it (hold.ts); null for a row handed over under a lease. */
  lock: RowLock | null;
  /** The exact text to POST: the stored event, or the row's own payload (pings, replays). */
  body: string | null;
  /** The URL as the endpoint shows it (a broker's password redacted). */
  url: string;
  /** The whole URL, sealed, when it carries credentials; sent to instead of `url`. */
  url_enc: string | null;
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
  headers_enc: string | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * What one job came to, ready to be written. `attempted` is false when no request was made: the
 * endpoint turned inactive before the attempt (`disabled`), or the job was deferred to a later time
 * (`pending`, its endpoint busy or rate limited). Built by attempt.ts.
 */
export interface Outcome {
  id: string;
  endpointId: string;
  /** The endpoint's count of consecutive failed deliveries when the row was taken. */
  endpointFailures: number;
  claimedAttempt: number;
  /** The row's mark when the outcome is written: the job's, or the lease a hold gave it (hold.ts). */
  mark: Date;
  /** A second mark the row may hold instead: the lease of a hold whose commit's answer was lost (hold.ts). */
  otherMark?: Date;
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
  /** The attempt got no complete answer in time. */
  timedOut: boolean;
}

/** What holds a job's row besides its mark: the open transaction of a hold, whose row lock keeps every other worker off it. */
export interface RowLock {
  /** The job's outcome, written by the lock's transaction, or after it under the row's lease. */
  finish(job: Job, outcome: Outcome): void;
  /** The job will not be attempted by this worker: its row is freed, due as it was. */
  drop(job: Job): void;
}
