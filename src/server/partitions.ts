import type { Config } from '../lib/config.js';
import type { Db } from '../db/db.js';
import type { Clock } from '../lib/clock.js';
import { ensurePartitions, partitionCheckMs } from '../db/partitions.js';
import { startPeriodic } from '../lib/periodic.js';

/**
 * Makes the partitions of the hot tables ahead of time in the background of `svc serve` and
 * `svc worker`: at once, then every quarter of SVC_PARTITION_WIDTH (between 10 s and 15 minutes).
 * Any number of processes run it; one at a time does the work (db/partitions.ts).
 */
export function startPartitions(ctx: { db: Db; clock: Clock; config: Pick<Config, 'partitionWidthMs'> }, onError: (error: unknown) => void): { stop(): Promise<void> } {
  const width = ctx.config.partitionWidthMs;
  return startPeriodic(() => ensurePartitions(ctx.db, ctx.clock.now(), width), { firstMs: 0, intervalMs: partitionCheckMs(width) }, onError);
}
