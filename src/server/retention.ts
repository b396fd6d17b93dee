import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../lib/config.js';
import type { Db, Queryable } from '../db/db.js';
import type { Clock } from '../lib/clock.js';
import type { Metrics } from '../ops/metrics.js';
import { idTimePrefix, type IdPrefix } from '../lib/ids.js';
import { pruneHourlyBatch, pruneRollupBatch, pruneSixHourBatch } from '../webhooks/attempts/rollup.js';
import { startPeriodic } from '../lib/periodic.js';
import { retirePartitions, type Retired } from './retire.js';

/** Rows deleted per statement at most: each batch is a short transaction that holds few locks. */
export const RETENTION_BATCH = 1000;
/** Pause between two batches, so retention never keeps the database busy for long. */
export const RETENTION_PAUSE_MS = 100;
/** A process sweeps this long after it starts, then this often (once a partition width, when partitions are narrower). */
export const RETENTION_FIRST_RUN_MS = 60_000;
export const RETENTION_INTERVAL_MS = 60 * 60_000;

/**
 * One table whose rows older than the retention are deleted. Ids are time-ordered (lib/ids.ts): a
 * row's id starts with the time of its creation, so "created before the cutoff" is a range of the
 * primary key, and every batch is a range scan of an index the table has anyway. No index is added
 * for retention, so inserts and updates on the delivery path pay nothing for it.
 *
 * `keep` is a condition on a row (with `$4`, the sweep's `held` list) that keeps it whatever its age.
 */
interface Sweep {
  table: string;
  prefix: IdPrefix;
  keep: string;
  /** Computed once per run, before the batches: ids the run must not delete. */
  held?: (q: Queryable, cutoff: Date) => Promise<string[]>;
  /** Rows of another table that belong to a deleted row (`column` holds its id): deleted by the same statement. */
  with?: { table: string; column: string };
  /**
   * A partitioned table (db/partitions.ts): only its history, the rows written before it was
   * partitioned, is swept row by row; every later partition goes whole (retire.ts).
   */
  history?: boolean;
}

/**
 * In order: deliveries first, then the events they were sent from.
 * - Deliveries: only finished ones (success, failed, disabled); a pending delivery is still work.
 * - Events: not while a pending delivery still sends its body (a delivery reads its event's body).
 *   The held list is the pending deliveries' event ids older than the cutoff, read once per run
 *   through the due-deliveries index (pending rows only); a row turns pending only when it is
 *   created, so the list cannot grow stale during the run.
 * - Delivery attempts go with their delivery, in the statement that deletes it (found by the
 *   attempts' primary key, which starts with the delivery id): a delivery kept keeps its whole log,
 *   and the attempts table needs no index or foreign key of its own for this.
 * - Recoveries (webhook_recoveries): only completed or failed ones.
 * A table added later is one more line here, before the table it refers to.
 *
 * The endpoint statistics rollup has no ids: the buckets of its 5-minute level (webhook_endpoint_stats),
 * the hours of its hourly level (webhook_endpoint_stats_hourly) and the blocks of its 6-hour level
 * (webhook_endpoint_stats_6h) that ended before the cutoff go after these sweeps, oldest first
 * (ROLLUP_PRUNES).
 */
export const SWEEPS: Sweep[] = [
  { table: 'webhook_deliveries', prefix: 'whd', keep: `status = 'pending'`, with: { table: 'webhook_delivery_attempts', column: 'delivery_id' }, history: true },
  {
    table: 'events',
    prefix: 'evt',
    history: true,
    keep: 'id = ANY($4::text[])',
    held: async (q, cutoff) =>
      (
        await q.query<{ event_id: string }>(`SELECT DISTINCT event_id FROM webhook_deliveries WHERE status = 'pending' AND event_id < $1`, [
          idTimePrefix('evt', cutoff),
        ])
      ).map((r) => r.event_id),
  },
  // Bulk recoveries: finished ones; a running one is still work (its cursor is where it resumes).
  { table: 'webhook_recoveries', prefix: 'whr', keep: `status = 'running'` },
  // The event log's batches (engine/log/sequencer.ts): not while one still waits for its position.
  { table: 'event_batches', prefix: 'evb', keep: 'position IS NULL' },
];

/** The rollup's levels, pruned by age in batches, in this order. */
const ROLLUP_PRUNES: [table: string, prune: typeof pruneRollupBatch][] = [
  ['webhook_endpoint_stats', pruneRollupBatch],
  ['webhook_endpoint_stats_hourly', pruneHourlyBatch],
  ['webhook_endpoint_stats_6h', pruneSixHourBatch],
];

export interface RetentionRun {
  /** Rows deleted, by table. */
  deleted: Record<string, number>;
  /** Partitions dropped whole, and those past the retention kept for the work they hold (retire.ts). */
  retired?: Retired;
}

