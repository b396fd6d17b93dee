import type { Outcome } from './attempt.js';

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
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}
