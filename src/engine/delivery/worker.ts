import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Config } from '../../lib/config.js';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import type { Metrics } from '../../ops/metrics.js';
import type { EventWriter } from './auto-disable.js';
import { BacklogMoves, moveRows } from './backlog.js';
import { ADJUST_MS, Capacity, processLoad, type Load } from './capacity.js';
import { releaseLeases } from './claim.js';
import { Claims } from './claims.js';
import { Dispatcher } from './dispatch.js';
import { Faults } from './faults.js';
import type { Deferral, LocalWorker, WorkerLink } from './handoff.js';
import type { Job } from './job.js';
import { attempt, deliver, leaseTooShort, record, type Stages } from './pipeline.js';
import { Lanes, MAX_SHARE, PROBATION_PART } from './lanes.js';
import { SendTimes } from './rate.js';
import { OutcomeRecorder } from './recorder.js';
import type { Sender } from '../destinations/sender.js';
import { createSender } from '../destinations/destinations.js';
import { Throttles } from './throttles.js';

/** What a worker needs of the process (an AppContext has it all). */
export interface WorkerDeps {
  db: Db;
  clock: Clock;
  secrets: SecretBox;
  link: WorkerLink;
  /** Writes the event of an endpoint the engine disables (the outbox). */
  outbox: EventWriter;
  metrics: Pick<Metrics, 'attemptStarted' | 'attemptFinished' | 'autoDisabled' | 'capacity'>;
  push?: { wake(): void };
  config: Pick<Config, 'retryScheduleMs' | 'leaseMs' | 'deliveryTimeoutMs' | 'pollIntervalMs' | 'workerConcurrency' | 'allowPrivateTargets'>;
}

export interface DeliveryWorkerOptions {
  /** Shared by the workers of a process (one connection pool); a worker without one makes its own. */
  sender?: Sender;
  /** The most attempts in flight (default SVC_WORKER_CONCURRENCY); less only while the process is overloaded. */
  concurrency?: number;
  /** The process's load as the capacity reads it (tests give their own; default: this process's). */
  load?: () => Load;
  /** Called for the first unexpected fault of a streak (database unreachable, ...); the worker keeps going. */
  onError?: (error: unknown, during: string) => void;
  /** Called when what failed works again, with how many failures the streak had. */
  onRecover?: (during: string, failures: number) => void;
}

/**
 * A delivery worker: start, stop and the loop. One batch goes through the stages of pipeline.ts:
 *
 * 1. wake (wakeups.ts, handoff.ts): a NOTIFY, the next due time or the poll asks for a claim; a
 *    write of this process may instead hand its new rows over, already leased;
 * 2. claim (claims.ts, claim.ts, hold.ts): due rows become jobs, taken under the row locks of a hold;
 * 3. admit (pipeline.ts, rate.ts, dispatch.ts, lanes.ts): a rate-limited endpoint's job gets its
 *    send time; each job is offered to its endpoint's lane, then waits for room in the capacity;
 * 4. attempt (attempt.ts, ../destinations/): sign, POST or publish by the URL's scheme, and build the outcome;
 * 5. record (hold.ts, recorder.ts, outcome.ts): a held job's outcome is written by its hold's
 *    transaction; any other in batches, guarded by the row's mark.
 *
 * stop() stops claiming, lets the attempts in flight finish and writes their outcomes; anything
 * still taken by a worker that dies comes back at once (held rows) or after its lease.
 */
export class DeliveryWorker implements LocalWorker {
  private readonly capacity: Capacity;
  private readonly dispatch: Dispatcher;
  private readonly claims: Claims;
  private readonly recorder: OutcomeRecorder;
  private readonly stages: Stages;
  private readonly faults: Faults;
  private readonly throttles: Throttles;
  private readonly moves: BacklogMoves;
  private readonly sender: Sender;
  private readonly ownsSender: boolean;
  private readonly load: { read(): Load; stop(): void };
  /** Room set aside for writes of this process that will hand rows over, and who waits for them at stop. */
  private reserved = 0;
  private whenReceived: (() => void) | null = null;
  /** Handed-over jobs still getting their send times. */
  private readonly receiving = new Set<Promise<void>>();
  private running = false;
  private adjusting: NodeJS.Timeout | null = null;
  /** Stops the calls on the database going down and up. */
  private unwatch: (() => void) | null = null;
  /** Outcomes given up since the start: their deliveries are sent again once their lease ends. */
  private unrecorded = 0;

