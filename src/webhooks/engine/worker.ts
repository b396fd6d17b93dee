import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Config } from '../../config.js';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import type { Metrics } from '../../ops/metrics.js';
import type { PushQueue } from '../../notifications/push/queue.js';
import { runAttempt, type AttemptDeps } from './attempt.js';
import { ADJUST_MS, Capacity, processLoad, type Load } from './capacity.js';
import { claimLocked, earliestDue, nextDue, releaseLeases } from './claim.js';
import { Dispatcher } from './dispatch.js';
import { Faults } from './faults.js';
import type { LocalWorker, WorkerLink } from './handoff.js';
import { HOLDS_PER_WORKER, Hold } from './hold.js';
import type { Job, Outcome } from './job.js';
import { Lanes, MAX_SHARE } from './lanes.js';
import { SendTimes } from './rate.js';
import { OutcomeRecorder } from './recorder.js';
import { HttpSender, type Sender } from './sender.js';
import { Throttles } from './throttles.js';
import { Wakeups } from './wakeups.js';

/** What a worker needs of the process (an AppContext has it all). */
export interface WorkerDeps {
  db: Db;
  clock: Clock;
  secrets: SecretBox;
  link: WorkerLink;
  metrics: Pick<Metrics, 'attemptStarted' | 'attemptFinished' | 'autoDisabled'>;
  push?: Pick<PushQueue, 'kick'>;
  config: Pick<Config, 'retryScheduleMs' | 'leaseMs' | 'deliveryTimeoutMs' | 'pollIntervalMs' | 'workerConcurrency' | 'allowPrivateTargets'>;
}

export interface DeliveryWorkerOptions {
  /** Shared by the workers of a process (one connection pool); a worker without one makes its own. */
  sender?: Sender;
  /** The most attempts in flight (default SVC_WORKER_CONCURRENCY); the capacity adapts below it. */
  concurrency?: number;
  /** The process's load as the capacity reads it (tests give their own; default: this process's). */
  load?: () => Load;
  /** Called for the first unexpected fault of a streak (database unreachable, ...); the worker keeps going. */
  onError?: (error: unknown, during: string) => void;
  /** Called when what failed works again, with how many failures the streak had. */
  onRecover?: (during: string, failures: number) => void;
}

/** The least capacity a worker keeps, however loaded the process. */
const MIN_CAPACITY = 16;
/** Rows one claim takes at most, and the fewest a busy worker claims (a transaction's cost is spread over its rows). */
const MAX_CLAIM = 256;
const BUSY_CLAIM = 64;
/** A worker that has gone idle looks for rows left due after this long (see checkWhenIdle). */
const IDLE_CHECK_MS = 50;
/** A handed-over row is attempted only while its lease outlasts the attempt by this much at least. */
const LEASE_MARGIN_MS = 1_000;

export function createSender(config: WorkerDeps['config']): Sender {
  return new HttpSender({ timeoutMs: config.deliveryTimeoutMs, allowPrivateTargets: config.allowPrivateTargets });
}

/**
 * A delivery worker: one delivery goes, stage by stage, through
 *
 * 1. wake (wakeups.ts, handoff.ts): a NOTIFY, the next due time or the poll asks for a claim; a
 *    write of this process may instead hand its new rows over, already leased;
 * 2. claim (claim.ts, hold.ts): due rows become jobs, taken under the row locks of a hold;
 * 3. admit (rate.ts, lanes.ts, dispatch.ts): a rate-limited endpoint's job may have to wait for its
 *    turn; each job passes its endpoint's lane, then waits for room in the capacity (capacity.ts);
 * 4. attempt (attempt.ts, sender.ts): sign, POST, and build the outcome;
 * 5. record (hold.ts, recorder.ts, outcome.ts): a held job's outcome is written by its hold's
 *    transaction; any other in batches, guarded by the row's mark.
 *
 * stop() stops claiming, lets the attempts in flight finish and writes their outcomes; anything
 * still taken by a worker that dies comes back at once (held rows) or after its lease.
 */
