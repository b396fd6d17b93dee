import { DatabaseUnavailableError, type Db, type OpenTransaction } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { claimLocked } from './claim.js';
import type { Job, Outcome, Holding } from './job.js';
import type { DuePosition } from './position.js';
import { changesCount, earliestRetry, resetFailures, writeHeldOutcomes } from './outcome.js';

/** The longest a hold keeps its row locks; rows still unfinished then go on under a lease. */
export const HOLD_MS = 500;

/** Holds a worker keeps open at once at most; each keeps a connection. */
export const HOLDS_PER_WORKER = 8;

export interface HoldHandlers {
  /** Takes back the hold's jobs that wait in the worker, not yet started: the commit frees them. */
  unstarted(hold: Hold): Job[];
  /** Outcomes to write outside the hold's transaction, each with the mark its row holds (outcome.ts). */
  record(outcomes: Outcome[]): void;
  /** The transaction has ended: `freed` rows were given back unattempted, due again; `nextDue` is the earliest retry it wrote. */
  ended(hold: Hold, freed: number, nextDue: Date | null): void;
  onError(error: unknown, during: string): void;
}

interface HoldDeps {
  db: Db;
  clock: Clock;
  leaseMs: number;
}

type State = 'open' | 'ending' | 'ended';

/**
 * Rows claimed under the row locks of one open transaction. The claim writes nothing: `FOR UPDATE
 * SKIP LOCKED` takes the rows and the open transaction keeps them taken; when every row has its
 * outcome, the same transaction writes the outcomes and commits. Each row is then written once (its
 * outcome) instead of twice (a lease, then the outcome). A worker that dies loses its connection,
 * and its rows are due again at once.
 *
 * A hold keeps its locks HOLD_MS at most, so that a slow receiver delays neither the API (which waits
 * on these locks to pause or delete an endpoint) nor the commit of the rows already answered. At the
 * commit, rows not yet started are freed, due as they were, and rows still in flight are given a
 * lease in the same transaction; outcomes that may change an endpoint's failure count are leased too
 * and written after the commit, since they lock the endpoint, which this transaction must not do
 * while it holds deliveries (the API locks an endpoint, then its deliveries).
 *
 * The hand-over from lock to lease is exact: an outcome that arrives while the commit is under way
 * waits for it, then is written under the mark its row really holds (the lease if the commit
 * succeeded, the row's due time if it failed and the row was left as it was). A commit whose answer
 * was lost (the connection cut after the COMMIT was sent) may have succeeded: the rows it leased
 * are then written under either mark, whichever the row holds.
 */
export class Hold implements Holding {
  /**
   * The claim, the outcome write and the lease are planned once per connection (generic plans):
   * PostgreSQL would otherwise plan the claim anew on every run, since a generic plan cannot know
   * how few rows `LIMIT $n` takes.
   */
  static readonly SETTINGS = { plan_cache_mode: 'force_generic_plan' };

  /** Takes up to `limit` due rows (after `after`) under a new hold's row locks; no hold when none was due. */
  static async claim(deps: HoldDeps, handlers: HoldHandlers, now: Date, limit: number, after: DuePosition | null): Promise<{ hold: Hold | null; jobs: Job[] }> {
    const hold = new Hold(await deps.db.begin(Hold.SETTINGS), deps, handlers);
    let jobs: Job[];
    try {
      jobs = await claimLocked(hold.tx, hold, now, limit, after);
    } catch (error) {
      await hold.tx.rollback().catch(() => {});
      throw error;
    }
    if (jobs.length === 0) {
      await hold.tx.rollback();
      return { hold: null, jobs };
    }
    hold.took(jobs);
    return { hold, jobs };
  }

