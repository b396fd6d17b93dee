import { performance } from 'node:perf_hooks';
import { DeadlineError, withDeadline } from '../../lib/deadline.js';

/** After a failed opening, sends to the broker fail at once for this long, then twice as long after each failure again, up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 5_000;

/**
 * Connections to brokers, one per broker URL, shared by every delivery to it. A connection is
 * opened by the first send that needs it (sends meanwhile wait for the same opening), forgotten when
 * the broker closes it or it fails (a broker restart: the next send opens a new one), and closed
 * after `idleMs` without a send. An opening that fails is remembered for a while (FIRST_WAIT_MS,
 * doubling while it keeps failing): sends meanwhile fail with its error instead of each opening a
 * connection of its own, so a broker that is down gets about one connection a second at most.
 */
export class Connections<C> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly failures = new Map<string, Failure>();

  /** `openMs`: an opening not done by then fails (a broker that accepts the TCP connection and says nothing). */
  constructor(
    private readonly open: (url: string, lost: () => void) => Promise<C>,
    private readonly close: (connection: C) => Promise<void>,
    private readonly idleMs: number,
    private readonly openMs: number,
  ) {}

  /** The open connection to `url`, opening it if need be; rejects when it cannot be opened. */
  get(url: string): Promise<C> {
    const failed = this.failures.get(url);
    if (failed && performance.now() < failed.until) return Promise.reject(failed.error);
    let entry = this.entries.get(url);
    if (entry === undefined) {
      const created: Entry<C> = { connection: null as unknown as Promise<C>, timer: null };
      created.connection = this.opened(url, () => this.forget(url, created));
      created.connection.then(
        () => this.failures.delete(url),
        (error: unknown) => {
          this.forget(url, created);
          const waitMs = failed ? Math.min(MAX_WAIT_MS, failed.waitMs * 2) : FIRST_WAIT_MS;
          this.failures.set(url, { error, until: performance.now() + waitMs, waitMs });
        },
      );
      this.entries.set(url, (entry = created));
    }
    this.keepAlive(url, entry);
    return entry.connection;
  }

  /** `open`, given up after openMs; a connection that opens after all is closed. */
  private opened(url: string, lost: () => void): Promise<C> {
    const opening = this.open(url, lost);
    return withDeadline(opening, this.openMs, 'the broker').catch((error: unknown) => {
      if (error instanceof DeadlineError) opening.then((late) => this.close(late).catch(() => undefined), () => undefined);
      throw error;
    });
  }

  /** How many broker URLs have a connection open or opening. */
  get size(): number {
    return this.entries.size;
  }

  /** Closes every connection. */
  async closeAll(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => this.shut(entry)));
  }

  private keepAlive(url: string, entry: Entry<C>): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      if (this.entries.get(url) !== entry) return;
      this.entries.delete(url);
      void this.shut(entry);
    }, this.idleMs);
    entry.timer.unref();
  }

  private forget(url: string, entry: Entry<C>): void {
    if (entry.timer) clearTimeout(entry.timer);
    if (this.entries.get(url) === entry) this.entries.delete(url);
  }

  private async shut(entry: Entry<C>): Promise<void> {
    if (entry.timer) clearTimeout(entry.timer);
    const connection = await entry.connection.catch(() => null);
    if (connection !== null) await this.close(connection).catch(() => undefined);
  }
}

interface Entry<C> {
  connection: Promise<C>;
  timer: NodeJS.Timeout | null;
}

/** A failed opening: its error, until when (performance.now()) sends get it, and that wait's length. */
interface Failure {
  error: unknown;
  until: number;
  waitMs: number;
}
