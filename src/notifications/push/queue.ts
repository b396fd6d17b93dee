import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { markUsed, removeGone, targetsOf, type Target } from './devices.js';
import { VapidKeys } from './keys.js';
import { PUSH_TTL_SECONDS, payloadOf, pushRequest, type PushPayload, type PushRequest } from './message.js';
import { pushServiceOf } from './subscription.js';
import { PushTransport } from './transport.js';

/** How a push to one device ended; a closed list, for the metrics. */
export type PushOutcome = 'sent' | 'gone' | 'failed';

export interface PushOptions {
  /** Waits before each further attempt of a push that failed (not 404 or 410): three more by default. */
  retryDelaysMs?: number[];
  /** One attempt's budget, connect to last byte. */
  timeoutMs?: number;
  /** Pushes in flight at once. */
  concurrency?: number;
  /** How often a started queue looks for notifications no wake-up reached (another process's, or from before a crash). */
  pollMs?: number;
}

export interface PushDeps {
  db: Db;
  clock: Clock;
  secrets: SecretBox;
  config: { publicUrl: string; pushContact: string; allowPrivateTargets: boolean };
  /** Told how each push ended. */
  recorded?: (outcome: PushOutcome) => void;
}

const LOOK = 'look for notifications to push';
const SEND = 'push to a device';

/** Notifications claimed per statement. */
const CLAIM_BATCH = 100;
/** Pushes waiting at most; past it new ones are dropped (counted failed), so a flood cannot eat the memory. */
const MAX_WAITING = 10_000;

interface Job {
  target: Target;
  payload: PushPayload;
  attempt: number;
}

/**
 * Sends each notification to its user's devices as Web Push messages, in the background. A
 * notification's row starts with `push_claimed_at` NULL; wake() (called after notifications commit)
 * claims such rows with SKIP LOCKED, so each is pushed by one process only, and sends one message
 * per device. start() adds a look every `pollMs`, for rows no wake-up of this process reached.
 *
 * Nothing waits on it: wake() returns at once, sends run at most `concurrency` at a time, each within
 * its time-out. A 2xx marks the device used; 404 or 410 removes it (the subscription is gone); any
 * other answer or a failure is tried again after each of `retryDelaysMs`, then given up. Retries
 * live in this process: a stop drops them, and the notification itself stays in GET /v1/notifications.
 */
export class PushQueue {
  readonly keys: VapidKeys;
  private readonly transport: PushTransport;
  private readonly retryDelaysMs: number[];
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly waiting: Job[] = [];
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private claiming: Promise<void> | null = null;
  private again = false;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  private onError: (error: unknown, during: string) => void = () => {};

  constructor(
    private readonly deps: PushDeps,
    options: PushOptions = {},
  ) {
    this.keys = new VapidKeys(deps.db, deps.secrets, deps.clock);
    this.retryDelaysMs = options.retryDelaysMs ?? [10_000, 60_000, 300_000];
    this.concurrency = options.concurrency ?? 8;
    this.pollMs = options.pollMs ?? 60_000;
    this.transport = new PushTransport({ timeoutMs: options.timeoutMs ?? 10_000, allowPrivateTargets: deps.config.allowPrivateTargets });
  }

