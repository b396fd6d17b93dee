import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import { removeItem } from '../../lib/churn.js';
import { deferred, runAttempt, type AttemptDeps, type Outcome } from './attempt.js';
import { claimByLease, claimLocked, earliestDue, nextDue, releaseLeases } from './claim.js';
import { ClaimPosition } from './claim-position.js';
import { Dispatcher } from './dispatch.js';
import { Faults } from './faults.js';
import { HELD_CLAIMS_PER_WORKER, HeldClaim } from './held-claim.js';
import type { Job } from './job.js';
import { SendTimes } from './rate.js';
import { OutcomeRecorder } from './recorder.js';
import { HttpSender, type Sender } from './sender.js';
import { Wakeups, type LocalWorker } from './wakeups.js';

export interface DeliveryWorkerOptions {
  /** Shared by the workers of a process (one connection pool); a worker without one makes its own. */
  sender?: Sender;
  /** Attempts starting or answering quickly at once (default SVC_WORKER_CONCURRENCY). */
  concurrency?: number;
  /** Called for the first unexpected fault of a streak (database unreachable, ...); the worker keeps going. */
  onError?: (error: unknown, during: string) => void;
  /** Called when what failed works again, with how many failures the streak had. */
  onRecover?: (during: string, failures: number) => void;
  /**
   * How rows are taken: under row locks of an open transaction (`held`, held-claim.ts; the
   * default), or by writing a lease on them (`lease`, claim.ts).
   */
  claims?: 'held' | 'lease';
}

/** An attempt still running after this long is slow: it gives its slot up (dispatch.ts). */
export const SLOW_AFTER_MS = 100;

/** Sockets a worker keeps open at most, per slot: slow attempts wait on theirs beyond the slots. */
export const SOCKETS_PER_SLOT = 8;

/** A worker that has gone idle looks for rows left due after this long (see checkWhenIdle). */
const IDLE_CHECK_MS = 50;

/** A taken row is attempted only while its lease outlasts the attempt by this much at least. */
const LEASE_MARGIN_MS = 1_000;

export function createSender(ctx: AppContext): Sender {
  return new HttpSender({ timeoutMs: ctx.config.deliveryTimeoutMs, allowPrivateTargets: ctx.config.allowPrivateTargets });
}

/**
 * A delivery worker, stage by stage:
 *
 * 1. wake (wakeups.ts): a write of this process hands its new deliveries over directly, already
 *    taken (../handoff.ts); a NOTIFY, the next due time or the poll asks for a claim;
 * 2. claim (claim.ts, held-claim.ts): due rows become jobs (job.ts), taken under row locks of an
 *    open transaction or by a lease, as many as there is room for;
 * 3. admit (rate.ts, lanes.ts): a rate-limited endpoint's jobs get their send times; each job
 *    passes its endpoint's lane, which starts it, keeps it a moment, or puts it off until later;
 * 4. dispatch (dispatch.ts): admitted jobs wait for a slot, first come first served;
 * 5. attempt (attempt.ts, sender.ts): sign, POST, and build the outcome;
 * 6. record (held-claim.ts, recorder.ts, outcome.ts): a held job's outcome is written by its claim's
 *    transaction; any other in batches, guarded by the mark the row was taken with.
 *
 * stop() stops claiming, lets the attempts in flight finish and writes their outcomes; anything
 * still taken by a worker that dies comes back after its lease (or at once, for held rows).
 */
