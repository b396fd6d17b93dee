import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import { DELIVERY_CHANNEL } from '../fanout.js';
import type { LocalWorker } from '../handoff.js';
import { runAttempt, type Outcome } from './attempt.js';
import { claimDue, releaseClaims, type ClaimedDelivery } from './claim.js';
import { recordOutcomes } from './outcome.js';
import { HttpSender, type Sender } from './sender.js';

export interface DeliveryWorkerOptions {
  /** Shared by the workers of a process (one connection pool); a worker without one makes its own. */
  sender?: Sender;
  /** Attempts in flight at once (default SVC_WORKER_CONCURRENCY). */
  concurrency?: number;
  /** Called for unexpected faults (database unreachable, ...); the worker keeps going. */
  onError?: (error: unknown, during: string) => void;
}

/** Outcomes written per statement at most. */
const WRITE_BATCH = 500;

export function createSender(ctx: AppContext): Sender {
  return new HttpSender({ timeoutMs: ctx.config.deliveryTimeoutMs, allowPrivateTargets: ctx.config.allowPrivateTargets });
}

/**
 * Claims due deliveries and sends them, up to `concurrency` at a time. Writes of its own process
 * hand it their new deliveries directly, already claimed (see handoff.ts), while it has room; for
 * everything else it wakes on NOTIFY (sent after commits) and, as a fallback and for retries coming
 * due, every SVC_POLL_INTERVAL.
 * Outcomes are written in batches (whatever finished while the previous write ran), which keeps
 * the database round trips per delivery low under load, and a slot takes the next row as soon as
 * its request is done rather than after the write. stop() lets in-flight attempts finish and
 * writes their outcomes; anything still claimed by a worker that dies comes back after the lease.
 */
