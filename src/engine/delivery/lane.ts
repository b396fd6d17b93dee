import type { Placed } from './backlog.js';
import type { Job } from './job.js';

/** An endpoint's share once it has answered this worker for the first time. */
export const INITIAL_SHARE = 4;

/** Jobs deferred one after another are never spaced closer than this. */
const MIN_SPACING_MS = 100;

/** A job over its endpoint's share waits beside it only if its turn should come within this long. */
const WAIT_BUDGET_MS = 200;

/** Jobs that may wait beside a lane whose attempts' time is not known yet. */
export const WAIT_UNKNOWN = 16;

/** An attempt running this long, and four times the endpoint's usual time, makes it suspect of hanging. */
export const SUSPECT_AFTER_MS = 1_000;

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
  /** Rows deferred or moved while it was never heard from, still to come due (Lanes.review). */
  placed: Placed[] = [];
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

  /** Never heard from, or suspect. */
  onProbation(perfNow: number): boolean {
    return !this.earned || this.suspect(perfNow);
  }

  /** Its last attempt timed out, or one runs past SUSPECT_AFTER_MS and four times its usual time. */
  suspect(perfNow: number): boolean {
    return this.timedOut || this.oldestMs(perfNow) > Math.max(4 * this.latencyMs, SUSPECT_AFTER_MS);
  }

  /** How long the lane's oldest attempt still running has run (0: none). */
  oldestMs(perfNow: number): number {
    return this.starts.length > 0 ? perfNow - this.starts[0] : 0;
  }

  /**
   * How long an attempt of the lane is expected to take: the average so far, or the age of its
   * oldest attempt still running if that is longer (a receiver that has just started hanging).
   */
  expectedMs(perfNow: number): number {
    return Math.max(this.latencyMs, this.oldestMs(perfNow));
  }

  /**
   * Jobs over the share that may wait beside the lane: those whose turn should come within
   * WAIT_BUDGET_MS, two rounds of the share at most. A lane whose attempts end within moments keeps
   * its next jobs at hand; a slow one keeps few; a hanging one none.
   */
  waitingRoom(perfNow: number): number {
    const expected = this.expectedMs(perfNow);
    const share = this.onProbation(perfNow) ? 1 : this.share;
    const most = Math.max(2 * share, WAIT_UNKNOWN);
    if (expected === 0) return most;
    return Math.min(most, Math.floor((share * WAIT_BUDGET_MS) / expected));
  }

  /** Every job offered now would be deferred: suspect, its probes in flight, no room to wait (Lanes.offer). */
  defersAll(perfNow: number): boolean {
    const probes = this.earned || this.timedOut ? 1 : INITIAL_SHARE;
    return this.suspect(perfNow) && this.inFlight + this.queued >= probes && this.waiting.length >= this.waitingRoom(perfNow);
  }

  /**
   * How far apart deferred jobs come due: the endpoint's expected attempt time over the share it
   * will have, after the jobs already deferred. A healthy endpoint (answering, its oldest attempt
   * not far past its usual time) is expected to grow to the whole worker, so its jobs come back
   * soon, at the pace of a full share, rather than at the pace of today's small share: a slow
   * receiver that is still ramping up is not held to that pace for its whole backlog. A struggling
   * one (timing out, asking to slow down, or with an attempt far past its usual time) is spaced by
   * its share as it is, one attempt time per job for a hanging one.
   */
  spacing(perfNow: number, maxShare: number): number {
    const expected = Math.max(this.expectedMs(perfNow), MIN_SPACING_MS);
    const healthy = !this.struggling && !this.suspect(perfNow);
    const share = healthy ? maxShare : this.onProbation(perfNow) ? 1 : this.share;
    return Math.ceil(expected / share);
  }
}