export class DeliveryWorker implements LocalWorker {
  private readonly capacity: Capacity;
  private readonly dispatch: Dispatcher;
  private readonly recorder: OutcomeRecorder;
  private readonly wakeups: Wakeups;
  private readonly rates: SendTimes;
  private readonly faults: Faults;
  private readonly throttles: Throttles;
  private readonly sender: Sender;
  private readonly ownsSender: boolean;
  private readonly load: { read(): Load; stop(): void };
  /** Holds whose transactions are open. */
  private readonly holds: Hold[] = [];
  /** Room set aside for writes of this process that will hand rows over, and who waits for them at stop. */
  private reserved = 0;
  private whenReceived: (() => void) | null = null;
  /** Handed-over jobs still getting their send times. */
  private readonly receiving = new Set<Promise<void>>();
  private running = false;
  /** The claim loop in progress, and whether it is asked to go round once more. */
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The loop stopped for want of room, not of rows: room coming free starts it again. */
  private full = false;
  private readonly timers: { retry?: NodeJS.Timeout; idle?: NodeJS.Timeout; adjust?: NodeJS.Timeout } = {};

  constructor(
    private readonly deps: WorkerDeps,
    options: DeliveryWorkerOptions = {},
  ) {
    const { db, clock, config } = deps;
    this.sender = options.sender ?? createSender(config);
    this.ownsSender = options.sender === undefined;
    this.load = options.load ? { read: options.load, stop: () => {} } : processLoad();
    this.capacity = new Capacity({ min: MIN_CAPACITY, max: options.concurrency ?? config.workerConcurrency }, () => this.load.read());
    this.faults = new Faults(options.onError ?? (() => {}), options.onRecover ?? (() => {}));
    this.throttles = new Throttles(db, (error) => this.faults.failed(error, 'throttle'));
    const lanes = new Lanes({ maxShare: () => Math.min(MAX_SHARE, this.capacity.limit), throttled: (id, throttle) => this.throttles.set(id, throttle) });
    const attemptDeps: AttemptDeps = { clock, secrets: deps.secrets, sender: this.sender, config, metrics: deps.metrics };
    this.dispatch = new Dispatcher(this.capacity, lanes, clock, {
      attempt: (job) => runAttempt(attemptDeps, job),
      finish: (job, outcome) => this.finish(job, outcome),
      freed: () => {
        this.claimIfRoom();
        this.checkWhenIdle();
      },
    });
    this.rates = new SendTimes(db);
    this.recorder = new OutcomeRecorder(deps, {
      writers: 2,
      retryForMs: config.leaseMs,
      onError: (error, during) => this.faults.failed(error, during),
      written: (due) => {
        this.faults.ok('record');
        this.wakeups.at(due);
        this.claimIfRoom();
        this.checkWhenIdle();
      },
      gaveUp: () => this.claimIfRoom(),
    });
    this.wakeups = new Wakeups({ db, clock, link: deps.link, pollIntervalMs: config.pollIntervalMs }, () => this.wake());
  }

  /** The attempts this worker may have in flight now (capacity.ts). */
  get limit(): number {
    return this.capacity.limit;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.dispatch.resume();
    this.timers.adjust = setInterval(() => {
      this.dispatch.sweep();
      this.capacity.adjust(this.dispatch.heldBack());
    }, ADJUST_MS);
    this.timers.adjust.unref();
    await this.wakeups.start(this);
    this.wake();
  }

