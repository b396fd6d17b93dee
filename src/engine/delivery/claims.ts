import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { earliestDue, nextDue } from './claim.js';
import type { Faults } from './faults.js';
import type { LocalWorker, WorkerLink } from './handoff.js';
import { HOLDS_PER_WORKER, Hold, type HoldHandlers } from './hold.js';
import type { Job } from './job.js';
import { ClaimPosition, type DuePosition } from './position.js';
import { Wakeups } from './wakeups.js';

/** Rows one claim takes at most, and the fewest a busy worker claims (a transaction's cost is spread over its rows). */
const MAX_CLAIM = 256;
const BUSY_CLAIM = 64;
/** A worker that has gone idle looks for rows left due after this long (see checkWhenIdle). */
const IDLE_CHECK_MS = 50;

/** What the claims of a worker ask of it. */
export interface ClaimTarget extends Pick<HoldHandlers, 'unstarted' | 'record'> {
  /** Rows it has room for now, holds aside (0 while its outcomes lag). */
  room(): number;
  /** Its capacity now: a busy worker claims min(BUSY_CLAIM, capacity) rows at least. */
  capacity(): number;
  /** Jobs in flight or waiting to start. */
  busy(): boolean;
  /** Outcomes waiting to be written. */
  recording(): boolean;
  admit(jobs: Job[]): Promise<void>;
}

export interface ClaimsDeps {
  db: Db;
  clock: Clock;
  link: WorkerLink;
  config: { leaseMs: number; pollIntervalMs: number };
}

/**
 * When a worker claims and how much: woken (wakeups.ts), it takes due rows under a new hold
 * (hold.ts) while it has room, one claim at a time, and hands them to the worker to admit. A claim
 * that took fewer rows than it asked for took everything due: the next comes when the next row is
 * due. A worker out of room stops claiming until a busy claim fits again.
 */
export class Claims {
  /** Holds whose transactions are open. */
  readonly holds: Hold[] = [];
  private running = false;
  /** The claim loop in progress, and whether it is asked to go round once more. */
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The loop stopped for want of room, not of rows: room coming free starts it again. */
  private full = false;
  private readonly timers: { retry?: NodeJS.Timeout; idle?: NodeJS.Timeout } = {};
  private readonly wakeups: Wakeups;
  private readonly handlers: HoldHandlers;
  private readonly position = new ClaimPosition();

  constructor(
    private readonly deps: ClaimsDeps,
    private readonly faults: Faults,
    private readonly target: ClaimTarget,
  ) {
    this.wakeups = new Wakeups({ db: deps.db, clock: deps.clock, link: deps.link, pollIntervalMs: deps.config.pollIntervalMs }, () => this.wake());
    this.handlers = {
      unstarted: target.unstarted,
      record: target.record,
      ended: (ended, freed, due) => {
        this.holds.splice(this.holds.indexOf(ended), 1);
        this.wakeups.at(due);
        // Rows the hold gave back are due now, before the position: take them again rather than at the next poll.
        if (freed > 0) {
          this.position.forget();
          this.wake();
        } else this.claimIfRoom();
        this.checkWhenIdle();
      },
      onError: (error, during) => faults.failed(error, during),
    };
  }

  async start(worker: LocalWorker): Promise<void> {
    this.running = true;
    await this.wakeups.start(worker);
    this.wake();
  }

  /** Claims no more and waits for the claim under way; the holds stay open. */
  async stop(): Promise<void> {
    this.running = false;
    for (const timer of Object.values(this.timers)) clearTimeout(timer);
    await this.wakeups.stop().catch((error) => this.faults.failed(error, 'unlisten'));
    await this.claiming;
  }

  /** Asks for a claim; claims never overlap, and one asked for during another follows it. */
  wake(): void {
    if (!this.running) return;
    this.again = true;
    this.claiming ??= this.loop().finally(() => (this.claiming = null));
  }

  /** Claims again at `due` (null: no row pending), unless a claim is set sooner. */
  at(due: Date | null): void {
    this.wakeups.at(due);
  }

  /** Takes up to `limit` due rows under a new hold's row locks, from the head of the due rows. */
  claim(limit: number, now = this.deps.clock.now()): Promise<Job[]> {
    return this.claimAfter(null, limit, now);
  }

  private async claimAfter(after: DuePosition | null, limit: number, now: Date): Promise<Job[]> {
    const { db, clock, config } = this.deps;
    const { hold, jobs } = await Hold.claim({ db, clock, leaseMs: config.leaseMs }, this.handlers, now, limit, after);
    if (hold) this.holds.push(hold);
    return jobs;
  }

  /** Ends every hold open: outcomes written, rows in flight leased, rows not started freed. */
  async endHolds(): Promise<void> {
    await Promise.allSettled(this.holds.map((hold) => hold.end()));
  }

  /** A worker that stopped claiming for want of room claims again once a busy claim fits. */
  claimIfRoom(): void {
    if (this.full && this.claimable() >= Math.min(BUSY_CLAIM, this.target.capacity())) {
      this.full = false;
      this.wake();
    }
  }

  /**
   * A worker with nothing in flight, waiting or being written asks when the earliest pending row is
   * due, and claims then (at once if it is due already). Claims end on their own terms (one that
   * took fewer rows than it asked, a worker full while rows came due), and a row left due that way
   * would otherwise wait for the poll. One read of the due-rows index per idle spell.
   */
  checkWhenIdle(): void {
    if (this.timers.idle || !this.running) return;
    this.timers.idle = setTimeout(() => {
      this.timers.idle = undefined;
      if (!this.running || this.claiming || this.target.busy() || this.holds.length > 0 || this.target.recording()) return;
      earliestDue(this.deps.db)
        .then((due) => this.wakeups.at(due))
        .catch((error) => this.faults.failed(error, 'claim'));
    }, IDLE_CHECK_MS);
  }

  private claimable(): number {
    return this.holds.length >= HOLDS_PER_WORKER ? 0 : this.target.room();
  }

  private async loop(): Promise<void> {
    while (this.running && this.again) {
      this.again = false;
      const pause = this.faults.claimPause();
      if (pause > 0) {
        // The database failed the last claim: try again after the pause, however often woken.
        this.timers.retry ??= setTimeout(() => {
          this.timers.retry = undefined;
          this.wake();
        }, pause);
        return;
      }
      try {
        while (this.running) {
          const room = this.claimable();
          if (room <= 0 || (room < Math.min(BUSY_CLAIM, this.target.capacity()) && this.target.busy())) {
            this.full = true;
            break;
          }
          const now = this.deps.clock.now();
          const limit = Math.min(room, MAX_CLAIM);
          // The loop's claims start where the last one ended (position.ts).
          const jobs = await this.claimAfter(this.position.current(performance.now()), limit, now);
          this.position.took(jobs, limit, performance.now());
          this.faults.ok('claim');
          await this.target.admit(jobs);
          if (jobs.length < limit) {
            // Everything due was taken: claim again when the next row comes due (the wake-up
            // timer keeps the earliest time it is given).
            this.wakeups.at(await nextDue(this.deps.db, now));
            break;
          }
          // More may be due: let requests and I/O run first.
          await yieldToEventLoop();
        }
      } catch (error) {
        this.faults.failed(error, 'claim');
        this.again = true;
      }
    }
  }
}
