import type { Outcome } from './job.js';
import { earliestRetry, recordOutcomes } from './outcome.js';

/** Outcomes written per statement at most. */
const WRITE_BATCH = 500;

/**
 * How long the first outcome of a batch waits for others before it is written. A delivery has
 * arrived when its outcome is queued, so the wait delays only its line in the delivery log; at a
 * moderate load (hundreds of deliveries a second, each answered in a few milliseconds) it turns
 * one statement per outcome or two into one per several, and a statement costs PostgreSQL far more
 * than a row.
 */
export const GATHER_MS = 10;

/** Waits between tries of a batch whose write failed (the database unreachable, say). */
const RETRY_MS = [250, 500, 1000, 2000, 5000];

export interface RecorderOptions {
  /** Batches written at once (they touch different rows). */
  writers: number;
  /** How long a failed batch is tried again; past it, its rows come due again by themselves. */
  retryForMs: number;
  onError(error: unknown, during: string): void;
  /** A batch was written; `nextDue` is its earliest retry or put-off time, if any. */
  written(nextDue: Date | null): void;
  /** A batch of `count` outcomes was given up after `retryForMs`: its rows come due again by themselves. */
  gaveUp(count: number): void;
}

/**
 * Records outcomes of rows not held by a row lock (outcome.ts), in batches: each batch is whatever
 * finished while earlier writes ran, which keeps the database round trips per delivery low under
 * load. A batch whose write fails (the database unreachable, a lost connection) is tried again with
 * growing pauses for `retryForMs`: its rows stay taken meanwhile (each write is guarded by the mark
 * the row was taken with, so a late write changes nothing another worker has taken since), and its
 * deliveries are not sent again when the database comes back.
 */
export class OutcomeRecorder {
  private queue: Outcome[] = [];
  /** Writes under way. */
  private readonly writers = new Set<Promise<void>>();
  /** The next start, while the queue gathers (GATHER_MS). */
  private gathering: NodeJS.Timeout | null = null;
  private writing = 0;
  /** Failed batches waiting to be tried again. */
  private readonly retries = new Map<NodeJS.Timeout, Outcome[]>();
  /** Failed batches being tried again, off the writers: a flush waits for them too. */
  private readonly retrying = new Map<Promise<void>, Outcome[]>();
  private stopped = false;
  /** Until when (performance.now()) the last flush tries failed writes again. */
  private lastUntil: number | null = null;

  constructor(
    private readonly deps: Parameters<typeof recordOutcomes>[0],
    private readonly options: RecorderOptions,
  ) {}

  add(outcomes: Outcome[]): void {
    if (outcomes.length === 0) return;
    this.queue.push(...outcomes);
    this.schedule();
  }

  /** Outcomes not yet written, being written or waiting to be tried again. */
  lag(): number {
    return this.queue.length + this.writing + this.retried();
  }

  /**
   * Outcomes that wait on the database: being written, waiting to be tried again, or queued while
   * every writer is busy. Those queued beside a free writer are only gathering (GATHER_MS).
   */
  behind(): number {
    const queued = this.writers.size >= this.options.writers ? this.queue.length : 0;
    return queued + this.writing + this.retried();
  }

  private retried(): number {
    let count = 0;
    for (const batch of this.retries.values()) count += batch.length;
    for (const batch of this.retrying.values()) count += batch.length;
    return count;
  }

  /**
   * Writes what is queued; with `last`, failed batches are tried once more and then given up, or,
   * with `until` (performance.now()), tried again with pauses until then (a stop while the database
   * is unavailable: what was sent is recorded if it comes back in time).
   */
  async flush(last = false, until?: number): Promise<void> {
    if (last) {
      this.stopped = true;
      this.lastUntil = until ?? null;
    }
    for (const [timer, batch] of this.retries) {
      clearTimeout(timer);
      this.queue.push(...batch);
    }
    this.retries.clear();
    while (this.writers.size > 0 || this.queue.length > 0 || this.retrying.size > 0) {
      this.start();
      await Promise.allSettled([...this.writers, ...this.retrying.keys()]);
    }
  }

  /** Starts GATHER_MS after the first outcome queued, or at once when a whole batch waits. */
  private schedule(): void {
    if (this.queue.length >= WRITE_BATCH) return this.start();
    this.gathering ??= setTimeout(() => this.start(), GATHER_MS);
  }

  private start(): void {
    if (this.gathering) clearTimeout(this.gathering);
    this.gathering = null;
    while (this.writers.size < this.options.writers && this.queue.length > 0) {
      const batch = this.queue.splice(0, WRITE_BATCH);
      this.writing += batch.length;
      const writer: Promise<void> = this.write(batch, 0, null).finally(() => {
        this.writers.delete(writer);
        this.writing -= batch.length;
        // What was queued during the write is a batch already.
        if (this.queue.length > 0) this.start();
      });
      this.writers.add(writer);
    }
  }

  private async write(batch: Outcome[], tries: number, giveUpAt: number | null): Promise<void> {
    try {
      await recordOutcomes(this.deps, batch);
    } catch (error) {
      const now = performance.now();
      const deadline = this.stopped ? (this.lastUntil ?? now) : (giveUpAt ?? now + this.options.retryForMs);
      this.options.onError(error, 'record');
      if (now >= deadline) return this.options.gaveUp(batch.length);
      if (this.stopped) {
        // Stopping: tried again on this writer, which the last flush waits for.
        await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS[Math.min(tries, RETRY_MS.length - 1)], deadline - now)));
        return this.write(batch, tries + 1, giveUpAt);
      }
      // Tried again off the writers, so that other batches are not held up behind it.
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        const retry: Promise<void> = this.write(batch, tries + 1, deadline).finally(() => this.retrying.delete(retry));
        this.retrying.set(retry, batch);
      }, RETRY_MS[Math.min(tries, RETRY_MS.length - 1)]);
      this.retries.set(timer, batch);
      return;
    }
    this.options.written(earliestRetry(batch));
  }
}
