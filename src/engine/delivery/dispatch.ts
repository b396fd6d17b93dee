import { performance } from 'node:perf_hooks';
import type { Clock } from '../../lib/clock.js';
import { deferred } from './attempt.js';
import type { Capacity } from './capacity.js';
import type { Job, Outcome } from './job.js';
import type { Lanes } from './lanes.js';

export interface DispatchHooks {
  /** Makes the attempt; never rejects. */
  attempt(job: Job): Promise<Outcome>;
  /** The job's outcome: an attempt's, or a deferral without one. */
  finish(job: Job, outcome: Outcome): void;
  /** Room came free: more may be claimed. */
  freed(): void;
  /**
   * Whether a job waited so long (the database down, say) that its lease could run out during the
   * attempt: it is not attempted, and comes due again when the lease ends.
   */
  expired(job: Job): boolean;
}

/** Jobs a worker keeps in hand ahead of its attempts at least, however few are in flight. */
export const MIN_ROUND = 64;

/**
 * Which job starts when. A job passes its endpoint's lane (lanes.ts), which starts it, keeps it
 * waiting a moment, or defers it; started jobs wait in one queue, first come first served, until the
 * worker's capacity (capacity.ts) has room for another attempt in flight. Every attempt in flight
 * counts, however long it runs: the capacity is a bound on sockets and memory, and a receiver that
 * hangs is kept to a probe by its lane.
 */
export class Dispatcher {
  private ready: Job[] = [];
  /** Attempts in flight. */
  private inFlight = 0;
  private readonly whenIdle: (() => void)[] = [];
  /** Starting attempts: from the worker's start (or a one-shot run) to its stop. */
  private open = false;

  constructor(
    private readonly capacity: Capacity,
    readonly lanes: Lanes,
    private readonly clock: Clock,
    private readonly hooks: DispatchHooks,
  ) {}

  /** Takes a job: starts it, queues it, lets it wait on its lane, or defers it (to `notBefore` at the earliest). */
  place(job: Job, notBefore: Date | null): void {
    const now = this.clock.now();
    if (notBefore && notBefore.getTime() > now.getTime()) return this.hooks.finish(job, deferred(job, notBefore, now));
    // A job of an inactive endpoint makes no request: it passes no lane.
    const turn = job.endpointActive ? this.lanes.offer(job, now, performance.now()) : 'go';
    if (turn === 'wait') return;
    if (turn === 'go') {
      this.ready.push(job);
      return this.startReady();
    }
    this.hooks.finish(job, deferred(job, turn.deferUntil, now));
  }

  /**
   * Room for more jobs: `1 + roundsAhead` rounds of the attempts in flight (MIN_ROUND at least, the
   * capacity at most), so that what a worker takes grows with its work; less what waits already.
   */
  room(roundsAhead: number): number {
    const waiting = this.ready.length + this.lanes.waitingCount();
    const ahead = (1 + roundsAhead) * Math.min(this.capacity.limit, Math.max(MIN_ROUND, this.inFlight));
    return ahead - this.inFlight - waiting;
  }

  /** Jobs that would start at once: the capacity's places not taken by attempts in flight or jobs queued for it. */
  free(): number {
    return this.capacity.limit - this.inFlight - this.ready.length;
  }

  /** Attempts in flight now. */
  running(): number {
    return this.inFlight;
  }

  /**
   * Every ADJUST_MS: starts the jobs of endpoints on probation that waited for the pool, now that it
   * may have room, and has the lanes review the rows they placed (lanes.ts).
   */
  poll(perfNow = performance.now()): void {
    this.lanes.review(this.clock.now(), perfNow);
    const go = this.lanes.poll(perfNow);
    if (go.length === 0) return;
    this.ready.push(...go);
    this.startReady();
  }

  /** Jobs in flight or waiting to start. */
  busy(): boolean {
    return this.inFlight + this.ready.length + this.lanes.waitingCount() > 0;
  }

  /** Takes back the jobs not started that `take` wants (a hold ending, a worker stopping). */
  takeBack(take: (job: Job) => boolean): Job[] {
    const queued = this.ready.filter(take);
    if (queued.length > 0) {
      this.ready = this.ready.filter((job) => !take(job));
      this.lanes.unqueue(queued.filter((job) => job.endpointActive));
    }
    return [...queued, ...this.lanes.takeWaiting(take)];
  }

  /** Starts attempts from now on. */
  resume(): void {
    this.open = true;
    this.startReady();
  }

  /** Starts nothing more from now on: what is admitted waits, to be taken back or started on resume(). */
  pause(): void {
    this.open = false;
  }

  /** Resolves when every attempt started so far has ended and been finished. */
  async idle(): Promise<void> {
    while (this.inFlight > 0) await new Promise<void>((resolve) => this.whenIdle.push(resolve));
  }

  private startReady(): void {
    while (this.open && this.ready.length > 0) {
      if (this.inFlight >= this.capacity.limit) return;
      const job = this.ready.shift()!;
      if (!this.hooks.expired(job)) this.launch(job);
      else if (job.endpointActive) this.lanes.unqueue([job]);
    }
  }

  private launch(job: Job): void {
    const startedAt = performance.now();
    if (job.endpointActive) this.lanes.started(job, startedAt);
    this.inFlight++;
    void this.hooks
      .attempt(job)
      // An attempt never rejects; should one all the same, its job comes due again at once.
      .catch(() => deferred(job, this.clock.now(), this.clock.now()))
      .then((outcome) => {
        this.inFlight--;
        if (job.endpointActive) this.ready.push(...this.lanes.ended(job, outcome, startedAt, performance.now()));
        this.hooks.finish(job, outcome);
        this.startReady();
        this.hooks.freed();
        if (this.inFlight === 0) for (const resolve of this.whenIdle.splice(0)) resolve();
      });
  }
}
