import { keepStatistics } from '../db/statistics.js';
import { startIdempotencyCleanup } from '../http/idempotency/cleanup.js';
import { startRollup } from '../webhooks/attempts/rollup.js';
import { startAlerts } from '../webhooks/alerts/check.js';
import type { AppContext } from './context.js';
import { startPartitions } from './partitions.js';
import { startRetention } from './retention.js';

/**
 * The periodic jobs every process that serves or delivers runs beside its work: partitions made
 * ahead, retention, the planner's statistics, the endpoint statistics rollup, the failure alerts'
 * check and the idempotency keys' clean-up. `report` gets a job's failure with what it was doing.
 * `statisticsFresh`: the caller has just refreshed the planner's statistics (db/statistics.ts).
 */
export function startBackground(
  ctx: AppContext,
  report: (error: unknown, what: string) => void,
  { statisticsFresh = false }: { statisticsFresh?: boolean } = {},
): { stop(): Promise<void> } {
  const jobs = [
    startPartitions(ctx, (error) => report(error, 'making partitions')),
    startRetention(ctx, (error) => report(error, 'retention')),
    keepStatistics(ctx.db, (error) => report(error, 'statistics refresh'), { fresh: statisticsFresh }),
    startRollup(ctx, (error) => report(error, 'endpoint statistics rollup')),
    startAlerts(ctx, (error) => report(error, 'failure alerts check')),
    startIdempotencyCleanup(ctx, (error) => report(error, 'idempotency key clean-up')),
  ];
  return {
    stop: async () => {
      for (const job of jobs) await job.stop();
    },
  };
}
