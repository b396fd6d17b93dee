import { randomBytes } from 'node:crypto';
import { channelSql } from '../db/channels.js';
import type { Db } from '../db/db.js';
import type { Clock } from '../lib/clock.js';
import { handedJob, type HandedRow } from '../webhooks/engine/job.js';
import { DELIVERY_CHANNEL, type LocalWorker, type LocalWriters } from '../webhooks/engine/wakeups.js';

/** What a write's fan-out reports once committed. */
export interface FanOutResult {
  /** Pending rows due now: another worker must claim them. */
  pending: number;
  /** Rows written already taken under the write's hand-off (none without one). */
  handed: HandedRow[] | null;
}

/**
 * Direct hand-off. A write that commits deliveries, made by a process whose delivery workers have
 * free slots, inserts up to that many of them already taken: their next_attempt_at is a lease,
 * exactly what a claim would have set (fanout.ts). When the statement returns, the rows go straight
 * to the worker, so a first attempt starts right after the commit, without a NOTIFY, a wake-up or a
 * claim statement, and the row is written twice (insert, outcome) instead of three times. Should the
 * process die between the commit and the attempt, the rows come due when the lease runs out and any
 * worker takes them, as it would a crashed worker's claim. Rows beyond the reserved slots are due
 * now and wake workers as before.
 */
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
      rows.map((row) => handedJob(row, this.lease, bodyOf(row.event_id) ?? null)),
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

/**
 * The link between a process's writes and its delivery workers.
 *
 * Before a write, handOff() reserves slots in a local worker, so the write can insert that many
 * deliveries already taken and hand them over when it commits. After the write, committed() gives
 * them to the worker and wakes workers for whatever is left due.
 *
 * Wake-ups are coalesced. A NOTIFY inside a write's transaction takes PostgreSQL's
 * notification-queue lock at commit, which serialises every such commit (no group commit): it
 * capped ingest. Instead, writes commit without NOTIFY and poke this: workers of this process are
 * woken at once, and at most one NOTIFY per process is in flight for the others (pokes arriving
 * meanwhile are folded into one more). If the process dies between a commit and its NOTIFY, the
 * workers' polling finds the rows.
 */
export class DeliveryNotifier implements LocalWriters {
  /** The payload of this process's NOTIFYs: its own workers, woken already, skip them. */
  readonly origin = randomBytes(8).toString('hex');
  private readonly local = new Set<LocalWorker>();
  private sending = false;
  private again = false;
  /** The most deliveries one event of this process has fanned out to: sizes each reservation. */
  private perEvent = 1;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly leaseMs: number,
  ) {}

  /** Workers of this process register here besides LISTEN. */
  subscribe(worker: LocalWorker): () => void {
    this.local.add(worker);
    return () => this.local.delete(worker);
  }

  /**
   * Reserves slots for the deliveries of a write of `events` events, in the first local worker that
   * has any free; null when none has (or none runs here). Settle or cancel what it returns.
   */
  handOff(events: number): HandOff | null {
    const wanted = events * this.perEvent;
    for (const worker of this.local) {
      const slots = worker.reserve(wanted);
      if (slots > 0) return new HandOff(new Date(this.clock.now().getTime() + this.leaseMs), slots, worker);
    }
    return null;
  }

  /** A write of `events` events committed with this fan-out: hand its rows over, wake for the rest. */
  committed(handOff: HandOff | null, events: number, result: FanOutResult | undefined, bodyOf: (eventId: string) => string | undefined): void {
    const handed = result?.handed ?? [];
    handOff?.settle(handed, bodyOf);
    const pending = result?.pending ?? 0;
    if (events > 0) this.perEvent = Math.max(this.perEvent, Math.ceil((handed.length + pending) / events));
    if (pending > 0) this.poke();
  }

  poke(): void {
    for (const worker of this.local) worker.wake();
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    void this.send();
  }

  private async send(): Promise<void> {
    do {
      this.again = false;
      // Best effort: a lost wake-up costs at most one polling interval, never a delivery.
      await this.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, $1)`, [this.origin]).catch(() => {});
    } while (this.again);
    this.sending = false;
  }
}
