import type { Job, Outcome } from './job.js';

/** Attempts an endpoint this worker has not heard from yet may have in flight at once. */
export const INITIAL_SHARE = 4;

/** The most attempts one endpoint may have in flight in a worker, whatever the worker's capacity. */
export const MAX_SHARE = 64;

/** Answers that ask a sender to slow down: the share halves, as it does when an attempt times out. */
export const SLOW_DOWN = new Set([429, 502, 503, 504]);

/** Jobs deferred one after another are never spaced closer than this. */
const MIN_SPACING_MS = 100;

/** Endpoints remembered at most; an idle one beyond it is forgotten and starts again at INITIAL_SHARE. */
const MAX_LANES = 10_000;

/** A job over its endpoint's share waits beside it only if its turn should come within this long. */
const WAIT_BUDGET_MS = 200;

/** An attempt running this long, and four times the endpoint's usual time, makes it suspect of hanging. */
const SUSPECT_AFTER_MS = 1_000;

/** An endpoint slowed down by its answers: the share it has now, since when (clock ms). */
export interface Throttle {
  share: number;
  since: Date;
}

export interface LaneSettings {
  /** The most attempts one endpoint may have in flight now: MAX_SHARE, or less while the worker's capacity is smaller. */
  maxShare(): number;
  /** An endpoint's lane was slowed down (429, 502, 503, 504, a time-out), changed its share since, or recovered (null). */
  throttled(endpointId: string, throttle: Throttle | null): void;
}

/** Where a job offered to its endpoint's lane goes. */
export type Admission = 'go' | 'wait' | { deferUntil: Date };

/**
 * One endpoint's share of a worker. `share` is how many attempts it may have in flight at once:
 * it grows by one with every answer and halves when an attempt times out or the receiver asks to
 * slow down (SLOW_DOWN), down to one (additive increase, multiplicative decrease, as TCP does). A
 * receiver that answers, however slowly, soon has MAX_SHARE attempts, and a hanging one keeps a
 * single probe. From the first slow-down it is throttled, until its share is back where it was.
 */
class Lane {
  share: number;
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
  /** The last attempt that ended timed out or was told to slow down. */
  struggling = false;
  /** While throttled: since when (clock ms) and the share it had before. */
  throttledSince: number | null = null;
  sharePeak = 0;

  constructor(maxShare: number) {
    this.share = Math.min(INITIAL_SHARE, maxShare);
  }

  idle(): boolean {
    return this.inFlight === 0 && this.queued === 0 && this.waiting.length === 0;
  }
}

/**
 * Per-endpoint admission. A job whose endpoint has room in its share goes on to the worker's
 * capacity; one over the share waits beside it if its turn should come within moments, and is
 * otherwise deferred: written back with a later `next_attempt_at`, spread over the time the
 * endpoint's share needs to get through the jobs before it. A hanging endpoint's backlog therefore
 * leaves the front of the due-rows index instead of standing in front of everyone else's
 * deliveries, and costs one write per job, not a place in flight.
 */
