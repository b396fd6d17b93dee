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
}

/** An attempt running longer than this is slow: it waits on its socket alone (see Dispatcher). */
export const SLOW_AFTER_MS = 1_000;
/** Sockets a worker keeps open at most, per unit of its capacity. */
export const SOCKETS_PER_CAPACITY = 8;

/**
 * Which job starts when. A job passes its endpoint's lane (lanes.ts), which starts it, keeps it
 * waiting a moment, or defers it; started jobs wait in one queue, first come first served, until the
 * worker's capacity (capacity.ts) has room for another attempt in flight. An attempt still running
 * after SLOW_AFTER_MS stops counting against the capacity: a receiver that is slow or hangs costs
 * an open socket (SOCKETS_PER_CAPACITY per unit of capacity at most), not the process's work, so
 * hanging receivers cannot take the capacity from everyone else; their lanes keep them to one or two
 * attempts each.
 */
export class Dispatcher {
  private ready: Job[] = [];
  /** Attempts in flight: all, and those past SLOW_AFTER_MS (`started` holds the others' start times, oldest first). */
  private inFlight = 0;
  private readonly slow = new Set<Job>();
  private readonly started: { job: Job; at: number }[] = [];
  /** Whether jobs waited for capacity since the last look (Capacity.adjust). */
  private held = false;
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
  admit(job: Job, notBefore: Date | null): void {
    const now = this.clock.now();
    if (notBefore && notBefore.getTime() > now.getTime()) return this.hooks.finish(job, deferred(job, notBefore, now));
    // A job of an inactive endpoint makes no request: it passes no lane.
    const admission = job.endpointActive ? this.lanes.admit(job, now, performance.now()) : 'go';
    if (admission === 'wait') return;
    if (admission === 'go') {
      this.ready.push(job);
      return this.startReady();
    }
    this.hooks.finish(job, deferred(job, admission.deferUntil, now));
  }

  /** Room for more jobs: `1 + roundsAhead` times the capacity, less what is in flight or waits already; never more than the sockets left. */
  room(roundsAhead: number): number {
    const waiting = this.ready.length + this.lanes.waitingCount();
    const byCapacity = (1 + roundsAhead) * this.capacity.limit - (this.inFlight - this.slow.size) - waiting;
    return Math.min(byCapacity, SOCKETS_PER_CAPACITY * this.capacity.limit - this.inFlight - waiting);
  }

  /** Attempts running past SLOW_AFTER_MS stop counting against the capacity (the worker calls this every ADJUST_MS). */
  sweep(perfNow = performance.now()): void {
    let moved = false;
    while (this.started.length > 0 && this.started[0].at <= perfNow - SLOW_AFTER_MS) {
      this.slow.add(this.started.shift()!.job);
      moved = true;
    }
    if (moved) {
      this.startReady();
      this.hooks.freed();
    }
  }

  /** Jobs in flight or waiting to start. */
  busy(): boolean {
    return this.inFlight + this.ready.length + this.lanes.waitingCount() > 0;
  }

  /** Whether jobs waited for capacity since the last call. */
  heldBack(): boolean {
    const held = this.held || this.ready.length > 0;
    this.held = false;
    return held;
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

  /** Starts nothing more from now on: what is admitted waits, to be taken back. */
  pause(): void {
    this.open = false;
  }

  /** Resolves when every attempt started so far has ended and been finished. */
  async idle(): Promise<void> {
    while (this.inFlight > 0) await new Promise<void>((resolve) => this.whenIdle.push(resolve));
  }

  private startReady(): void {
    while (this.open && this.ready.length > 0) {
      if (this.inFlight - this.slow.size >= this.capacity.limit || this.inFlight >= SOCKETS_PER_CAPACITY * this.capacity.limit) {
        this.held = true;
        return;
      }
      this.launch(this.ready.shift()!);
    }
  }

  private launch(job: Job): void {
    const startedAt = performance.now();
    if (job.endpointActive) this.lanes.started(job, startedAt);
    this.inFlight++;
    this.started.push({ job, at: startedAt });
    void this.hooks
      .attempt(job)
      // An attempt never rejects; should one all the same, its job comes due again at once.
      .catch(() => deferred(job, this.clock.now(), this.clock.now()))
      .then((outcome) => {
        this.inFlight--;
        if (!this.slow.delete(job)) this.started.splice(this.started.findIndex((s) => s.job === job), 1);
        if (job.endpointActive) this.ready.push(...this.lanes.ended(job, outcome, startedAt, performance.now()));
        this.hooks.finish(job, outcome);
        this.startReady();
        this.hooks.freed();
        if (this.inFlight === 0) for (const resolve of this.whenIdle.splice(0)) resolve();
      });
  }
}