  /** Stops claiming, lets the attempts in flight finish and records them. */
  async stop(): Promise<void> {
    this.running = false;
    this.dispatch.pause();
    for (const timer of Object.values(this.timers)) clearTimeout(timer);
    await this.wakeups.stop().catch((error) => this.faults.failed(error, 'unlisten'));
    await this.claiming;
    // Writes that reserved room here hand their rows over when they return: wait for them.
    if (this.reserved > 0) await new Promise<void>((resolve) => (this.whenReceived = resolve));
    await Promise.allSettled(this.receiving);
    const unstarted = this.dispatch.takeBack(() => true);
    for (const job of unstarted) job.lock?.drop(job);
    await releaseLeases(this.deps.db, unstarted.filter((job) => !job.lock), this.deps.clock.now()).catch((error) => this.faults.failed(error, 'release'));
    await this.dispatch.idle();
    await Promise.allSettled(this.holds.map((hold) => hold.end()));
    await this.recorder.flush(true);
    await this.throttles.flush();
    this.load.stop();
    if (this.ownsSender) await this.sender.close();
  }

  /**
   * Delivers everything due at the clock's current time, claim after claim, and returns how many
   * rows it took. For tests and one-shot runs: deterministic with a ManualClock, no timers; a job
   * over its endpoint's share waits for it rather than being deferred. stop() releases the worker's
   * connections afterwards (it needs no start()).
   */
  async runDue(): Promise<number> {
    this.dispatch.lanes.defer = false;
    this.dispatch.resume();
    let total = 0;
    for (;;) {
      const jobs = await this.claim(this.capacity.limit);
      if (jobs.length === 0) return total;
      total += jobs.length;
      await this.admit(jobs);
      await this.dispatch.idle();
      await Promise.all(this.holds.map((hold) => hold.end()));
      await this.recorder.flush();
      await yieldToEventLoop();
    }
  }

  /** Asks for a claim; claims never overlap, and one asked for during another follows it. */
  wake(): void {
    if (!this.running) return;
    this.again = true;
    this.claiming ??= this.claimLoop().finally(() => (this.claiming = null));
  }

  reserve(max: number): number {
    if (!this.running || this.recordingLags()) return 0;
    // A handed row may wait one round: its lease covers one attempt waited for and one made.
    const room = Math.min(max, this.dispatch.room(1) - this.reserved);
    if (room <= 0) return 0;
    this.reserved += room;
    return room;
  }

  receive(jobs: Job[], reserved: number): void {
    this.reserved -= reserved;
    const admitting: Promise<void> = this.admit(jobs).finally(() => {
      this.receiving.delete(admitting);
      this.claimIfRoom();
    });
    this.receiving.add(admitting);
    if (this.reserved === 0 && this.whenReceived) {
      this.whenReceived();
      this.whenReceived = null;
    }
  }