export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  /** False for one-shot runs (runDue): a job over its endpoint's share waits for it, never deferred. */
  defer = true;

  constructor(private readonly settings: LaneSettings) {}

  private lane(endpointId: string): Lane {
    let lane = this.lanes.get(endpointId);
    if (!lane) {
      lane = new Lane(this.settings.maxShare());
      this.lanes.set(endpointId, lane);
    }
    return lane;
  }

  /** Offers a job; `clockNow` is the service clock (for times written), `perfNow` measures ages. */
  admit(job: Job, clockNow: Date, perfNow: number): Admission {
    const lane = this.lane(job.endpointId);
    if (lane.inFlight + lane.queued < lane.share) {
      lane.queued++;
      return 'go';
    }
    if (!this.defer || lane.waiting.length < this.waitingRoom(lane, perfNow)) {
      lane.waiting.push(job);
      return 'wait';
    }
    return { deferUntil: this.deferral(lane, clockNow, perfNow) };
  }

  /** A job admitted with 'go' starts. */
  started(job: Job, perfNow: number): void {
    const lane = this.lane(job.endpointId);
    lane.queued--;
    lane.inFlight++;
    lane.starts.push(perfNow);
  }

  /**
   * An attempt ended: the lane learns from it and returns the jobs that may now go (its waiting
   * jobs, up to its share), already counted as admitted.
   */
  ended(job: Job, outcome: Outcome, startedAt: number, perfNow: number): Job[] {
    const lane = this.lane(job.endpointId);
    lane.inFlight--;
    const at = lane.starts.indexOf(startedAt);
    if (at >= 0) lane.starts.splice(at, 1);
    if (outcome.attempted) this.learn(job, lane, outcome, perfNow - startedAt);
    const go: Job[] = [];
    while (lane.waiting.length > 0 && lane.inFlight + lane.queued < lane.share) {
      go.push(lane.waiting.shift()!);
      lane.queued++;
    }
    if (lane.idle() && this.lanes.size > MAX_LANES) this.lanes.delete(job.endpointId);
    return go;
  }

  /** The share after an answer (or none): halved on a slow-down, one more on any other answer. */
  private learn(job: Job, lane: Lane, outcome: Outcome, took: number): void {
    const { endpointId } = job;
    lane.latencyMs = lane.latencyMs === 0 ? took : lane.latencyMs * 0.8 + took * 0.2;
    lane.struggling = outcome.timedOut || (outcome.responseStatus !== null && SLOW_DOWN.has(outcome.responseStatus));
    const before = lane.share;
    if (lane.struggling) {
      if (lane.throttledSince === null) {
        lane.throttledSince = outcome.attemptedAt.getTime();
        lane.sharePeak = lane.share;
      }
      lane.share = Math.max(1, lane.share >> 1);
    } else if (outcome.responseStatus !== null || outcome.status === 'success') {
      // An answer: an HTTP status, or a broker's acknowledgement (which has none).
      lane.share = Math.min(this.settings.maxShare(), lane.share + 1);
    }
    if (lane.throttledSince !== null && lane.share >= lane.sharePeak) {
      lane.throttledSince = null;
      this.settings.throttled(endpointId, null);
    } else if (lane.throttledSince === null && job.endpointThrottled && !lane.struggling) {
      // The endpoint shows a throttle no lane of this worker holds (one of a worker gone, or a lane
      // forgotten): an answer that asks for no slow-down clears it.
      this.settings.throttled(endpointId, null);
    } else if (lane.throttledSince !== null && lane.share !== before) {
      this.settings.throttled(endpointId, { share: lane.share, since: new Date(lane.throttledSince) });
    }
  }

  /** Jobs admitted with 'go' are taken back unstarted (a hold ending, a worker stopping). */
  unqueue(jobs: Job[]): void {
    for (const job of jobs) this.lane(job.endpointId).queued--;
  }

  /** Jobs waiting over their endpoints' shares that `take` wants back (removed from the lanes). */
  takeWaiting(take: (job: Job) => boolean): Job[] {
    const taken: Job[] = [];
    for (const lane of this.lanes.values()) {
      for (let i = lane.waiting.length - 1; i >= 0; i--) {
        if (take(lane.waiting[i])) taken.push(...lane.waiting.splice(i, 1));
      }
    }
    return taken;
  }

  /** Jobs waiting over their endpoints' shares. */
  waitingCount(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.waiting.length;
    return n;
  }

  /**
   * How long an attempt of the lane is expected to take: the average so far, or the age of its
   * oldest attempt still running if that is longer (a receiver that has just started hanging).
   */
  private expectedMs(lane: Lane, perfNow: number): number {
    const oldest = lane.starts.length > 0 ? perfNow - lane.starts[0] : 0;
    return Math.max(lane.latencyMs, oldest);
  }

  /**
   * Jobs over the share that may wait beside the lane: those whose turn should come within
   * WAIT_BUDGET_MS, two rounds of the share at most. A lane whose attempts end within moments keeps
   * its next jobs at hand; a slow one keeps few; a hanging one none.
   */
  private waitingRoom(lane: Lane, perfNow: number): number {
    const expected = this.expectedMs(lane, perfNow);
    if (expected === 0) return 2 * lane.share;
    return Math.min(2 * lane.share, Math.floor((lane.share * WAIT_BUDGET_MS) / expected));
  }

  /**
   * When a deferred job should come due: after the jobs already deferred, spaced by the endpoint's
   * expected attempt time over the share it will have. A healthy endpoint (answering, its oldest
   * attempt not far past its usual time) is expected to grow to the whole worker, so its jobs come
   * back soon, at the pace of a full share, rather than at the pace of today's small share: a slow
   * receiver that is still ramping up is not held to that pace for its whole backlog. A struggling
   * one (timing out, asking to slow down, or with an attempt far past its usual time) is spaced by
   * its share as it is, one attempt time per job for a hanging one.
   */
  private deferral(lane: Lane, clockNow: Date, perfNow: number): Date {
    const expected = Math.max(this.expectedMs(lane, perfNow), MIN_SPACING_MS);
    const oldest = lane.starts.length > 0 ? perfNow - lane.starts[0] : 0;
    const healthy = !lane.struggling && oldest < Math.max(4 * lane.latencyMs, SUSPECT_AFTER_MS);
    const share = healthy ? this.settings.maxShare() : lane.share;
    lane.horizon = Math.max(lane.horizon, clockNow.getTime()) + Math.ceil(expected / share);
    return new Date(lane.horizon);
  }
}