export class DeliveryWorker implements LocalWorker {
  private readonly sender: Sender;
  private readonly ownsSender: boolean;
  private readonly concurrency: number;
  private readonly holdsClaims: boolean;
  private readonly faults: Faults;
  private readonly dispatch: Dispatcher;
  private readonly recorder: OutcomeRecorder;
  private readonly wakeups: Wakeups;
  private readonly sendTimes: SendTimes;
  private readonly attemptDeps: AttemptDeps;
  /** Claims whose transactions are open (held-claim.ts). An array, as the offers below (lib/churn.ts). */
  private readonly held: HeldClaim[] = [];
  /** Where the next held claim starts (claim-position.ts). */
  private readonly position = new ClaimPosition();
  /** Slots set aside for writes of this process that will hand rows over (see handoff.ts). */
  private reserved = 0;
  private reservationsSettled: (() => void) | null = null;
  private running = false;
  private wanted = false;
  private pumping: Promise<void> | null = null;
  private saturated = false;
  private resume: NodeJS.Timeout | null = null;
  /** Offers still getting their send times (rate.ts). */
  private readonly offering: Promise<void>[] = [];
  private idleCheck: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: AppContext, options: DeliveryWorkerOptions = {}) {
    this.sender = options.sender ?? createSender(ctx);
    this.ownsSender = options.sender === undefined;
    this.concurrency = options.concurrency ?? ctx.config.workerConcurrency;
    this.holdsClaims = (options.claims ?? 'held') === 'held';
    this.faults = new Faults(options.onError ?? (() => {}), options.onRecover ?? (() => {}));
    this.attemptDeps = { clock: ctx.clock, secrets: ctx.secrets, sender: this.sender, config: ctx.config, metrics: ctx.metrics };
    this.sendTimes = new SendTimes(ctx.db);
    this.dispatch = new Dispatcher(
      { concurrency: this.concurrency, maxInFlight: this.concurrency * SOCKETS_PER_SLOT, slowAfterMs: SLOW_AFTER_MS },
      ctx.clock,
      {
        attempt: (job) => runAttempt(this.attemptDeps, job),
        settle: (job, outcome) => this.settle(job, outcome),
        defer: (job, until) => this.settle(job, deferred(job, until, ctx.clock.now())),
        freed: () => {
          this.maybeClaimMore();
          this.checkWhenIdle();
        },
      },
    );
    this.recorder = new OutcomeRecorder(ctx, {
      writers: 2,
      retryForMs: ctx.config.leaseMs,
      onError: (error, during) => this.faults.failed(error, during),
      written: (due) => {
        this.faults.ok('record');
        this.wakeups.at(due);
        this.maybeClaimMore();
        this.checkWhenIdle();
      },
      gaveUp: () => this.maybeClaimMore(),
    });
    this.wakeups = new Wakeups({ db: ctx.db, clock: ctx.clock, notifier: ctx.notifier, pollIntervalMs: ctx.config.pollIntervalMs }, () => this.kick());
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.dispatch.resume();
    await this.wakeups.start(this);
    this.kick();
  }

  /** Stops claiming, lets the attempts in flight finish and records them. */
  async stop(): Promise<void> {
    this.running = false;
    this.dispatch.pause();
    if (this.resume) clearTimeout(this.resume);
    if (this.idleCheck) clearTimeout(this.idleCheck);
    await this.wakeups.stop().catch((error) => this.faults.failed(error, 'unlisten'));
    await this.pumping;
    // Writes that reserved slots here hand their rows over when they return: wait for them.
    if (this.reserved > 0) await new Promise<void>((resolve) => (this.reservationsSettled = resolve));
    await Promise.allSettled(this.offering);
    const unstarted = this.dispatch.takeBack(() => true);
    for (const job of unstarted) job.held?.drop(job);
    const leased = unstarted.filter((job) => !job.held);
    await releaseLeases(this.ctx.db, leased, this.ctx.clock.now()).catch((error) => this.faults.failed(error, 'release'));
    await this.dispatch.close();
    await Promise.allSettled(this.held.map((claim) => claim.end()));
    await this.recorder.flush(true);
    if (this.ownsSender) await this.sender.close();
  }

  /**
   * Processes everything due at the clock's current time, batch after batch, and returns how many
   * rows it handled. For tests and one-shot runs: deterministic with a ManualClock, no timers; jobs
   * over their endpoint's share wait for it rather than being put off. stop() releases the worker's
   * connections afterwards (it needs no start()).
   */
  async runDue(): Promise<number> {
    this.dispatch.lanes.putOff = false;
    this.dispatch.resume();
    let total = 0;
    for (;;) {
      const jobs = await this.claim(this.concurrency);
      if (jobs.length === 0) return total;
      total += jobs.length;
      await this.offer(jobs);
      await this.dispatch.idle();
      await Promise.all(this.held.map((claim) => claim.end()));
      await this.recorder.flush();
      await yieldToEventLoop();
    }
  }

  wake(): void {
    this.kick();
  }

  reserve(max: number): number {
    if (!this.running || this.writesLag()) return 0;
    const slots = Math.min(max, this.dispatch.room(1) - this.reserved);
    if (slots <= 0) return 0;
    this.reserved += slots;
    return slots;
  }

  /** Jobs adopted after stop() began are handed back by stop(), with those claimed ahead. */
  adopt(jobs: Job[], reserved: number): void {
    this.reserved -= reserved;
    const offering: Promise<void> = this.offer(jobs).finally(() => {
      removeItem(this.offering, offering);
      this.maybeClaimMore();
    });
    this.offering.push(offering);
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
      const pause = this.faults.claimPause();
      if (pause > 0) {
        // The database failed the last claim: try again after the pause, however often woken.
        this.resume ??= setTimeout(() => {
          this.resume = null;
          this.kick();
        }, pause);
        return;
      }
      try {
        while (this.running) {
          const wanted = this.claimable();
          if (wanted <= 0 || (wanted < this.smallestClaim() && this.dispatch.busy())) {
            this.saturated = true;
            break;
          }
          const now = this.ctx.clock.now();
          const jobs = await this.claim(wanted, now);
          this.faults.ok('claim');
          await this.offer(jobs);
          if (jobs.length < wanted) {
            // Everything due was taken: claim again when the next row comes due. The wake-up timer
            // keeps only the earliest time it is given, so the time after it is looked up here,
            // by every claim that ran out of due rows, not only by one that found none.
            this.wakeups.at(await nextDue(this.ctx.db, now));
            break;
          }
          // More may be due: let requests and I/O run first.
          await yieldToEventLoop();
        }
      } catch (error) {
        this.faults.failed(error, 'claim');
        this.wanted = true;
      }
    }
  }

  /** Takes up to `limit` due rows, under row locks or by lease. */
  private async claim(limit: number, now = this.ctx.clock.now()): Promise<Job[]> {
    if (!this.holdsClaims) return claimByLease(this.ctx.db, now, this.ctx.config.leaseMs, limit);
    const claim = new HeldClaim(await this.ctx.db.begin(HeldClaim.SETTINGS), { db: this.ctx.db, clock: this.ctx.clock, leaseMs: this.ctx.config.leaseMs }, {
      unstarted: (ending) => this.dispatch.takeBack((job) => job.held === ending),
      ended: (ended, after, freed, nextDue) => {
        removeItem(this.held, ended);
        this.recorder.add(after);
        this.wakeups.at(nextDue);
        // Rows the claim gave back are due now, before the claim position: take them again rather
        // than at the next poll.
        if (freed > 0) {
          this.position.forget();
          this.kick();
        } else this.maybeClaimMore();
        this.checkWhenIdle();
      },
      onError: (error, during) => this.faults.failed(error, during),
    });
    let jobs: Job[];
    try {
      jobs = await claimLocked(claim.tx, claim, now, limit, this.position.current(performance.now()));
    } catch (error) {
      this.position.forget();
      await claim.tx.rollback().catch(() => {});
      throw error;
    }
    this.position.took(jobs, limit, performance.now());
    if (jobs.length === 0) {
      await claim.tx.rollback();
      return jobs;
    }
    this.held.push(claim);
    claim.took(jobs);
    return jobs;
  }

  /** Admits taken jobs: send times for rate-limited endpoints, then each to the dispatcher. */
  private async offer(jobs: Job[]): Promise<void> {
    if (jobs.length === 0) return;
    const now = this.ctx.clock.now();
    if (jobs.some((job) => job.rateLimit !== null)) {
      await this.sendTimes.assign(jobs, now).catch((error) => {
        this.faults.failed(error, 'rate');
        // Without a send time, a rate-limited job waits a second rather than risk going over.
        for (const job of jobs) if (job.rateLimit !== null) job.notBefore = new Date(now.getTime() + 1000);
      });
    }
    for (const job of jobs) {
      // A leased row must not be attempted when its lease could run out during the attempt.
      if (!job.held && job.mark.getTime() - now.getTime() < this.ctx.config.deliveryTimeoutMs + LEASE_MARGIN_MS) {
        this.settle(job, deferred(job, now, now));
        continue;
      }
      this.dispatch.offer(job);
    }
  }

  /** A job's outcome: written by the claim that holds its row, or by the recorder under the row's mark. */
  private settle(job: Job, outcome: Outcome): void {
    outcome.mark = job.mark;
    if (job.held) return job.held.finish(job, outcome);
    this.recorder.add([outcome]);
  }

  /**
   * How many rows to claim now: room for every free slot plus rows waiting ahead, so a slot whose
   * request ends starts its next row at once instead of waiting for a claim's round trip. Slots
   * reserved for hand-offs count as taken. Claiming waits while writes lag behind by more than two
   * full rounds, and while HELD_CLAIMS_PER_WORKER claims are open. Held rows may wait two rounds
   * ahead: their claim ends after HOLD_MS at most and frees the rows not started; a leased row one,
   * since its lease covers one attempt waited for and one made.
   */
  private claimable(): number {
    if (this.writesLag()) return 0;
    if (this.held.length >= HELD_CLAIMS_PER_WORKER) return 0;
    return this.dispatch.room(this.holdsClaims ? 2 : 1) - this.reserved;
  }

  private writesLag(): boolean {
    return this.recorder.lag() > 2 * this.concurrency;
  }

  /**
   * The fewest rows a busy worker claims at once. A held claim is a transaction, and a transaction
   * costs PostgreSQL about 400 µs beyond its rows (BEGIN, the claim, the outcome write, the commit's
   * WAL flush): claimed and written without HTTP, a row took 47.8 µs of PostgreSQL's CPU in claims
   * of 16, 34.0 in claims of 32, 29.0 in claims of 64 and 27.2 in claims of 128. Held rows wait up
   * to two rounds ahead, so a busy worker takes a full round or nothing. A claim by lease, whose
   * rows wait one round at most, takes a quarter of a round, so that the slots do not run dry while
   * it is on its way.
   */
  private smallestClaim(): number {
    return this.holdsClaims ? this.concurrency : Math.max(1, this.concurrency >> 2);
  }

  /**
   * A worker with nothing in flight, waiting or being written asks when the earliest pending row is
   * due, and claims then (at once if it is due already). Claims end on their own terms (a claim
   * that took fewer rows than it asked, a worker saturated while rows came due), and a row left due
   * that way would otherwise wait for the poll. One read of the due-rows index per idle spell.
   */
  private checkWhenIdle(): void {
    if (this.idleCheck || !this.running) return;
    this.idleCheck = setTimeout(() => {
      this.idleCheck = null;
      if (!this.running || this.pumping || this.dispatch.busy() || this.held.length > 0 || this.recorder.lag() > 0) return;
      earliestDue(this.ctx.db)
        .then((due) => this.wakeups.at(due))
        .catch((error) => this.faults.failed(error, 'claim'));
    }, IDLE_CHECK_MS);
  }

  /** A worker that stopped claiming claims again once its smallest claim can be taken. */
  private maybeClaimMore(): void {
    if (this.saturated && this.claimable() >= this.smallestClaim()) {
      this.saturated = false;
      this.kick();
    }
  }
}

/** The workers of one process (`svc serve`, `svc worker`), sharing one sender. */
export async function startWorkers(
  ctx: AppContext,
  count: number,
  log: Pick<DeliveryWorkerOptions, 'onError' | 'onRecover'>,
): Promise<{ stop(): Promise<void> }> {
  const sender = createSender(ctx);
  const workers = Array.from({ length: count }, () => new DeliveryWorker(ctx, { sender, ...log }));
  await Promise.all(workers.map((w) => w.start()));
  return {
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await sender.close();
    },
  };
}
