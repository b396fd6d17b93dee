import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import { DELIVERY_CHANNEL } from '../fanout.js';
import type { LocalWorker } from '../handoff.js';
import { runAttempt, type Outcome } from './attempt.js';
import { claimDue, claimHeld, releaseClaims, type ClaimedDelivery } from './claim.js';
import { HELD_CLAIMS_PER_WORKER, HeldClaim } from './held-claim.js';
import { recordOutcomes } from './outcome.js';
import { HttpSender, type Sender } from './sender.js';

export interface DeliveryWorkerOptions {
  /** Shared by the workers of a process (one connection pool); a worker without one makes its own. */
  sender?: Sender;
  /** Attempts in flight at once (default SVC_WORKER_CONCURRENCY). */
  concurrency?: number;
  /** Called for unexpected faults (database unreachable, ...); the worker keeps going. */
  onError?: (error: unknown, during: string) => void;
  /**
   * How rows are taken: under row locks of an open transaction (`held`, held-claim.ts; the default
   * on PostgreSQL), or by writing a lease on them (`lease`, claim.ts; the only way on PGlite).
   */
  claims?: 'held' | 'lease';
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
  private readonly holdsClaims: boolean;
  /** Claims whose transactions are open (held-claim.ts). */
  private readonly held = new Set<HeldClaim>();
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
    this.holdsClaims = ctx.db.begin !== undefined && (options.claims ?? 'held') === 'held';
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
    for (const row of unstarted) row.held?.drop(row);
    await releaseClaims(this.ctx.db, unstarted, this.ctx.clock.now()).catch((error) => this.onError(error, 'release'));
    await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled([...this.held].map((claim) => claim.end()));
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
      const rows = await this.claim(this.concurrency);
      if (rows.length === 0) return total;
      total += rows.length;
      await Promise.all(rows.map(async (row) => this.settle(row, await runAttempt(this.ctx, this.sender, row))));
      await Promise.all([...this.held].map((claim) => claim.end()));
      await recordOutcomes(this.ctx, this.queue.splice(0));
      await yieldToEventLoop();
    }
  }

  wake(): void {
    this.kick();
  }

  reserve(max: number): number {
    if (!this.running || this.writesLag()) return 0;
    const slots = Math.min(max, this.room(1));
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
          if (wanted <= 0 || (wanted < this.smallestClaim() && this.busy())) {
            this.saturated = true;
            break;
          }
          const rows = await this.claim(wanted);
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

  /** Takes up to `limit` due rows, under row locks or by lease. */
  private async claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.ctx.clock.now();
    if (!this.holdsClaims || !this.ctx.db.begin) return claimDue(this.ctx.db, now, this.ctx.config.leaseMs, limit);
    const claim = new HeldClaim(await this.ctx.db.begin(HeldClaim.SETTINGS), this.ctx, {
      unstarted: (ending) => {
        const rows = this.ready.filter((row) => row.held === ending);
        if (rows.length > 0) this.ready = this.ready.filter((row) => row.held !== ending);
        return rows;
      },
      ended: (ended, leased, freed) => {
        this.held.delete(ended);
        this.queue.push(...leased);
        this.write();
        // Rows the claim gave back are due now: take them again rather than at the next poll.
        if (freed > 0) this.kick();
        else this.maybeClaimMore();
      },
      onError: this.onError,
    });
    let rows: ClaimedDelivery[];
    try {
      rows = await claimHeld(claim, now, limit);
    } catch (error) {
      await claim.tx.rollback().catch(() => {});
      throw error;
    }
    if (rows.length === 0) {
      await claim.tx.rollback();
      return rows;
    }
    this.held.add(claim);
    claim.took(rows);
    return rows;
  }

  /**
   * An attempt's outcome: written by the claim that holds its row, or queued for a write as a leased
   * row, with the lease the row has now (a held claim that ended while the attempt ran leased it).
   */
  private settle(row: ClaimedDelivery, outcome: Outcome): void {
    if (row.held) return row.held.finish(row, outcome);
    outcome.lease = row.lease;
    this.queue.push(outcome);
    this.write();
  }

  private launch(row: ClaimedDelivery): void {
    const task: Promise<void> = runAttempt(this.ctx, this.sender, row)
      .then((outcome) => this.settle(row, outcome))
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
   * How many rows to claim now: enough for every free slot plus rows waiting ahead, so a slot whose
   * request ends starts its next row at once instead of waiting for a claim's round trip. A slot is
   * free as soon as its request is done; the row stays claimed until its outcome is written. Slots
   * reserved for hand-offs count as taken. Claiming waits while writes lag behind by more than two
   * full rounds, and while HELD_CLAIMS_PER_WORKER claims are open.
   */
  private claimable(): number {
    if (this.writesLag()) return 0;
    if (this.held.size >= HELD_CLAIMS_PER_WORKER) return 0;
    return this.room(this.holdsClaims ? 2 : 1);
  }

  /**
   * Free slots plus `roundsAhead` rounds of rows waiting for one. A leased row may wait at most
   * one round, since its lease covers one attempt waited for and one made (SVC_LEASE is more than
   * twice SVC_DELIVERY_TIMEOUT). Held rows may wait two, which keeps the slots full while a claim's
   * round trip waits behind a busy event loop: their claim ends after HOLD_MS at most, and frees the
   * rows it has not started rather than leasing them.
   */
  private room(roundsAhead: number): number {
    return (1 + roundsAhead) * this.concurrency - this.inFlight.size - this.ready.length - this.reserved;
  }

  private writesLag(): boolean {
    return this.queue.length + this.writingCount > 2 * this.concurrency;
  }

  /** Whether rows are in flight or waiting to start. */
  private busy(): boolean {
    return this.inFlight.size + this.ready.length > 0;
  }

  /**
   * The fewest rows a busy worker claims at once. A held claim is a transaction, and a transaction
   * costs PostgreSQL about 400 µs beyond its rows (BEGIN, the claim, the outcome write, the commit's
   * WAL flush): claimed and written without HTTP, a row took 47.8 µs of PostgreSQL's CPU in claims
   * of 16, 34.0 in claims of 32, 29.0 in claims of 64 and 27.2 in claims of 128. Claiming whatever
   * room a finished request left gave claims of 1 to 192 rows, about 70 on average; held rows wait
   * up to two rounds ahead, so a busy worker takes a full round or nothing. A claim by lease, whose
   * rows wait one round at most, takes a quarter of a round, so that the slots do not run dry while
   * it is on its way.
   */
  private smallestClaim(): number {
    return this.holdsClaims ? this.concurrency : Math.max(1, this.concurrency >> 2);
  }

  /** A worker that stopped claiming claims again once its smallest claim can be taken. */
  private maybeClaimMore(): void {
    if (this.saturated && this.claimable() >= this.smallestClaim()) {
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
    // runDue() and stop() write what is queued themselves.
    if (!this.running) return;
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
