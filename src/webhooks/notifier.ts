import { randomBytes } from 'node:crypto';
import type { Db } from '../db/db.js';
import { DELIVERY_CHANNEL } from './fanout.js';

/**
 * Wakes delivery workers after a committed write, coalescing wake-ups. A NOTIFY inside a write's
 * transaction takes PostgreSQL's notification-queue lock at commit, which serialises every such
 * commit (no group commit): it capped ingest. Instead, writes commit without NOTIFY and poke this:
 * workers of this process are woken at once, and at most one NOTIFY per process is in flight for
 * the others (pokes arriving meanwhile are folded into one more). If the process dies between a
 * commit and its NOTIFY, the workers' polling finds the rows.
 */
export class DeliveryNotifier {
  /** The payload of this process's NOTIFYs: its own workers, woken already, skip them. */
  readonly origin = randomBytes(8).toString('hex');
  private readonly local = new Set<() => void>();
  private sending = false;
  private again = false;

  constructor(private readonly db: Db) {}

  /** Workers of this process register here besides LISTEN. */
  subscribe(wake: () => void): () => void {
    this.local.add(wake);
    return () => this.local.delete(wake);
  }

  poke(): void {
    for (const wake of this.local) wake();
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    void this.send();
  }

  private async send(): Promise<void> {
    do {
      this.again = false;
      // Best effort: a lost wake-up costs at most one polling interval, never a delivery.
      await this.db.query(`SELECT pg_notify('${DELIVERY_CHANNEL}', $1)`, [this.origin]).catch(() => {});
    } while (this.again);
    this.sending = false;
  }
}