export class DeliveryWorker implements LocalWorker {
  private readonly sender: Sender;
  private readonly ownsSender: boolean;
  private readonly concurrency: number;
  private readonly onError: (error: unknown, during: string) => void;
  private readonly inFlight = new Set<Promise<void>>();
  /** Claimed, not yet started (at most one round of `concurrency` beyond the free slots). */
  private ready: ClaimedDelivery[] = [];
  /** Slots set aside for writes of this process that will hand rows over (see handoff.ts). */
  private reserved = 0;
  private reservationsSettled: (() => void) | null = null;
  private queue: Outcome[] = [];
  private readonly writers = new Set<Promise<void>>();
  private writeScheduled = false;
  private writingCount = 0;
  private running = false;
  private wanted = false;
  private pumping: Promise<void> | null = null;
  private saturated = false;
  private unlisten: (() => Promise<void>) | null = null;
  private poll: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: AppContext, options: DeliveryWorkerOptions = {}) {
    this.sender = options.sender ?? createSender(ctx);
    this.ownsSender = options.sender === undefined;
    this.concurrency = options.concurrency ?? ctx.config.workerConcurrency;
    this.onError = options.onError ?? (() => {});
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    // A NOTIFY sent by this process's own notifier comes after the direct wake-up below: skipped.
    const unlisten = await this.ctx.db.listen(DELIVERY_CHANNEL, (origin) => {
      if (origin !== this.ctx.notifier.origin) this.kick();
    });
    // Writes of this very process hand rows over or wake it directly, without the database.
    const unsubscribe = this.ctx.notifier.subscribe(this);
    this.unlisten = async () => {
      unsubscribe();
      await unlisten();
    };
    this.poll = setInterval(() => this.kick(), this.ctx.config.pollIntervalMs);
    this.kick();
  }

  /** Stops claiming, lets the attempts in flight finish and records them. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    await this.unlisten?.().catch((error) => this.onError(error, 'unlisten'));
    this.unlisten = null;
    await this.pumping;
    // Writes that reserved slots here hand their rows over when they return: wait for them.
    if (this.reserved > 0) await new Promise<void>((resolve) => (this.reservationsSettled = resolve));
    const unstarted = this.ready.splice(0);
    await releaseClaims(this.ctx.db, unstarted, this.ctx.clock.now()).catch((error) => this.onError(error, 'release'));
    await Promise.allSettled([...this.inFlight]);
    await this.drainWrites();
    if (this.ownsSender) await this.sender.close();
  }

  /**
   * Processes everything due at the clock's current time, batch after batch, and returns how many
   * rows it handled. For tests and one-shot runs: deterministic with a ManualClock, no timers.
   * stop() releases the worker's connections afterwards (it needs no start()).
   */
  async runDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await claimDue(this.ctx.db, this.ctx.clock.now(), this.ctx.config.leaseMs, this.concurrency);
      if (rows.length === 0) return total;
      total += rows.length;
      const outcomes = await Promise.all(rows.map((row) => runAttempt(this.ctx, this.sender, row)));
      await recordOutcomes(this.ctx, outcomes);
      await yieldToEventLoop();
    }
  }

  wake(): void {
    this.kick();
  }

  reserve(max: number): number {
    if (!this.running) return 0;
    const slots = Math.min(max, this.claimable());
    if (slots <= 0) return 0;
    this.reserved += slots;
    return slots;
  }

  /** Rows adopted after stop() began are handed back by stop(), with those claimed ahead. */
  adopt(rows: ClaimedDelivery[], reserved: number): void {
    this.reserved -= reserved;
    this.ready.push(...rows);
    this.startReady();
    this.maybeClaimMore();
    if (this.reserved === 0 && this.reservationsSettled) {
      this.reservationsSettled();
      this.reservationsSettled = null;
    }
  }

  /** Asks for a claim round; rounds never overlap, and a request made during one starts another. */
  private kick(): void {
    if (!this.running) return;
    this.wanted = true;
    if (!this.pumping) this.pumping = this.pump().finally(() => (this.pumping = null));
  }

  private async pump(): Promise<void> {
    while (this.running && this.wanted) {
      this.wanted = false;
      try {
        while (this.running) {
          const wanted = this.claimable();
          if (wanted <= 0) {
            this.saturated = true;
            break;
          }
          const rows = await claimDue(this.ctx.db, this.ctx.clock.now(), this.ctx.config.leaseMs, wanted);
          this.ready.push(...rows);
          this.startReady();
          if (rows.length < wanted) break;
          // More may be due. On PGlite the database shares this thread: let requests and I/O run.
          await yieldToEventLoop();
        }
      } catch (error) {
        this.onError(error, 'claim');
      }
    }
  }

  private launch(row: ClaimedDelivery): void {
    const task: Promise<void> = runAttempt(this.ctx, this.sender, row)
      .then((outcome) => {
        this.queue.push(outcome);
        this.write();
      })
      .catch((error) => this.onError(error, 'attempt'))
      .finally(() => {
        this.inFlight.delete(task);
        this.startReady();
        this.maybeClaimMore();
      });
    this.inFlight.add(task);
  }

  /** Fills free slots from the rows already claimed. */
  private startReady(): void {
    while (this.running && this.inFlight.size < this.concurrency && this.ready.length > 0) this.launch(this.ready.shift()!);
  }

  /**
   * How many rows to claim now: enough for every free slot plus one round ahead, so a slot whose
   * request ends starts its next row at once instead of waiting for a claim's round trip. A slot is
   * free as soon as its request is done; the row stays claimed (leased) until its outcome is
   * written. Slots reserved for hand-offs count as taken. Claiming waits while writes lag behind by
   * more than two full rounds.
   */
  private claimable(): number {
    if (this.queue.length + this.writingCount > 2 * this.concurrency) return 0;
    return 2 * this.concurrency - this.inFlight.size - this.ready.length - this.reserved;
  }

  /** A worker that stopped claiming claims again once a quarter of a round can be taken. */
  private maybeClaimMore(): void {
    if (this.saturated && this.claimable() >= Math.max(1, this.concurrency >> 2)) {
      this.saturated = false;
      this.kick();
    }
  }

  /**
   * Writes queued outcomes, each batch being whatever finished while earlier writes ran. On
   * PostgreSQL two batches may be written at once (they touch different rows); PGlite has one
   * connection, so one.
   */
  private write(): void {
    // Start on the next turn of the event loop, so every response that arrived in this one joins
    // the batch (on PGlite, a query runs on this thread and nothing else arrives meanwhile).
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      this.startWriters();
    });
  }

  private startWriters(): void {
    const maxWriters = this.ctx.db.engine === 'pglite' ? 1 : 2;
    while (this.writers.size < maxWriters && this.queue.length > 0) {
      const batch = this.queue.splice(0, WRITE_BATCH);
      this.writingCount += batch.length;
      const writer: Promise<void> = recordOutcomes(this.ctx, batch)
        // The rows stay claimed until their lease runs out, then they are attempted again.
        .catch((error) => this.onError(error, 'record'))
        .finally(() => {
          this.writers.delete(writer);
          this.writingCount -= batch.length;
          this.write();
          this.maybeClaimMore();
        });
      this.writers.add(writer);
    }
  }

  private async drainWrites(): Promise<void> {
    while (this.writers.size > 0 || this.queue.length > 0) {
      this.startWriters();
      await Promise.allSettled([...this.writers]);
    }
  }
}

/** The workers of one process (`svc serve`, `svc worker`), sharing one sender. */
export async function startWorkers(
  ctx: AppContext,
  count: number,
  onError: DeliveryWorkerOptions['onError'],
): Promise<{ stop(): Promise<void> }> {
  const sender = createSender(ctx);
  const workers = Array.from({ length: count }, () => new DeliveryWorker(ctx, { sender, onError }));
  await Promise.all(workers.map((w) => w.start()));
  return {
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await sender.close();
    },
  };
}