  private async claimLoop(): Promise<void> {
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
          if (room <= 0 || (room < Math.min(BUSY_CLAIM, this.capacity.limit) && this.dispatch.busy())) {
            this.full = true;
            break;
          }
          const now = this.deps.clock.now();
          const limit = Math.min(room, MAX_CLAIM);
          const jobs = await this.claim(limit, now);
          this.faults.ok('claim');
          await this.admit(jobs);
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

  /** Takes up to `limit` due rows under a new hold's row locks. */
  private async claim(limit: number, now = this.deps.clock.now()): Promise<Job[]> {
    const { db, clock, config } = this.deps;
    const hold: Hold = new Hold(await db.begin(Hold.SETTINGS), { db, clock, leaseMs: config.leaseMs }, {
      unstarted: (ending) => this.dispatch.takeBack((job) => ending.has(job)),
      record: (outcomes) => this.recorder.add(outcomes),
      ended: (ended, freed, due) => {
        this.holds.splice(this.holds.indexOf(ended), 1);
        this.wakeups.at(due);
        // Rows the hold gave back are due now: take them again rather than at the next poll.
        if (freed > 0) this.wake();
        else this.claimIfRoom();
        this.checkWhenIdle();
      },
      onError: (error, during) => this.faults.failed(error, during),
    });
    let jobs: Job[];
    try {
      jobs = await claimLocked(hold.tx, hold, now, limit);
    } catch (error) {
      await hold.tx.rollback().catch(() => {});
      throw error;
    }
    if (jobs.length === 0) {
      await hold.tx.rollback();
      return jobs;
    }
    this.holds.push(hold);
    hold.took(jobs);
    return jobs;
  }

  /** Admits taken jobs: send times for rate-limited endpoints, then each to the dispatcher. */
  private async admit(jobs: Job[]): Promise<void> {
    if (jobs.length === 0) return;
    const now = this.deps.clock.now();
    let later = new Map<string, Date>();
    if (jobs.some((job) => job.rateLimit !== null)) {
      later = await this.rates.assign(jobs, now).catch((error) => {
        this.faults.failed(error, 'rate');
        // Without a send time, a rate-limited job waits a second rather than risk going over.
        return new Map(jobs.filter((job) => job.rateLimit !== null).map((job) => [job.id, new Date(now.getTime() + 1000)]));
      });
    }
    for (const job of jobs) {
      // A leased row must not be attempted when its lease could run out during the attempt.
      const leaseLeft = job.mark.getTime() - now.getTime();
      if (!job.lock && leaseLeft < this.deps.config.deliveryTimeoutMs + LEASE_MARGIN_MS) this.dispatch.admit(job, new Date(now.getTime() + 1));
      else this.dispatch.admit(job, later.get(job.id) ?? null);
    }
  }

  /** A job's outcome: written by the hold that locks its row, or by the recorder under the row's mark. */
  private finish(job: Job, outcome: Outcome): void {
    if (job.lock) job.lock.finish(job, outcome);
    else this.recorder.add([outcome]);
  }

  /**
   * How many rows to claim now: room for what the capacity allows plus two rounds waiting ahead, so
   * that an attempt ending starts the next at once instead of waiting for a claim's round trip
   * (held rows wait at most HOLD_MS: the hold's end frees those not started). Room reserved for
   * hand-offs counts as taken. No claim while outcomes wait to be written, or all holds are open.
   */
  private claimable(): number {
    if (this.recordingLags() || this.holds.length >= HOLDS_PER_WORKER) return 0;
    return this.dispatch.room(2) - this.reserved;
  }

  private recordingLags(): boolean {
    return this.recorder.lag() > 2 * this.capacity.limit;
  }

  /**
   * A worker with nothing in flight, waiting or being written asks when the earliest pending row is
   * due, and claims then (at once if it is due already). Claims end on their own terms (one that
   * took fewer rows than it asked, a worker full while rows came due), and a row left due that way
   * would otherwise wait for the poll. One read of the due-rows index per idle spell.
   */
  private checkWhenIdle(): void {
    if (this.timers.idle || !this.running) return;
    this.timers.idle = setTimeout(() => {
      this.timers.idle = undefined;
      if (!this.running || this.claiming || this.dispatch.busy() || this.holds.length > 0 || this.recorder.lag() > 0) return;
      earliestDue(this.deps.db)
        .then((due) => this.wakeups.at(due))
        .catch((error) => this.faults.failed(error, 'claim'));
    }, IDLE_CHECK_MS);
  }

  /** A worker that stopped claiming for want of room claims again once a busy claim fits. */
  private claimIfRoom(): void {
    if (this.full && this.claimable() >= Math.min(BUSY_CLAIM, this.capacity.limit)) {
      this.full = false;
      this.wake();
    }
  }
}

/** The workers of one process (`svc serve`, `svc worker`), sharing one sender. */
export async function startWorkers(
  deps: WorkerDeps,
  count: number,
  log: Pick<DeliveryWorkerOptions, 'onError' | 'onRecover'>,
): Promise<{ stop(): Promise<void> }> {
  const sender = createSender(deps.config);
  const workers = Array.from({ length: count }, () => new DeliveryWorker(deps, { sender, ...log }));
  await Promise.all(workers.map((w) => w.start()));
  return {
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await sender.close();
    },
  };
}
