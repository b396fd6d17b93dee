import type { Placed, RowMove } from './backlog.js';
import type { Deferral } from './handoff.js';
import type { Attempted, Job, Outcome } from './job.js';
import { INITIAL_SHARE, Lane, SUSPECT_AFTER_MS, type Throttle } from './lane.js';

/** The part of a worker's capacity that endpoints on probation (never heard from, or suspect) share. */
export const PROBATION_PART = 1 / 4;

/** The most attempts one endpoint may have in flight in a worker, whatever the worker's capacity. */
export const MAX_SHARE = 64;

/** Answers that ask a sender to slow down: the share halves, as it does when an attempt times out. */
export const SLOW_DOWN = new Set([429, 502, 503, 504]);

/** Endpoints remembered at most; an idle one beyond it is forgotten and starts on probation again. */
const MAX_LANES = 10_000;

/** An endpoint's due backlog is moved behind its lane's horizon at most this often (backlog.ts). */
const MOVE_EVERY_MS = 250;

/** Rows placed for a suspect endpoint that come due within this long are moved at a review. */
const REVIEW_AHEAD_MS = 500;

export interface LaneSettings {
  /** The most attempts one endpoint may have in flight now: MAX_SHARE, or less while the worker's capacity is smaller. */
  maxShare(): number;
  /** Places for the attempts of endpoints on probation, all together (a part of the capacity). */
  probation(): number;
  /** An endpoint's lane was slowed down (429, 502, 503, 504, a time-out), changed its share since, or recovered (null). */
  throttled(endpointId: string, throttle: Throttle | null): void;
  /** Moves the endpoint's due rows behind `after`, `stepMs` apart (backlog.ts); resolves to the rows moved. */
  moveBacklog?(endpointId: string, now: Date, after: Date, stepMs: number): Promise<Placed[]>;
  /** Moves rows placed earlier, still ahead and as placed, to the times given (backlog.ts). */
  moveRows?(rows: RowMove[], now: Date): Promise<unknown>;
}

/** Where a job offered to its endpoint's lane goes: its turn. */
export type Turn = 'go' | 'wait' | { deferUntil: Date };

/**
 * Per-endpoint admission. A job whose endpoint has room in its share goes on to the worker's
 * capacity; one over the share waits beside it if its turn should come within moments, and is
 * otherwise deferred: written back with a later `next_attempt_at`, spread over the time the
 * endpoint's share needs to get through the jobs before it, and the rest of the endpoint's due rows
 * with it, in one statement (backlog.ts). A hanging endpoint's backlog therefore leaves the front
 * of the due-rows index at once instead of standing in front of everyone else's deliveries, and
 * costs a write per row, not a place in flight. The backlog of an endpoint never heard from comes
 * due after its verdict, and is moved again a slice at a time should it turn out hanging (review).
 */
