import type { Db } from '../../db/db.js';
import type { Throttle } from './lane.js';

/** Changes are written at most this often. */
const FLUSH_MS = 1_000;

/**
 * Endpoints' throttles as their lanes change them (lanes.ts), written to webhook_endpoints at most
 * once a second, in one statement (migrations/020): what the API shows as an endpoint's `throttle`.
 * Each worker writes what its own lane has seen; the last write wins.
 */
export class Throttles {
  private readonly pending = new Map<string, Throttle | null>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
  ) {}

  set(endpointId: string, throttle: Throttle | null): void {
    this.pending.set(endpointId, throttle);
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, FLUSH_MS);
    this.timer.unref();
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    // In id order, as every other writer of several endpoints locks them.
    const rows = [...this.pending].sort(([a], [b]) => (a < b ? -1 : 1));
    this.pending.clear();
    await this.db
      .query(
        `UPDATE webhook_endpoints e SET throttle_share = t.share, throttled_since = t.since
           FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS t (id, share, since) WHERE e.id = t.id`,
        [rows.map(([id]) => id), rows.map(([, t]) => t?.share ?? null), rows.map(([, t]) => t?.since ?? null)],
      )
      .catch(this.onError);
  }
}
