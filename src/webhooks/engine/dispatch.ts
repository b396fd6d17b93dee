import { performance } from 'node:perf_hooks';
import { removeItem } from '../../lib/churn.js';
import type { Clock } from '../../lib/clock.js';
import { deferred, type Outcome } from './attempt.js';
import type { Job } from './job.js';
import { Lanes } from './lanes.js';

export interface DispatchSettings {
  /** Attempts that may be starting or answering quickly at once (SVC_WORKER_CONCURRENCY). */
  concurrency: number;
  /** Attempts in flight at once at most, slow ones included: the sockets a worker may keep open. */
  maxInFlight: number;
  /** An attempt still running after this long gives its slot up and waits on its socket alone. */
  slowAfterMs: number;
}

export interface DispatchHooks {
  /** Makes the attempt; never rejects. */
  attempt(job: Job): Promise<Outcome>;
  /** The job's outcome: an attempt's, or a job put off until later without one. */
  settle(job: Job, outcome: Outcome): void;
  /** Puts a job off until `until`, without an attempt. */
  defer(job: Job, until: Date): void;
  /** A slot came free: more may be claimed. */
  freed(): void;
}

/**
 * Dispatch: which job starts when. Jobs pass their endpoint's lane (lanes.ts), then wait in one queue,
 * first come first served, for one of `concurrency` slots. A slot is for an attempt that is
 * starting or answering quickly: an attempt still running after `slowAfterMs` gives its slot up and
 * goes on holding only its socket, up to `maxInFlight` sockets in all. A request waiting on a silent
 * receiver costs an open socket, not a core, so hanging receivers cannot take the slots from
 * everyone else; their lanes keep them to a share of one or two attempts each.
 */
export class Dispatcher {
  readonly lanes: Lanes;
  private ready: Job[] = [];
  // Arrays rather than Maps and Sets, whose items come and go with every attempt (lib/churn.ts).
  /** Jobs in `ready` that passed no lane: those of inactive endpoints, which make no request. */
  private readonly unlaned: Job[] = [];
  /** Attempts holding a slot, oldest first. */
  private readonly quick = new Started();
  /** Attempts that gave their slot up. */
  private readonly slow: Job[] = [];
  /** Attempts not yet ended and settled, and who waits for there to be none. */
  private running = 0;
  private readonly whenNoneRunning: (() => void)[] = [];
  private sweeper: NodeJS.Timeout | null = null;
  /** Starting attempts: from the worker's start (or a one-shot run) to its stop. */
  private open = false;

  constructor(
    private readonly settings: DispatchSettings,
    private readonly clock: Clock,
    private readonly hooks: DispatchHooks,
  ) {
    this.lanes = new Lanes({ maxShare: settings.concurrency, slowAfterMs: settings.slowAfterMs });
  }

  /** Takes a job: starts it, queues it, lets it wait on its lane, or puts it off. */
  offer(job: Job): void {
    const now = this.clock.now();
    if (job.notBefore && job.notBefore.getTime() > now.getTime()) return this.hooks.defer(job, job.notBefore);
    // A job for an inactive endpoint makes no request: it passes no lane.
    if (!job.endpointActive) this.unlaned.push(job);
    const admission = job.endpointActive ? this.lanes.admit(job, now, performance.now()) : 'go';
    if (admission === 'wait') return;
    if (admission === 'go') {
      this.ready.push(job);
      return this.startReady();
    }
    this.hooks.defer(job, admission.deferUntil);
  }

  /**
   * Room for more jobs: free slots plus `roundsAhead` rounds of jobs waiting for one, less what
   * waits already; never more than the sockets left.
   */
  room(roundsAhead: number): number {
    const waiting = this.ready.length + this.lanes.waitingCount();
    const bySlots = (1 + roundsAhead) * this.settings.concurrency - this.quick.size - waiting;
    const bySockets = this.settings.maxInFlight - this.quick.size - this.slow.length - waiting;
    return Math.min(bySlots, bySockets);
  }

