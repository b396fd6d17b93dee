import type { Job } from './engine/job.js';

/**
 * Direct hand-off. A write that commits deliveries, made by a process whose delivery workers have
 * free slots, inserts up to that many of them already claimed: their next_attempt_at is a lease,
 * exactly what a claim would have set (fanout.ts). When the statement returns, the rows go straight
 * to the worker, so a first attempt starts right after the commit, without a NOTIFY, a wake-up or a
 * claim statement, and the row is written twice (insert, outcome) instead of three times. Should the
 * process die between the commit and the attempt, the rows come due when the lease runs out and any
 * worker takes them, as it would a crashed worker's claim. Rows beyond the reserved slots are due
 * now and wake workers as before.
 */

/** What a delivery worker of this process offers the writers of the same process. */
export interface LocalWorker {
  /** Something may be due: claim. */
  wake(): void;
  /** Sets aside up to `max` slots for rows a write will hand over; returns how many (0: none free). */
  reserve(max: number): number;
  /** Takes the rows handed over under `reserved` slots; slots the write did not fill are freed. */
  adopt(jobs: Job[], reserved: number): void;
}

/** A handed row as `fanout.handed` returns it (JSON). */
export interface HandedRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  url: string;
  consecutive_failures: number;
  rate_limit: number | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: string | null;
}

/** Slots reserved in one worker for one write, and the lease its handed rows are written with. */
export class HandOff {
  private done = false;

  constructor(
    readonly lease: Date,
    readonly slots: number,
    private readonly worker: LocalWorker,
  ) {}

  /** The write committed: its handed rows (each event's body given by `bodyOf`) are the worker's. */
  settle(rows: HandedRow[], bodyOf: (eventId: string) => string | undefined): void {
    if (this.done) return;
    this.done = true;
    this.worker.adopt(
      rows.map((row) => claimedOf(row, this.lease, bodyOf(row.event_id) ?? null)),
      this.slots,
    );
  }

  /** The write failed: nothing was handed over. */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.worker.adopt([], this.slots);
  }
}

function claimedOf(row: HandedRow, lease: Date, body: string | null): Job {
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
    secret_enc: row.secret_enc,
    previous_secret_enc: row.previous_secret_enc,
    previous_secret_expires_at: row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at),
  };
}