  private jobs: Job[] = [];
  /** Held jobs that have no outcome yet, by id. */
  private readonly waiting = new Set<string>();
  private readonly outcomes: Outcome[] = [];
  /** Outcomes that arrived while the commit was under way. */
  private readonly late: Outcome[] = [];
  /** After a commit: the lease each row still in flight was given. */
  private readonly leases = new Map<string, Date>();
  /** After a commit whose answer was lost: the lease each row it leased holds if it committed. */
  private readonly unsure = new Map<string, Date>();
  private state: State = 'open';
  private timer: NodeJS.Timeout | null = null;
  private ending: Promise<void> | null = null;

  constructor(
    readonly tx: OpenTransaction,
    private readonly deps: HoldDeps,
    private readonly handlers: HoldHandlers,
  ) {}

  /** The jobs the claim took. */
  private took(jobs: Job[]): void {
    this.jobs = jobs;
    for (const job of jobs) this.waiting.add(job.id);
    this.timer = setTimeout(() => void this.end(), HOLD_MS);
  }

  finish(job: Job, outcome: Outcome): void {
    if (this.state === 'ending') return void this.late.push(outcome);
    if (this.state === 'ended') {
      const lease = this.leases.get(job.id);
      return this.handlers.record([lease ? { ...outcome, mark: lease } : this.either(outcome)]);
    }
    this.outcomes.push(outcome);
    this.waiting.delete(job.id);
    if (this.waiting.size === 0) void this.end();
  }

  drop(job: Job): void {
    if (this.state !== 'open') return;
    this.waiting.delete(job.id);
    if (this.waiting.size === 0) void this.end();
  }

  /** Writes the outcomes so far, leases the jobs in flight and commits; once, however often called. */
  end(): Promise<void> {
    this.ending ??= this.commit();
    return this.ending;
  }

  private async commit(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    // Everything is decided here, before the first await: from now on outcomes wait (`late`).
    this.state = 'ending';
    const unstarted = this.waiting.size > 0 ? this.handlers.unstarted(this) : [];
    for (const job of unstarted) this.waiting.delete(job.id);
    const inFlight = [...this.waiting];
    const counting = this.outcomes.filter(changesCount);
    const direct = counting.length > 0 ? this.outcomes.filter((o) => !changesCount(o)) : this.outcomes;
    const lease = new Date(this.deps.clock.now().getTime() + this.deps.leaseMs);
    const leased = [...inFlight, ...counting.map((o) => o.id)];

    let committed = false;
    let reset: string[] = [];
    try {
      reset = await writeHeldOutcomes(this.tx, direct);
      if (leased.length > 0) await this.tx.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::text[])', [leased, lease]);
      await this.tx.commit();
      committed = true;
    } catch (error) {
      await this.tx.rollback().catch(() => {});
      if (error instanceof DatabaseUnavailableError) for (const id of leased) this.unsure.set(id, lease);
      this.handlers.onError(error, 'record');
    }

    this.state = 'ended';
    let after: Outcome[];
    if (committed) {
      for (const id of inFlight) this.leases.set(id, lease);
      after = [...counting, ...this.late].map((o) => ({ ...o, mark: lease }));
    } else {
      // Nothing was written, or (the answer lost) everything: write the outcomes without the lock,
      // guarded by the rows' due times or the lease, rather than send them all again.
      after = [...this.outcomes, ...this.late].map((o) => this.either(o));
    }
    this.handlers.record(after);
    this.handlers.ended(this, unstarted.length, committed ? earliestRetry(direct) : null);
    if (reset.length > 0) await resetFailures(this.deps.db, reset).catch((error) => this.handlers.onError(error, 'record'));
  }

  /** `outcome` guarded by its row's due time, or by the lease a commit whose answer was lost may have given it. */
  private either(outcome: Outcome): Outcome {
    const lease = this.unsure.get(outcome.id);
    return lease ? { ...outcome, otherMark: lease } : outcome;
  }

  /** Whether `job` was taken by this hold (for a worker taking back its unstarted jobs). */
  has(job: Job): boolean {
    return job.hold === this;
  }
}