  /** Jobs in flight or waiting to start. */
  busy(): boolean {
    return this.quick.size + this.slow.length + this.ready.length > 0 || this.lanes.waitingCount() > 0;
  }

  /** Takes back the jobs not started that `take` wants (a claim ending, a worker stopping). */
  takeBack(take: (job: Job) => boolean): Job[] {
    const queued = this.ready.filter(take);
    if (queued.length > 0) {
      this.ready = this.ready.filter((job) => !take(job));
      this.lanes.unqueue(queued.filter((job) => !removeItem(this.unlaned, job)));
    }
    return [...queued, ...this.lanes.takeWaiting(take)];
  }

  /** Starts attempts from now on. */
  resume(): void {
    this.open = true;
    this.startReady();
  }

  /** Starts nothing more from now on: what is offered waits, to be taken back. */
  pause(): void {
    this.open = false;
  }

  /** Starts nothing more; resolves when the attempts in flight have ended and been settled. */
  async close(): Promise<void> {
    this.open = false;
    await this.idle();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** For one-shot runs (runDue): resolves when everything offered so far has been settled. */
  async idle(): Promise<void> {
    while (this.running > 0) await new Promise<void>((resolve) => this.whenNoneRunning.push(resolve));
  }

  private startReady(): void {
    while (this.open && this.ready.length > 0 && this.quick.size < this.settings.concurrency && this.quick.size + this.slow.length < this.settings.maxInFlight) {
      const job = this.ready.shift()!;
      this.launch(job, !removeItem(this.unlaned, job));
    }
  }

  private launch(job: Job, laned: boolean): void {
    const startedAt = performance.now();
    if (laned) this.lanes.started(job, startedAt);
    this.quick.add(job, startedAt);
    this.watch();
    this.running++;
    void this.hooks
      .attempt(job)
      // An attempt never rejects; should one all the same, its job comes due again at once.
      .catch(() => deferred(job, this.clock.now(), this.clock.now()))
      .then((outcome) => this.ended(job, outcome, startedAt, laned))
      .finally(() => {
        if (--this.running === 0) for (const resolve of this.whenNoneRunning.splice(0)) resolve();
      });
  }

  private ended(job: Job, outcome: Outcome, startedAt: number, laned: boolean): void {
    if (!removeItem(this.slow, job)) this.quick.remove(job);
    if (laned) this.ready.push(...this.lanes.ended(job, outcome, startedAt, performance.now()));
    this.hooks.settle(job, outcome);
    this.startReady();
    this.hooks.freed();
  }

  /** Moves attempts running longer than slowAfterMs off their slots, checking a few times per period. */
  private watch(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      const limit = performance.now() - this.settings.slowAfterMs;
      let moved = 0;
      for (let job = this.quick.takeStartedBy(limit); job; job = this.quick.takeStartedBy(limit)) {
        this.slow.push(job);
        moved++;
      }
      if (moved > 0) {
        this.startReady();
        this.hooks.freed();
      }
      if (this.quick.size === 0 && this.slow.length === 0 && this.sweeper) {
        clearInterval(this.sweeper);
        this.sweeper = null;
      }
    }, Math.max(5, this.settings.slowAfterMs >> 2));
    this.sweeper.unref();
  }
}

/** Attempts in the order they started, each with its start time (performance.now()) at the same place. */
class Started {
  private readonly jobs: Job[] = [];
  private readonly times: number[] = [];

  get size(): number {
    return this.jobs.length;
  }

  add(job: Job, startedAt: number): void {
    this.jobs.push(job);
    this.times.push(startedAt);
  }

  remove(job: Job): void {
    const at = this.jobs.indexOf(job);
    if (at < 0) return;
    this.jobs.splice(at, 1);
    this.times.splice(at, 1);
  }

  /** Takes out the oldest attempt if it started at `limit` or before. */
  takeStartedBy(limit: number): Job | undefined {
    if (this.times.length === 0 || this.times[0] > limit) return undefined;
    this.times.shift();
    return this.jobs.shift();
  }
}