export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  /**
   * Jobs admitted on probation, with when (performance.now()): each holds a place of the pool until
   * its attempt ends or SUSPECT_AFTER_MS has passed (a probe that hangs then holds only its lane).
   */
  private readonly probing = new Map<Job, number>();
  /** Lanes on probation with jobs waiting for a place of the pool, in the order they came. */
  private readonly queue = new Set<Lane>();
  /** Lanes never heard from with rows placed ahead (see review). */
  private readonly placing = new Set<Lane>();
  /** Suspect lanes that have deferred a job: writes may defer their new rows (deferrals). */
  private readonly deferring = new Map<string, Lane>();
  /** False for one-shot runs (runDue): a job over its endpoint's share waits for it, never deferred. */
  defer = true;

  constructor(private readonly settings: LaneSettings) {}

  private lane(endpointId: string): Lane {
    let lane = this.lanes.get(endpointId);
    if (!lane) {
      lane = new Lane();
      this.lanes.set(endpointId, lane);
    }
    return lane;
  }

  /** Offers a job; `clockNow` is the service clock (for times written), `perfNow` measures ages. */
  offer(job: Job, clockNow: Date, perfNow: number): Turn {
    const lane = this.lane(job.endpointId);
    if (lane.waiting.length === 0 && this.take(lane, job, perfNow)) return 'go';
    if (!this.defer || lane.waiting.length < lane.waitingRoom(perfNow)) {
      lane.waiting.push(job);
      if (lane.onProbation(perfNow)) this.queue.add(lane);
      return 'wait';
    }
    const step = lane.spacing(perfNow, this.settings.maxShare());
    lane.horizon = Math.max(lane.horizon, clockNow.getTime()) + step;
    this.place(lane, [{ id: job.id, at: new Date(lane.horizon) }], perfNow);
    this.moveBacklog(job.endpointId, lane, clockNow, perfNow, step);
    if (lane.suspect(perfNow)) this.deferring.set(job.endpointId, lane);
    return { deferUntil: new Date(lane.horizon) };
  }

  /** Where a write should put the new rows of endpoints that would defer every job now: behind the horizon, at their pace. */
  deferrals(clockNow: Date, perfNow: number): Deferral[] {
    const deferrals: Deferral[] = [];
    for (const [endpointId, lane] of this.deferring) {
      if (!this.defer || !lane.defersAll(perfNow)) this.deferring.delete(endpointId);
      else deferrals.push({ endpointId, after: new Date(Math.max(lane.horizon, clockNow.getTime())), stepMs: lane.spacing(perfNow, this.settings.maxShare()) });
    }
    return deferrals;
  }

  /** A write deferred `rows` rows under `deferral`: the lane's horizon moves past them. */
  deferredRows(deferral: Deferral, rows: number): void {
    const lane = this.lanes.get(deferral.endpointId);
    if (lane) lane.horizon = Math.max(lane.horizon, deferral.after.getTime() + rows * deferral.stepMs);
  }

  /**
   * How long until an endpoint never heard from is known: suspect once an attempt has run
   * SUSPECT_AFTER_MS unanswered. Its backlog comes due only after that and the time of a move, so
   * that it is still ahead, to be moved in one statement, if it turns out hanging (review).
   */
  private verdictIn(lane: Lane, perfNow: number): number {
    return lane.earned ? 0 : Math.max(0, SUSPECT_AFTER_MS + MOVE_EVERY_MS - lane.oldestMs(perfNow));
  }

  /**
   * Rows deferred or moved for an endpoint never heard from, and not suspect yet, are kept, to be
   * moved again should it hang; a suspect one's are spaced at its pace already.
   */
  private place(lane: Lane, rows: Placed[], perfNow: number): void {
    if (lane.earned || lane.suspect(perfNow) || !this.settings.moveRows || rows.length === 0) return;
    lane.placed.push(...rows);
    this.placing.add(lane);
  }

  /**
   * Every ADJUST_MS: the rows placed for endpoints never heard from that have turned suspect go to
   * the pace of a suspect endpoint, behind everything deferred so far, before they come due, rather
   * than each be claimed and deferred again: those coming due within REVIEW_AHEAD_MS, all lanes in
   * one statement, so that a backlog of thousands is rewritten a slice at a time. The rows of an
   * endpoint that answered stay where they are.
   */
  review(clockNow: Date, perfNow: number): void {
    const now = clockNow.getTime();
    const moves: RowMove[] = [];
    for (const lane of this.placing) {
      lane.placed = lane.placed.filter((row) => row.at.getTime() > now);
      if (lane.earned || lane.placed.length === 0) {
        lane.placed = [];
        this.placing.delete(lane);
        continue;
      }
      if (!lane.suspect(perfNow)) continue;
      lane.placed.sort((a, b) => a.at.getTime() - b.at.getTime());
      const soon = lane.placed.findIndex((row) => row.at.getTime() > now + REVIEW_AHEAD_MS);
      const rows = lane.placed.splice(0, soon < 0 ? lane.placed.length : soon);
      const step = lane.spacing(perfNow, this.settings.maxShare());
      const after = Math.max(lane.horizon, now);
      rows.forEach((row, i) => moves.push({ ...row, later: new Date(after + (i + 1) * step) }));
      lane.horizon = after + rows.length * step;
    }
    if (moves.length > 0) void this.settings.moveRows?.(moves, clockNow);
  }

  /**
   * The rest of the endpoint's due rows follow the job deferred, in one statement: a backlog leaves
   * the head of the due index at once instead of a claim at a time.
   */
  private moveBacklog(endpointId: string, lane: Lane, clockNow: Date, perfNow: number, step: number): void {
    if (!this.settings.moveBacklog || perfNow - lane.movedAt < MOVE_EVERY_MS) return;
    lane.movedAt = perfNow;
    const after = Math.max(lane.horizon, clockNow.getTime() + this.verdictIn(lane, perfNow));
    void this.settings.moveBacklog(endpointId, clockNow, new Date(after), step).then((moved) => {
      if (moved.length === 0) return;
      lane.horizon = Math.max(lane.horizon, after + moved.length * step);
      this.place(lane, moved, perfNow);
    });
  }

  /** Counts `job` as admitted if its lane has room for it (and, on probation, the pool a place). */
  private take(lane: Lane, job: Job, perfNow: number): boolean {
    const busy = lane.inFlight + lane.queued;
    if (lane.onProbation(perfNow)) {
      if (busy >= (lane.earned || lane.timedOut ? 1 : INITIAL_SHARE) || !this.poolHasRoom(perfNow)) return false;
      this.probing.set(job, perfNow);
    } else if (busy >= Math.min(lane.share, this.settings.maxShare())) return false;
    lane.queued++;
    return true;
  }

  /** Whether the probation pool has a place, once the probes past SUSPECT_AFTER_MS have left it. */
  private poolHasRoom(perfNow: number): boolean {
    for (const [job, since] of this.probing) {
      if (perfNow - since <= SUSPECT_AFTER_MS) break;
      this.probing.delete(job);
    }
    return this.probing.size < this.settings.probation();
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
    if (outcome.kind === 'attempted') this.learn(job, lane, outcome, perfNow - startedAt);
    const go: Job[] = [];
    this.release(lane, perfNow, go);
    this.probing.delete(job);
    go.push(...this.poll(perfNow));
    if (lane.idle() && this.lanes.size > MAX_LANES) {
      this.lanes.delete(job.endpointId);
      this.placing.delete(lane);
      this.deferring.delete(job.endpointId);
    }
    return go;
  }

  /** Jobs of lanes waiting for a place of the probation pool that may go now, in the lanes' turn. */
  poll(perfNow: number): Job[] {
    const go: Job[] = [];
    for (const waiting of this.queue) {
      if (!this.poolHasRoom(perfNow)) break;
      this.release(waiting, perfNow, go);
    }
    return go;
  }

  /** Moves the lane's waiting jobs that it now has room for into `go`. */
  private release(lane: Lane, perfNow: number, go: Job[]): void {
    while (lane.waiting.length > 0 && this.take(lane, lane.waiting[0], perfNow)) go.push(lane.waiting.shift()!);
    if (lane.waiting.length > 0 && lane.onProbation(perfNow)) this.queue.add(lane);
    else this.queue.delete(lane);
  }

  /** The share after an answer (or none): halved on a slow-down, one more on any other answer. */
  private learn(job: Job, lane: Lane, outcome: Attempted, took: number): void {
    const { endpointId } = job;
    lane.latencyMs = lane.latencyMs === 0 ? took : lane.latencyMs * 0.8 + took * 0.2;
    lane.timedOut = outcome.timedOut;
    lane.struggling = outcome.timedOut || (outcome.responseStatus !== null && SLOW_DOWN.has(outcome.responseStatus));
    const answered = outcome.responseStatus !== null || outcome.status === 'success';
    const before = lane.share;
    if (lane.struggling) {
      if (lane.throttledSince === null) {
        lane.throttledSince = outcome.attemptedAt.getTime();
        lane.sharePeak = lane.share;
      }
      lane.share = Math.max(1, lane.share >> 1);
    } else if (answered) {
      // An answer: an HTTP status, or a broker's acknowledgement (which has none). The first one
      // ends the endpoint's probation: it has INITIAL_SHARE attempts of its own.
      if (lane.earned) lane.share = Math.min(this.settings.maxShare(), lane.share + 1);
      lane.earned = true;
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
    for (const job of jobs) {
      this.lane(job.endpointId).queued--;
      this.probing.delete(job);
    }
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
}
