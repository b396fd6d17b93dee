import { listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { Job } from './job.js';

/** The channel writes NOTIFY when they commit deliveries due now, and workers LISTEN on; named per schema (db/channels.ts). */
export const DELIVERY_CHANNEL = 'webhook_deliveries';

/** What a delivery worker offers the writers of its own process (see ../../outbox/notifier.ts). */
export interface LocalWorker {
  /** Something may be due: claim. */
  wake(): void;
  /** Sets aside up to `max` slots for rows a write will hand over; returns how many (0: none free). */
  reserve(max: number): number;
  /** Takes the jobs handed over under `reserved` slots; slots the write did not fill are freed. */
  adopt(jobs: Job[], reserved: number): void;
}

/** The writers' side of a process, as its workers see it: they register, and skip its own NOTIFYs. */
export interface LocalWriters {
  /** The payload of this process's NOTIFYs. */
  readonly origin: string;
  subscribe(worker: LocalWorker): () => void;
}

/**
 * When a worker claims: on a NOTIFY from another process's write (this process's own writes wake
 * it directly, through the notifier), at the time the next pending row comes due (a retry, a job
 * put off, a lease running out: as soon as it is due, not at the next poll), and every
 * SVC_POLL_INTERVAL as a fallback for everything else.
 */
export class Wakeups {
  private poll: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly deps: { db: Db; clock: Clock; notifier: LocalWriters; pollIntervalMs: number },
    private readonly kick: () => void,
  ) {}

  async start(worker: LocalWorker): Promise<void> {
    // A NOTIFY sent by this process's own notifier comes after the direct wake-up: skipped.
    const unlisten = await listenChannel(this.deps.db, DELIVERY_CHANNEL, (origin) => {
      if (origin !== this.deps.notifier.origin) this.kick();
    });
    const unsubscribe = this.deps.notifier.subscribe(worker);
    this.unlisten = async () => {
      unsubscribe();
      await unlisten();
    };
    this.poll = setInterval(this.kick, this.deps.pollIntervalMs);
  }

  /** Claims again at `due` (service clock), unless a wake-up is set sooner; a poll covers the far future. */
  at(due: Date | null): void {
    if (!due || !this.unlisten) return;
    const at = due.getTime();
    if (at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    const delay = Math.min(Math.max(0, at - this.deps.clock.now().getTime()), this.deps.pollIntervalMs);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.kick();
    }, delay);
  }

  async stop(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    if (this.timer) clearTimeout(this.timer);
    this.poll = this.timer = null;
    this.timerAt = Infinity;
    const unlisten = this.unlisten;
    this.unlisten = null;
    await unlisten?.();
  }
}
