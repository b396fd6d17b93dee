import { DatabaseUnavailableError, type Availability } from './db.js';

/**
 * The first wait after a failure; each further failure doubles it, up to MAX_WAIT_MS: short, so
 * that a database back from an outage of any length is found within a fraction of a second. A
 * probe is one connection attempt, so a process makes at most a few a second.
 */
const FIRST_WAIT_MS = 100;
const MAX_WAIT_MS = 200;


/**
 * Whether the database is known to be down, shared by a process's pools. A connection that could
 * not be opened, or a server silent past the query time-out, makes it down for a wait that grows with each failure
 * (100 ms, then 200 ms, each wait drawn between half and all of it, so that processes do not
 * come back in step). While down, statements fail at once instead of each waiting for a
 * connection the database will not give. When the wait is over, one statement at a time goes
 * through as a probe: its answer makes the database up again; its failure starts the next wait.
 */
export class Breaker {
  private failures = 0;
  private downUntil = 0;
  private probing = false;
  /** What made the database down last: a refusal carries it, so a caller can tell why. */
  private cause: unknown = null;
  private readonly listeners: (() => void)[] = [];
  private readonly watchers: ((change: Availability) => void)[] = [];
  /** Statements refused while down, since the start. */
  private refusedTotal = 0;
  /** When the current outage began, and the refusals counted then. */
  private since = 0;
  private refusedBefore = 0;

  constructor(
    private readonly random: () => number = Math.random,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Lets a statement go to the database, or throws DatabaseUnavailableError while the database is
   * down. Returns whether this statement is the probe (then it must end in ok() or failed()).
   */
  admit(): boolean {
    if (this.failures === 0) return false;
    if (this.now() < this.downUntil || this.probing) throw this.refusal();
    this.probing = true;
    return true;
  }

  /** The error a statement fails with while the database is down. */
  refusal(): DatabaseUnavailableError {
    this.refusedTotal++;
    const cause = this.cause instanceof DatabaseUnavailableError ? this.cause.original : this.cause;
    return new DatabaseUnavailableError('the database is down (a connection failed a moment ago)', cause);
  }

  /** Calls `fn` each time the database is found down. */
  onDown(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Calls `fn` when the database goes down and when it comes back: once each, not per failure. Returns a function that stops the calls. */
  onChange(fn: (change: Availability) => void): () => void {
    this.watchers.push(fn);
    return () => {
      const at = this.watchers.indexOf(fn);
      if (at >= 0) this.watchers.splice(at, 1);
    };
  }

  /** Statements refused because the database was down, since the start. */
  get refused(): number {
    return this.refusedTotal;
  }

  /** The database answered. */
  ok(): void {
    const was = this.failures > 0;
    this.failures = 0;
    this.probing = false;
    if (!was) return;
    const change: Availability = { down: false, downMs: this.now() - this.since, refused: this.refusedTotal - this.refusedBefore };
    for (const fn of this.watchers) fn(change);
  }

  /** A connection failed or the server went silent: down for the next wait. */
  failed(cause: unknown): void {
    this.cause = cause;
    this.probing = false;
    this.failures++;
    if (this.failures === 1) {
      this.since = this.now();
      this.refusedBefore = this.refusedTotal;
      for (const fn of this.watchers) fn({ down: true, cause });
    }
    const wait = Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** Math.min(this.failures - 1, 10));
    this.downUntil = this.now() + wait * (0.5 + this.random() / 2);
    for (const fn of this.listeners) fn();
  }

  /** A probe that ended without telling anything (withdrawn): another may go. */
  withdrawn(): void {
    this.probing = false;
  }

  /** Whether the database is known to be down now. */
  get down(): boolean {
    return this.failures > 0;
  }
}
