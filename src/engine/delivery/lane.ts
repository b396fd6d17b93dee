import type { Job } from './job.js';

/** An endpoint's share once it has answered this worker for the first time. */
export const INITIAL_SHARE = 4;

/** An endpoint slowed down by its answers: the share it has now, since when (clock ms). */
export interface Throttle {
  share: number;
  since: Date;
}

/**
 * One endpoint's share of a worker. An endpoint this worker has not heard from yet is on probation:
 * INITIAL_SHARE attempts at most, in places of the probation pool that such endpoints share; one
 * whose attempts time out or run far past their usual time (suspect) has one at a time. Its first
 * answer earns it INITIAL_SHARE attempts of its own; `share` then grows by one with every answer and halves when an attempt
 * times out or the receiver asks to slow down (SLOW_DOWN), down to one (additive increase,
 * multiplicative decrease, as TCP does). A receiver that answers, however slowly, soon has
 * MAX_SHARE attempts, and a hanging one keeps a single probe. From the first slow-down it is
 * throttled, until its share is back where it was.
 */
export class Lane {
  share = INITIAL_SHARE;
  /** It has answered this worker at least once. */
  earned = false;
  /** Its last attempt timed out. */
  timedOut = false;
  /** Attempts running. */
  inFlight = 0;
  /** Jobs admitted and waiting for room in the worker's capacity. */
  queued = 0;
  /** Jobs over the share, waiting for one of this endpoint's attempts to end (see Lanes.waitingRoom). */
  readonly waiting: Job[] = [];
  /** performance.now() at the start of each attempt running, oldest first. */
  readonly starts: number[] = [];
  /** Moving average of the attempts' durations, ms (0: none yet). */
  latencyMs = 0;
  /** The latest time given to a job deferred (clock ms). */
  horizon = 0;
  /** When its backlog was last moved (performance.now()). */
  movedAt = -Infinity;
  /** The last attempt that ended timed out or was told to slow down. */
  struggling = false;
  /** While throttled: since when (clock ms) and the share it had before. */
  throttledSince: number | null = null;
  sharePeak = 0;

  idle(): boolean {
    return this.inFlight === 0 && this.queued === 0 && this.waiting.length === 0;
  }
}
