import { DatabaseUnavailableError } from './db.js';

/** How long a pool at the server's limit waits before trying one connection more. */
export const FULL_RETRY_MS = 5_000;

/**
 * How many statements and reservations a pool hands to postgres.js at once, so that it opens
 * connections one at a time and never more than the server gives. A statement handed beyond the
 * connections known open (those that have answered) makes postgres.js open one: one such is let
 * through at a time, the rest wait here for it to answer, first come first served, each within its
 * own deadline. Once all `max` are open, everything goes through (postgres.js then queues).
 *
 * When the server refuses a connection for having too many clients while the pool has others
 * open, it is full, not down: the gate keeps to the connections open, and every FULL_RETRY_MS lets
 * one more be tried, to find out whether a slot has freed on the server.
 */
export class Gate {
  private handed = 0;
  /** The most connections the server was found to give, Infinity while it has refused none. */
  private ceiling = Infinity;
  private readonly queue: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Connections known open: they have answered a statement. */
  private open = new Set<unknown>();

  constructor(
    private readonly max: number,
    private readonly retryMs = FULL_RETRY_MS,
  ) {}

  private room(): number {
    return this.open.size >= this.max ? this.ceiling : Math.min(this.ceiling, this.open.size + 1);
  }

  /** Takes a place if there is room now. */
  take(): boolean {
    if (this.handed >= this.room()) return false;
    this.handed++;
    return true;
  }

  /** Takes a place now (null), or a wait for one: `cancel` gives it up if it has not come (true). */
  enter(): null | { ready: Promise<void>; cancel: () => boolean } {
    if (this.handed < this.room()) {
      this.handed++;
      return null;
    }
    let admit = () => {};
    const ready = new Promise<void>((resolve) => {
      admit = () => {
        this.handed++;
        resolve();
      };
    });
    this.queue.push(admit);
    return {
      ready,
      cancel: () => {
        const at = this.queue.indexOf(admit);
        if (at >= 0) this.queue.splice(at, 1);
        return at >= 0;
      },
    };
  }

  /**
   * A place within `deadlineMs`: at once when there is room, else in turn. While it waits, its
   * withdrawal is in `withdrawals`, and calling it fails the wait with `refusal()`. A place handed
   * over after the deadline (a blocked event loop ran the timer late) goes back: the statement would
   * have no time left, and its time-out would look like a silent database.
   */
  wait(deadlineMs: number, withdrawals: Set<() => void>, refusal: () => Error): Promise<void> {
    const wait = this.enter();
    if (!wait) return Promise.resolve();
    const deadline = performance.now() + deadlineMs;
    return new Promise<void>((resolve, reject) => {
      const end = () => {
        clearTimeout(timer);
        withdrawals.delete(withdraw);
      };
      const giveUp = (error: Error) => {
        // Let in just now: the place goes back.
        if (!wait.cancel()) this.leave();
        end();
        reject(error);
      };
      const late = () => giveUp(new DatabaseUnavailableError(`no database connection within ${Math.round(deadlineMs)} ms`, null));
      const timer = setTimeout(late, Math.max(0, deadlineMs));
      const withdraw = () => giveUp(refusal());
      withdrawals.add(withdraw);
      void wait.ready.then(() => {
        if (performance.now() >= deadline) return late();
        end();
        resolve();
      });
    });
  }

  /** Gives a place back. */
  leave(): void {
    this.handed--;
    this.pump();
  }

  /** A connection answered a statement (`id`: postgres.js's one `state` object per connection). */
  opened(id: unknown): void {
    if (this.open.has(id)) return;
    this.open.add(id);
    this.pump();
  }

  /**
   * The pool's connections were replaced: none is known open. (A connection closed since it
   * answered stays counted: postgres.js opens it again on demand, in the slot it freed.)
   */
  renew(): void {
    this.open = new Set();
  }

  /**
   * The server refused a connection for having too many clients. It is full rather than down when
   * the pool has connections open: then true, and the gate keeps to those.
   */
  refused(): boolean {
    if (this.open.size === 0) return false;
    this.ceiling = this.open.size;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.raise(), this.retryMs);
    this.timer.unref();
    return true;
  }

  /** The most connections the server was found to give, or null while it has refused none. */
  get limit(): number | null {
    return this.ceiling === Infinity ? null : this.ceiling;
  }

  private raise(): void {
    this.timer = null;
    this.ceiling = this.ceiling + 1 >= this.max ? Infinity : this.ceiling + 1;
    if (this.ceiling !== Infinity) {
      this.timer = setTimeout(() => this.raise(), this.retryMs);
      this.timer.unref();
    }
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0 && this.handed < this.room()) this.queue.shift()!();
  }
}
