import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { Metrics } from '../../ops/metrics.js';
import { idTimePrefix } from '../../lib/ids.js';
import { startPeriodic } from '../../lib/periodic.js';
import { expiredBefore } from './store.js';

export interface CleanupDeps {
  db: Db;
  clock: Clock;
  metrics: Pick<Metrics, 'retentionDeleted'>;
}

/** Rows deleted per statement at most: each batch is short and holds few locks. */
const BATCH = 1000;
/** A process cleans up this long after it starts, then this often: an expired key is never replayed, so this only frees space. */
const FIRST_RUN_MS = 60_000;
const INTERVAL_MS = 60 * 60_000;

/**
 * Deletes stored responses older than 24 hours. Ids are time-ordered (idk_ + the time of storing),
 * so the expired rows are a range of the primary key, deleted in batches; SKIP LOCKED lets any
 * number of processes run it side by side. Returns how many rows went; the metric of retention
 * (svc_retention_deleted_rows_total) counts them under the table's name.
 */
export async function deleteExpiredKeys(ctx: CleanupDeps, options: { batchSize?: number; stopped?: () => boolean } = {}): Promise<number> {
  const batchSize = options.batchSize ?? BATCH;
  const before = idTimePrefix('idk', expiredBefore(ctx.clock.now()));
  let deleted = 0;
  for (;;) {
    if (options.stopped?.()) return deleted;
    const [batch] = await ctx.db.query<{ deleted: number }>(
      `WITH doomed AS (
         SELECT id FROM idempotency_keys WHERE id < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM idempotency_keys k USING doomed d WHERE k.id = d.id RETURNING k.id
       )
       SELECT count(*)::int AS deleted FROM gone`,
      [before, batchSize],
    );
    deleted += batch.deleted;
    if (batch.deleted > 0) ctx.metrics.retentionDeleted('idempotency_keys', batch.deleted);
    if (batch.deleted < batchSize) return deleted;
  }
}

/** Runs the clean-up in the background of `svc serve` and `svc worker`; stop() ends a run between two batches. */
export function startIdempotencyCleanup(ctx: CleanupDeps, onError: (error: unknown) => void): { stop(): Promise<void> } {
  return startPeriodic((stopped) => deleteExpiredKeys(ctx, { stopped }), { firstMs: FIRST_RUN_MS, intervalMs: INTERVAL_MS }, onError);
}
