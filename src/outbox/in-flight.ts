import type { Clock } from '../lib/clock.js';

/**
 * Writes of this process that may still commit an event, and what follows from them: the settled
 * horizon, the newest time up to which the event log is final.
 *
 * An event's time (its `created_at`, and the start of its id) is taken from the service clock by
 * the code that writes it, before its statement runs and commits. So events do not commit in the
 * log's order: a write that took its time first can commit after another that took a later one.
 * A reader that moves forward through the log (the event stream, events/stream/) must therefore
 * not pass an event while an older one may still arrive. Everything at or before the horizon is
 * final: no write that is still to commit can add an event there.
 *
 * - Writes not yet started take their time from the clock later: after now. So the current
 *   millisecond is never final (timestamps have millisecond precision).
 * - Writes of this process hold the horizon below their time while they run: every API request
 *   that can change something holds it from its arrival until its answer is sent (its events take
 *   the request's time or later), and the outbox holds it around each of its statements.
 * - Writes of other processes (more API processes or `svc worker`s on one PostgreSQL) cannot be
 *   seen from here: the horizon stays `settleMs` (SVC_STREAM_SETTLE) behind the clock for them. On
 *   the embedded database no other process can write.
 */
export class InFlightWrites {
  /** Times held by writes in flight (milliseconds), with how many writes hold each. */
  private readonly held = new Map<number, number>();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly clock: Clock,
    private readonly settleMs: number,
  ) {}

  /** A write that may commit events at `at` or later begins; call what it returns when it has ended. */
  hold(at: number = this.clock.now().getTime()): () => void {
    this.held.set(at, (this.held.get(at) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.held.get(at)! - 1;
      if (left > 0) return void this.held.set(at, left);
      this.held.delete(at);
      for (const listener of this.listeners) listener();
    };
  }

  /** The settled horizon (milliseconds): every event at or before it has committed, or never will. */
  horizon(): number {
    let horizon = this.clock.now().getTime() - 1 - this.settleMs;
    for (const at of this.held.keys()) if (at - 1 < horizon) horizon = at - 1;
    return horizon;
  }

  /** Milliseconds until an event at `at` is settled by the clock alone (0: already, or held only by a write in flight). */
  settleDelay(at: number): number {
    return Math.max(0, at + 1 + this.settleMs - this.clock.now().getTime());
  }

  /** `listener` runs whenever a held time is released: the horizon may have moved. */
  onRelease(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