  /** Notifications were committed: claim and send their pushes. Returns at once; a wake-up during a claim makes another after it. */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = this.claimAll()
      .catch((error: unknown) => this.onError(error, LOOK))
      .finally(() => {
        this.claiming = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /**
   * Looks now and every `pollMs` for notifications still to push. `onError` hears of a failed look
   * (the database away: its notifications are claimed again at a later look) and of a push given up.
   */
  start(onError: (error: unknown, during: string) => void): void {
    this.onError = onError;
    const look = () => {
      this.wake();
      this.poll = setTimeout(look, this.pollMs);
      this.poll.unref();
    };
    look();
  }

  /** Stops looking and sending: pushes in flight are cut short, waiting ones and retries dropped. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.poll) clearTimeout(this.poll);
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
    this.waiting.length = 0;
    this.abort.abort();
    await this.claiming;
    await Promise.all(this.inFlight);
    await this.transport.close();
  }

  /** Whether nothing is being claimed, sent, waiting or set to be retried (tests wait for it). */
  idle(): boolean {
    return !this.claiming && this.inFlight.size === 0 && this.waiting.length === 0 && this.retries.size === 0;
  }

  private async claimAll(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const { claimed, jobs } = await this.claim();
      for (const job of jobs) this.enqueue(job);
      if (claimed < CLAIM_BATCH) return;
    }
  }

  /**
   * Claims a batch of notifications and reads their users' devices in one transaction, so a batch
   * whose devices could not be read stays to be claimed again.
   */
  private claim(): Promise<{ claimed: number; jobs: Job[] }> {
    const now = this.deps.clock.now();
    return this.deps.db.tx(async (q) => {
      const claimed = await q.query<{ id: string; user_id: string; workspace_id: string; type: string; message: string; created_at: Date }>(
        `UPDATE notifications SET push_claimed_at = $1
          WHERE id IN (SELECT id FROM notifications WHERE push_claimed_at IS NULL ORDER BY created_at, id LIMIT ${CLAIM_BATCH} FOR UPDATE SKIP LOCKED)
          RETURNING id, user_id, workspace_id, type, message, created_at`,
        [now],
      );
      // One a push service would no longer keep is not sent (the service was down longer than that).
      const fresh = claimed.filter((n) => now.getTime() - n.created_at.getTime() < PUSH_TTL_SECONDS * 1000);
      const targets = await targetsOf(q, this.deps.secrets, [...new Set(fresh.map((n) => n.user_id))]);
      const jobs = fresh.flatMap((n) => {
        const payload = payloadOf(n, this.deps.config.publicUrl);
        return targets.filter((t) => t.userId === n.user_id).map((target) => ({ target, payload, attempt: 0 }));
      });
      return { claimed: claimed.length, jobs };
    });
  }

  private enqueue(job: Job): void {
    if (this.stopped) return;
    if (this.waiting.length >= MAX_WAITING) {
      this.deps.recorded?.('failed');
      return;
    }
    this.waiting.push(job);
    this.next();
  }

  /** Starts waiting jobs while there is room. */
  private next(): void {
    while (!this.stopped && this.inFlight.size < this.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      const running: Promise<void> = this.attempt(job)
        .catch((error: unknown) => this.onError(error, SEND))
        .finally(() => {
          this.inFlight.delete(running);
          this.next();
        });
      this.inFlight.add(running);
    }
  }

  private async attempt(job: Job): Promise<void> {
    let request: PushRequest;
    try {
      request = pushRequest(job.target.subscription, job.payload, await this.keys.get(), this.deps.config.pushContact);
    } catch (error) {
      this.deps.recorded?.('failed');
      throw error;
    }
    const answer = await this.transport.send(request, this.abort.signal);
    if (this.stopped) return;
    const { status } = answer;
    if (status !== null && status >= 200 && status < 300) {
      this.deps.recorded?.('sent');
      await markUsed(this.deps.db, job.target.deviceId, this.deps.clock.now());
    } else if (status === 404 || status === 410) {
      this.deps.recorded?.('gone');
      await removeGone(this.deps.db, job.target.deviceId);
    } else if (job.attempt < this.retryDelaysMs.length) {
      // A push service that asks for more time (Retry-After) gets it, within the longest delay.
      const delay = Math.max(this.retryDelaysMs[job.attempt], Math.min((answer.retryAfter ?? 0) * 1000, Math.max(...this.retryDelaysMs)));
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        this.enqueue({ ...job, attempt: job.attempt + 1 });
      }, delay);
      timer.unref();
      this.retries.add(timer);
    } else {
      this.deps.recorded?.('failed');
      // The endpoint URL is a capability: the device is named by its id and its push service's host.
      const why = answer.error ?? `HTTP ${status}`;
      this.onError(new Error(`gave up on device ${job.target.deviceId} (${pushServiceOf(job.target.subscription.endpoint)}) after ${job.attempt + 1} attempts: ${why}`), SEND);
    }
  }
}
