import type { Db, OpenTransaction } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { Outcome } from './attempt.js';
import type { Job, RowLock } from './job.js';
import { changesCount, resetFailures, writeHeldOutcomes } from './outcome.js';

/** The longest a claim keeps its row locks; rows still unfinished then go on under a lease. */
export const HOLD_MS = 500;

/** Claims a worker keeps open at once at most; each holds a connection. */
export const HELD_CLAIMS_PER_WORKER = 8;

export interface HeldClaimHandlers {
  /** Takes back the claim's jobs that wait in the worker, not yet started: the commit frees them. */
  unstarted(claim: HeldClaim): Job[];
  /**
   * The claim's transaction has ended. `after` are outcomes to write outside it, each carrying the
   * mark its row holds now (outcome.ts); `freed` counts the rows it gave back unattempted, due again;
   * `nextDue` is the earliest retry or put-off time it wrote, if any.
   */
  ended(claim: HeldClaim, after: Outcome[], freed: number, nextDue: Date | null): void;
  onError(error: unknown, during: string): void;
}

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
 * given a lease in the same transaction, exactly what a claim by lease writes; outcomes that may
 * change an endpoint's failure count are leased too and written after the commit, since they lock
 * the endpoint, which this transaction must not do while it holds deliveries (the API locks an
 * endpoint, then its deliveries).
 *
 * The hand-over from lock to lease is exact: a job's mark and lock change only once the commit has
 * returned, and an outcome that arrives while the commit is under way waits for it, then is written
 * under the mark its row really holds (the lease if the commit succeeded, the row's due time if it
 * failed and the row was left as it was). An outcome written under a mark not yet committed would
 * match no row, and the row would be sent again when the lease ran out.
 */
export class HeldClaim implements RowLock {
  /**
   * The claim, the outcome write and the lease of a held claim are planned once per connection
   * (generic plans). PostgreSQL would otherwise plan the claim anew on every run, since a generic
   * plan cannot know how few rows `LIMIT $n` takes: planning took longer than the claim itself.
   */
  static readonly SETTINGS = { plan_cache_mode: 'force_generic_plan' };

  private jobs: Job[] = [];
  private readonly outcomes: Outcome[] = [];
  /** Outcomes that arrived once the commit had begun: written after it, under their rows' marks. */
  private readonly late: Outcome[] = [];
  /** Held jobs that have no outcome yet. */
  private waiting = 0;
  private closing = false;
  private timer: NodeJS.Timeout | null = null;
  private ending: Promise<void> | null = null;

  constructor(
    readonly tx: OpenTransaction,
    private readonly deps: { db: Db; clock: Clock; leaseMs: number },
    private readonly handlers: HeldClaimHandlers,
  ) {}

  /** The jobs the claim statement took. */
  took(jobs: Job[]): void {
    this.jobs = jobs;
    this.waiting = jobs.length;
    this.timer = setTimeout(() => void this.end(), HOLD_MS);
  }

  finish(job: Job, outcome: Outcome): void {
    outcome.mark = job.mark;
    if (this.closing) {
      this.late.push(outcome);
      return;
    }
    this.outcomes.push(outcome);
    if (--this.waiting === 0) void this.end();
  }

  drop(job: Job): void {
    if (this.closing) return;
    job.held = null;
    if (--this.waiting === 0) void this.end();
  }

  /** Writes the outcomes so far, leases the jobs in flight and commits; once, however often called. */
  end(): Promise<void> {
    this.ending ??= this.commit();
    return this.ending;
  }

  private async commit(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    // Everything is decided here, before the first await: from now on outcomes wait (`late`).
    this.closing = true;
    const unstarted = this.waiting > 0 ? this.handlers.unstarted(this) : [];
    for (const job of unstarted) job.held = null;
    const inFlight = this.jobs.filter((job) => job.held === this && !this.outcomes.some((o) => o.id === job.id));
    const counting = this.outcomes.filter(changesCount);
    const direct = counting.length > 0 ? this.outcomes.filter((o) => !changesCount(o)) : this.outcomes;
    const lease = new Date(this.deps.clock.now().getTime() + this.deps.leaseMs);
    const leasedIds = [...inFlight.map((job) => job.id), ...counting.map((o) => o.id)];

    let committed = false;
    let reset: string[] = [];
    try {
      reset = await writeHeldOutcomes(this.tx, direct);
      if (leasedIds.length > 0) {
        await this.tx.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::text[])', [leasedIds, lease]);
      }
      await this.tx.commit();
      committed = true;
    } catch (error) {
      await this.tx.rollback().catch(() => {});
      this.handlers.onError(error, 'record');
    }

    // Nothing else runs between here and ended(): the marks and the outcomes change together.
    for (const job of inFlight) {
      job.held = null;
      if (committed) job.mark = lease;
    }
    let after: Outcome[];
    if (committed) {
      for (const outcome of [...counting, ...this.late]) outcome.mark = lease;
      after = [...counting, ...this.late];
    } else {
      // Nothing was written and every row is as it was when claimed: write the outcomes without the
      // lock, guarded by the rows' due times, rather than send them all again.
      after = [...this.outcomes, ...this.late];
    }
    this.handlers.ended(this, after, unstarted.length, committed ? earliestRetry(direct) : null);
    if (reset.length > 0) await resetFailures(this.deps.db, reset).catch((error) => this.handlers.onError(error, 'record'));
  }
}

/** The earliest time a written outcome made its row due again, if any. */
export function earliestRetry(outcomes: Outcome[]): Date | null {
  let next: Date | null = null;
  for (const o of outcomes) if (o.status === 'pending' && o.nextAttemptAt && (!next || o.nextAttemptAt < next)) next = o.nextAttemptAt;
  return next;
}
