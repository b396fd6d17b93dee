import type { Db } from '../../db/db.js';
import type { Job, Outcome, RowLock } from './job.js';

/**
 * Rows taken by this process without writing anything, on the embedded engine (PGlite). Only one
 * process ever opens an embedded database (db/lock.ts), so the process itself can keep its workers
 * off each other's rows: a claim reads due rows, skips the ids taken here, and adds its own. A
 * claim by lease would write a new version of every row it takes, with an entry in each of the
 * deliveries' indexes; on PGlite, which runs on the service's own thread, that write was about
 * half of the claim's time and a fifth of the database's time per delivery.
 *
 * A row stays taken until its outcome is written (or given up after retries: it is then due again
 * and is sent again, as a lost lease would be). A process that dies leaves its rows due, as they
 * were: they are taken again at the next start, without waiting for a lease.
 *
 * Claims are run one after another, each given the ids taken once the one before it has added
 * its rows: two claims reading the same due rows before either had added them would both take them.
 */
export class ProcessClaims {
  private static readonly byDb = new WeakMap<Db, ProcessClaims>();
  private readonly taken = new Set<string>();
  private last: Promise<unknown> = Promise.resolve();

  /** The taken rows of this process's embedded database, shared by its workers. */
  static of(db: Db): ProcessClaims {
    let claims = ProcessClaims.byDb.get(db);
    if (!claims) {
      claims = new ProcessClaims();
      ProcessClaims.byDb.set(db, claims);
    }
    return claims;
  }

  /** Runs `claim` once the claims before it have added their rows, with the ids taken so far. */
  take(claim: (taken: string[]) => Promise<Job[]>): Promise<Job[]> {
    const run = this.last.then(async () => {
      const jobs = await claim([...this.taken]);
      for (const job of jobs) this.taken.add(job.id);
      return jobs;
    });
    this.last = run.catch(() => {});
    return run;
  }

  /** The rows are the database's to hand out again: their outcomes are written, or they were never started. */
  release(ids: Iterable<string>): void {
    for (const id of ids) this.taken.delete(id);
  }

  /** Rows taken and not yet released. */
  get size(): number {
    return this.taken.size;
  }
}

/**
 * What holds a row a worker took through ProcessClaims: its outcome goes to the worker's recorder,
 * which releases the row once the outcome is written; a row dropped unstarted is released at once.
 */
export class ProcessLock implements RowLock {
  constructor(
    private readonly claims: ProcessClaims,
    private readonly record: (outcome: Outcome) => void,
  ) {}

  finish(_job: Job, outcome: Outcome): void {
    this.record(outcome);
  }

  drop(job: Job): void {
    job.held = null;
    this.claims.release([job.id]);
  }
}
