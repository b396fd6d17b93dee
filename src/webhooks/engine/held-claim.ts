import type { AppContext } from '../../context.js';
import type { OpenTransaction } from '../../db/db.js';
import type { Outcome } from './attempt.js';
import type { ClaimedDelivery } from './claim.js';
import { changesCount, resetFailures, writeHeldOutcomes } from './outcome.js';

/** The longest a claim keeps its row locks; rows still unfinished then go on under a lease. */
export const HOLD_MS = 500;

/** Claims a worker keeps open at once at most; each holds a connection. */
export const HELD_CLAIMS_PER_WORKER = 8;

/**
 * Rows claimed under the row locks of one open transaction (PostgreSQL). The claim writes nothing:
 * `FOR UPDATE SKIP LOCKED` takes the rows and the open transaction keeps them taken. When every row
 * has its outcome, the same transaction writes the outcomes and commits. Each row is then written
 * once (its outcome) instead of twice (the claim's lease, then the outcome), and each of those
 * writes is a new row version with an entry in every index of the table: about a third less of
 * PostgreSQL's work per delivery. A worker that dies loses its connection, and its rows are due
 * again at once instead of after a lease.
 *
 * A claim holds its locks for HOLD_MS at most, so that a slow receiver delays neither the API (which
 * waits on these locks to pause or delete an endpoint) nor the commit of the rows already answered.
 * At the commit, rows not yet started are freed, due as they were, and rows still in flight are
 * given a lease in the same transaction, exactly what a claim by lease writes. These go on as
 * leased rows: their outcomes are written as
 * such (outcome.ts), as are those that may change an endpoint's failure count, which lock the
 * endpoint and must not do so while this transaction holds deliveries (the API locks an endpoint,
 * then its deliveries).
 *
 * If the transaction fails, its rows are simply due again: delivery is at-least-once.
 */
export class HeldClaim {
  /**
   * The claim, the outcome write and the lease of a held claim are planned once per connection
   * (generic plans). PostgreSQL would otherwise plan the claim anew on every run, since a generic
   * plan cannot know how few rows `LIMIT $n` takes: planning took longer than the claim itself.
   */
  static readonly SETTINGS = { plan_cache_mode: 'force_generic_plan' };

  private rows: ClaimedDelivery[] = [];
  private readonly outcomes: Outcome[] = [];
  /** Rows still held that have no outcome yet. */
  private waiting = 0;
  private timer: NodeJS.Timeout | null = null;
  private ending: Promise<void> | null = null;

  constructor(
    readonly tx: OpenTransaction,
    private readonly ctx: AppContext,
    private readonly handlers: {
      /** Takes back the claim's rows that wait in the worker, not yet started: the commit frees them. */
      unstarted(claim: HeldClaim): ClaimedDelivery[];
      /**
       * The claim committed (or failed); `leased` are outcomes to write as leased rows, `freed` the
       * rows it gave back without an attempt (due again now).
       */
      ended(claim: HeldClaim, leased: Outcome[], freed: number): void;
      onError(error: unknown, during: string): void;
    },
  ) {}

  /** The rows the claim statement took. */
  took(rows: ClaimedDelivery[]): void {
    this.rows = rows;
    this.waiting = rows.length;
    this.timer = setTimeout(() => void this.end(), HOLD_MS);
  }

  /** A held row's outcome. */
  finish(row: ClaimedDelivery, outcome: Outcome): void {
    row.held = null;
    this.outcomes.push(outcome);
    if (--this.waiting === 0) void this.end();
  }

  /** A held row this worker will not attempt (it is stopping): the commit frees it, due as it was. */
  drop(row: ClaimedDelivery): void {
    row.held = null;
    if (--this.waiting === 0) void this.end();
  }

  /** Writes the outcomes so far, leases the rest and commits; once, however often it is called. */
  end(): Promise<void> {
    this.ending ??= this.commit();
    return this.ending;
  }

  private async commit(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    // Rows not yet started are freed by the commit, due as they were; rows in flight go on under a
    // lease, and their outcomes take it (worker.ts).
    const unstarted = this.waiting > 0 ? this.handlers.unstarted(this) : [];
    for (const row of unstarted) row.held = null;
    const lease = new Date(this.ctx.clock.now().getTime() + this.ctx.config.leaseMs);
    const unfinished = this.rows.filter((row) => row.held === this);
    for (const row of unfinished) {
      row.held = null;
      row.lease = lease;
    }
    const counting = this.outcomes.filter(changesCount);
    for (const outcome of counting) outcome.lease = lease;
    const leasedIds = [...unfinished.map((row) => row.id), ...counting.map((o) => o.id)];
    let leased = counting;
    let freed = unstarted.length;
    try {
      const reset = await writeHeldOutcomes(this.tx, counting.length > 0 ? this.outcomes.filter((o) => !changesCount(o)) : this.outcomes);
      if (leasedIds.length > 0) {
        await this.tx.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::text[])', [leasedIds, lease]);
      }
      await this.tx.commit();
      await resetFailures(this.ctx.db, reset).catch((error) => this.handlers.onError(error, 'record'));
    } catch (error) {
      // Nothing was written: every row of the claim is due again as it was.
      leased = [];
      freed = this.rows.length;
      await this.tx.rollback().catch(() => {});
      this.handlers.onError(error, 'record');
    } finally {
      this.handlers.ended(this, leased, freed);
    }
  }
}