  constructor(
    private readonly deps: WorkerDeps,
    options: DeliveryWorkerOptions = {},
  ) {
    const { db, clock, config } = deps;
    this.sender = options.sender ?? createSender(config);
    this.ownsSender = options.sender === undefined;
    this.load = options.load ? { read: options.load, stop: () => {} } : processLoad();
    this.capacity = new Capacity(options.concurrency ?? config.workerConcurrency, () => this.load.read(), (limit) => deps.metrics.capacity(this, limit));
    this.faults = new Faults(options.onError ?? (() => {}), options.onRecover ?? (() => {}));
    this.throttles = new Throttles(db, (error) => this.faults.failed(error, 'throttle'));
    this.moves = new BacklogMoves(db, (error) => this.faults.failed(error, 'backlog'));
    const lanes = new Lanes({
      maxShare: () => Math.min(MAX_SHARE, this.capacity.limit),
      probation: () => Math.max(1, Math.floor(this.capacity.limit * PROBATION_PART)),
      throttled: (id, throttle) => this.throttles.set(id, throttle),
      moveBacklog: (id, now, after, stepMs) => this.moves.move(id, now, after, stepMs),
      moveRows: (rows, now) => moveRows(db, now, rows).catch((error) => this.faults.failed(error, 'backlog')),
    });
    this.dispatch = new Dispatcher(this.capacity, lanes, clock, {
      attempt: (job) => attempt(this.stages, job),
      finish: (job, outcome) => record(this.stages, job, outcome),
      freed: () => {
        this.claims.claimIfRoom();
        this.claims.checkWhenIdle();
      },
      expired: (job) => leaseTooShort(this.stages, job, clock.now()),
    });
    this.recorder = new OutcomeRecorder(deps, {
      writers: 2,
      retryForMs: config.leaseMs,
      onError: (error, during) => this.faults.failed(error, during),
      written: (due) => {
        this.faults.ok('record');
        this.claims.at(due);
        this.claims.claimIfRoom();
        this.claims.checkWhenIdle();
      },
      gaveUp: (count) => {
        this.unrecorded += count;
        this.claims.claimIfRoom();
      },
    });
    this.claims = new Claims(deps, this.faults, {
      // Room for two rounds of the attempts in flight waiting ahead, up to the capacity, so that an
      // attempt ending starts the next at once instead of waiting for a claim's round trip (held rows
      // wait at most HOLD_MS: the hold's end frees those not started). Room reserved for hand-offs
      // counts as taken.
      room: () => (this.recordingLags() ? 0 : this.dispatch.room(2) - this.reserved),
      capacity: () => this.capacity.limit,
      busy: () => this.dispatch.busy(),
      recording: () => this.recorder.lag() > 0,
      admit: (jobs) => deliver(this.stages, jobs),
      unstarted: (ending) => this.dispatch.takeBack((job) => ending.has(job)),
      record: (outcomes) => this.recorder.add(outcomes),
    });
    const attemptDeps = { clock, secrets: deps.secrets, sender: this.sender, config, metrics: deps.metrics };
    this.stages = { clock, deliveryTimeoutMs: config.deliveryTimeoutMs, rates: new SendTimes(db), dispatch: this.dispatch, attempt: attemptDeps, recorder: this.recorder, faults: this.faults };
  }

