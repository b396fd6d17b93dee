import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { claimRecovery, releaseRecovery, runBatch } from './store.js';

/** Deliveries per batch: each batch is one transaction of about this many inserts. */
export const RECOVERY_BATCH = 500;
/** A runner holds a recovery this long past each batch; a dead process's recovery is taken up after it. */
export const RECOVERY_LEASE_MS = 60_000;
/** Pause between two batches, so that a recovery does not keep a connection from requests. */
export const RECOVERY_PAUSE_MS = 10;
/** How often a started runner looks for recoveries left running by a stopped or dead process. */
export const RECOVERY_POLL_MS = 30_000;

export interface RecoveryRunnerOptions {
  batchSize?: number;
  leaseMs?: number;
  pauseMs?: number;
  pollMs?: number;
}

/**
 * Works through bulk recoveries in the background (store.ts runBatch, one transaction a batch).
 * Every process has one, built with its context: a recovery created here is started by wake() at
 * once, and start() (svc serve, svc worker) also looks every RECOVERY_POLL_MS for recoveries whose
 * runner stopped or died, which a lease keeps from being run by two runners at once. stop() ends
 * the work between two batches and gives the recovery back for another runner to resume.
 */
export class RecoveryRunner {
  /** This runner's name on the recoveries it holds. */
  private readonly owner = randomBytes(8).toString('hex');
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly pauseMs: number;
  private readonly pollMs: number;
  private stopped = false;
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  /** Where a failed pass is reported (the database unreachable): its recovery is taken up again at a later look. */
  private onError: (error: unknown) => void = () => {};

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    options: RecoveryRunnerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? RECOVERY_BATCH;
    this.leaseMs = options.leaseMs ?? RECOVERY_LEASE_MS;
    this.pauseMs = options.pauseMs ?? RECOVERY_PAUSE_MS;
    this.pollMs = options.pollMs ?? RECOVERY_POLL_MS;
  }

  /** Works through every recovery that is free to run, now; a wake-up during a pass makes another pass after it. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error) => this.onError(error))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /**
   * Runs a recovery of at most one batch to its end now, in the request that made it, so that a
   * small recovery is answered completed and leaves no work behind. Anything left (more rows than
   * counted, or the runner stopping) goes to the background. Inside a request's transaction (an
   * Idempotency-Key) its batch is part of that transaction.
   */
  async runInline(id: string): Promise<void> {
    if (this.stopped || !(await claimRecovery(this.db, this.owner, this.clock.now(), this.leaseMs, id))) return;
    const outcome = await runBatch(this.db, id, this.owner, this.clock.now(), this.leaseMs, this.batchSize);
    if (outcome.state !== 'more') return;
    await releaseRecovery(this.db, id, this.owner);
    this.db.afterCommit(() => this.wake());
  }

  /** Whether a recovery of `count` deliveries is small enough for runInline. */
  fitsInline(count: number): boolean {
    return count <= this.batchSize;
  }

  /** Takes up recoveries left running (by this process before a restart, or by another that died) now and every pollMs. */
  start(onError: (error: unknown) => void): void {
    if (this.stopped || this.timer) return;
    this.onError = onError;
    this.timer = setInterval(() => this.wake(), this.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Ends the work between two batches and waits for it; a recovery in progress is left to be resumed. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const id = await claimRecovery(this.db, this.owner, this.clock.now(), this.leaseMs);
      if (!id) return;
      await this.work(id);
    }
  }

  private async work(id: string): Promise<void> {
    while (!this.stopped) {
      const outcome = await runBatch(this.db, id, this.owner, this.clock.now(), this.leaseMs, this.batchSize);
      if (outcome.state !== 'more') return;
      if (this.pauseMs > 0) await sleep(this.pauseMs);
    }
    await releaseRecovery(this.db, id, this.owner);
  }
}
