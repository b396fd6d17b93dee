import { listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { DELIVERY_CHANNEL, type LocalWorker, type WorkerLink } from './handoff.js';

/**
 * When a worker claims: on a NOTIFY from another process's write (this process's own writes wake
 * it directly, through the WorkerLink), at the time the next pending row comes due (a retry, a job
 * deferred, a lease running out: as soon as it is due, not at the next poll), and every
 * SVC_POLL_INTERVAL as a fallback for everything else.
 */
export class Wakeups {
  private poll: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly deps: { db: Db; clock: Clock; link: Pick<WorkerLink, 'origin' | 'subscribe'>; pollIntervalMs: number },
    private readonly wake: () => void,
  ) {}

  async start(worker: LocalWorker): Promise<void> {
    // A NOTIFY sent by this process's own link comes after the direct wake-up: skipped.
    const unlisten = await listenChannel(this.deps.db, DELIVERY_CHANNEL, (origin) => {
      if (origin !== this.deps.link.origin) this.wake();
    });
    const unsubscribe = this.deps.link.subscribe(worker);
    this.unlisten = async () => {
      unsubscribe();
      await unlisten();
    };
    this.poll = setInterval(this.wake, this.deps.pollIntervalMs);
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
      this.wake();
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