  /** The attempts this worker may have in flight now (capacity.ts). */
  get limit(): number {
    return this.capacity.limit;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.dispatch.resume();
    // While the database is down, no attempt starts: its outcome could not be recorded, and the
    // delivery would be sent again a lease later. What waits goes once the database answers.
    this.unwatch = this.deps.db.onAvailability((change) => {
      if (!this.running) return;
      if (change.down) this.dispatch.pause();
      else this.dispatch.resume();
    });
    this.adjusting = setInterval(() => {
      this.capacity.adjust();
      this.dispatch.poll();
      this.claims.claimIfRoom();
    }, ADJUST_MS);
    this.adjusting.unref();
    await this.claims.start(this);
  }

  /** How long its backlog moves have been quiet (backlog.ts), in ms. */
  backlogQuietFor(): number {
    return this.moves.quietFor(performance.now());
  }

  /** Attempts in flight now, and outcomes not yet recorded. */
  pending(): { inFlight: number; unrecorded: number } {
    return { inFlight: this.dispatch.running(), unrecorded: this.recorder.lag() };
  }

  /**
   * Stops claiming, lets the attempts in flight finish and records them. With `recordUntil`
   * (performance.now()), outcomes whose write fails (the database unavailable) are tried again
   * until then, so that deliveries sent are not sent again a lease later.
   */
  async stop(recordUntil?: number): Promise<void> {
    this.running = false;
    this.unwatch?.();
    this.dispatch.pause();
    if (this.adjusting) clearInterval(this.adjusting);
    await this.claims.stop();
    // Writes that reserved room here hand their rows over when they return: wait for them.
    if (this.reserved > 0) await new Promise<void>((resolve) => (this.whenReceived = resolve));
    await Promise.allSettled(this.receiving);
    const unstarted = this.dispatch.takeBack(() => true);
    for (const job of unstarted) job.hold?.drop(job);
    await releaseLeases(this.deps.db, unstarted.filter((job) => !job.hold), this.deps.clock.now()).catch((error) => this.faults.failed(error, 'release'));
    await this.dispatch.idle();
    await this.claims.endHolds();
    await this.recorder.flush(true, recordUntil);
    await this.throttles.flush();
    this.load.stop();
    this.deps.metrics.capacity(this, null);
    if (this.ownsSender) await this.sender.close();
  }

  /** Outcomes given up since the start (the database did not answer): their deliveries go again once their lease ends. */
  get givenUp(): number {
    return this.unrecorded;
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
      const jobs = await this.claims.claim(this.capacity.limit);
      if (jobs.length === 0) {
        await this.throttles.flush();
        return total;
      }
      total += jobs.length;
      await deliver(this.stages, jobs);
      await this.dispatch.idle();
      await this.claims.endHolds();
      await this.recorder.flush();
      await yieldToEventLoop();
    }
  }

  /** Asks for a claim (claims.ts). */
  wake(): void {
    this.claims.wake();
  }

  reserve(max: number): number {
    if (!this.running || this.recordingLags()) return 0;
    // A handed row starts at once, waits a moment beside its endpoint's lane, or is deferred: it
    // never waits in line for the capacity.
    const room = Math.min(max, this.dispatch.free() - this.reserved);
    if (room <= 0) return 0;
    this.reserved += room;
    return room;
  }

  deferrals(): Deferral[] {
    return this.dispatch.lanes.deferrals(this.deps.clock.now(), performance.now());
  }

  deferredRows(deferral: Deferral, rows: number): void {
    this.dispatch.lanes.deferredRows(deferral, rows);
  }

  receive(jobs: Job[], reserved: number): void {
    this.reserved -= reserved;
    const admitting: Promise<void> = deliver(this.stages, jobs).finally(() => {
      this.receiving.delete(admitting);
      this.claims.claimIfRoom();
    });
    this.receiving.add(admitting);
    if (this.reserved === 0 && this.whenReceived) {
      this.whenReceived();
      this.whenReceived = null;
    }
  }

  /** No claim or hand-off while more outcomes wait on the database than two rounds of the capacity. */
  private recordingLags(): boolean {
    return this.recorder.behind() > 2 * this.capacity.limit;
  }
}