export interface RetentionOptions {
  batchSize?: number;
  pauseMs?: number;
  /** Asked between batches: a run stops early when it answers true (a graceful stop). */
  stopped?: () => boolean;
}

/**
 * Deletes what SVC_RETENTION no longer keeps: rows created before `clock.now() - retention`, in
 * batches of `batchSize` with a pause between. Each batch locks its rows with FOR UPDATE SKIP
 * LOCKED, so any number of processes may run it side by side: they take different rows, and rows
 * another transaction holds are left for a later run. Batches walk the key range forward (keyset),
 * so no batch scans again what an earlier one deleted.
 */
/** What retention uses of the service. */
export type RetentionDeps = { db: Db; clock: Clock; config: Pick<Config, 'retentionMs' | 'archiveDir' | 'partitionWidthMs'>; metrics: Pick<Metrics, 'retentionDeleted'> };

export async function runRetention(ctx: RetentionDeps, options: RetentionOptions = {}): Promise<RetentionRun> {
  const deleted: Record<string, number> = {};
  if (ctx.config.retentionMs <= 0) return { deleted };
  const batchSize = options.batchSize ?? RETENTION_BATCH;
  const pauseMs = options.pauseMs ?? RETENTION_PAUSE_MS;
  const cutoff = new Date(ctx.clock.now().getTime() - ctx.config.retentionMs);
  const retired = await retirePartitions(ctx, cutoff, options.stopped);
  for (const sweep of SWEEPS) {
    const table = sweep.history ? `${sweep.table}_history` : sweep.table;
    const dependent = sweep.with && sweep.history ? `${sweep.with.table}_history` : sweep.with?.table;
    if (sweep.history && !(await exists(ctx.db, table))) continue;
    const held = sweep.held ? await sweep.held(ctx.db, cutoff) : [];
    let after = `${sweep.prefix}_`;
    deleted[sweep.table] = 0;
    if (sweep.with) deleted[sweep.with.table] = 0;
    const dependents = sweep.with
      ? `, dependents AS (
           DELETE FROM ${dependent} x USING gone g WHERE x.${sweep.with.column} = g.id RETURNING 1
         )`
      : '';
    for (;;) {
      if (options.stopped?.()) return { deleted, retired };
      const [batch] = await ctx.db.query<{ deleted: number; selected: number; last: string | null; dependents: number }>(
        `WITH doomed AS (
           SELECT id FROM ${table}
            WHERE id > $1 AND id < $2 AND NOT (${sweep.keep})
            ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
         ), gone AS (
           DELETE FROM ${table} t USING doomed d WHERE t.id = d.id RETURNING t.id
         )${dependents}
         SELECT (SELECT count(*)::int FROM gone) AS deleted, (SELECT count(*)::int FROM doomed) AS selected, (SELECT max(id) FROM doomed) AS last,
                ${sweep.with ? '(SELECT count(*)::int FROM dependents)' : '0'} AS dependents`,
        [after, idTimePrefix(sweep.prefix, cutoff), batchSize, ...(sweep.held ? [held] : [])],
      );
      deleted[sweep.table] += batch.deleted;
      if (batch.deleted > 0) ctx.metrics.retentionDeleted(sweep.table, batch.deleted);
      if (sweep.with && batch.dependents > 0) {
        deleted[sweep.with.table] += batch.dependents;
        ctx.metrics.retentionDeleted(sweep.with.table, batch.dependents);
      }
      if (batch.selected < batchSize || batch.last === null) break;
      after = batch.last;
      if (pauseMs > 0) await sleep(pauseMs);
    }
  }
  for (const [table, prune] of ROLLUP_PRUNES) {
    deleted[table] = 0;
    for (;;) {
      if (options.stopped?.()) return { deleted, retired };
      const batch = await prune(ctx.db, cutoff, batchSize);
      deleted[table] += batch.deleted;
      if (batch.deleted > 0) ctx.metrics.retentionDeleted(table, batch.deleted);
      if (!batch.full) break;
      if (pauseMs > 0) await sleep(pauseMs);
    }
  }
  return { deleted, retired };
}

async function exists(q: Queryable, table: string): Promise<boolean> {
  const [row] = await q.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [table]);
  return row.found;
}

/**
 * Runs retention in the background of `svc serve` and `svc worker`: RETENTION_FIRST_RUN_MS after
 * start, then every RETENTION_INTERVAL_MS, or every partition width when that is shorter (a
 * partition is retired about when it passes the retention). stop() ends a run between two batches.
 */
export function startRetention(ctx: RetentionDeps, onError: (error: unknown) => void): { stop(): Promise<void> } {
  if (ctx.config.retentionMs <= 0) return { stop: async () => {} };
  const intervalMs = Math.min(RETENTION_INTERVAL_MS, ctx.config.partitionWidthMs);
  return startPeriodic((stopped) => runRetention(ctx, { stopped }), { firstMs: Math.min(RETENTION_FIRST_RUN_MS, intervalMs), intervalMs }, onError);
}
