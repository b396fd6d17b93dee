import type { Config } from '../../lib/config.js';
import type { Clock } from '../../lib/clock.js';
import { DatabaseUnavailableError, type Db, type Queryable } from '../../db/db.js';
import { startPeriodic } from '../../lib/periodic.js';

/** The rollup's buckets: 5 minutes, aligned to UTC (the smallest bucket of the stats windows). */
export const ROLLUP_BUCKET_MS = 5 * 60_000;
/** The hourly level's rows: an hour each, aligned to UTC (the 24h and 7d windows' buckets are whole hours). */
export const HOUR_MS = 60 * 60_000;
/** The 6-hour level's rows: six hours each, aligned to UTC (the 7d window's buckets). */
export const SIX_HOURS_MS = 6 * HOUR_MS;
/** At most this much of the attempts' time per transaction, so a first run over a large table is many short ones. */
export const ROLLUP_STEP_MS = 6 * 60 * 60_000;
/** A process rolls up this long after it starts, then this long after each run. */
export const ROLLUP_FIRST_RUN_MS = 60_000;
export const ROLLUP_INTERVAL_MS = 60_000;

/**
 * One process at a time rolls a schema up (any number of `svc serve` and `svc worker` run this);
 * services on other schemas of the same database take their own lock.
 */
const LOCK_KEY = 0x524f_4c4c; // 'ROLL'

/**
 * How far the rollup may go at `now`: an attempt's row is written with its outcome, up to a lease
 * after the attempt started (a worker that dies mid-attempt leaves the row to another, which starts
 * again: at most two leases), so every attempt started before now − 2 × SVC_LEASE is written by
 * now; a minute more covers clocks of different machines that disagree a little. Rounded down to a
 * bucket, so the rollup and the raw attempts meet on a bucket boundary.
 */
export function rollupHorizon(now: Date, leaseMs: number): Date {
  const margin = 2 * leaseMs + 60_000;
  return new Date(Math.floor((now.getTime() - margin) / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS);
}

/**
 * A response time as the rollup keeps it: about two significant digits (exact below 100 ms, to
 * 10 ms below a second, to 100 ms below 10 s, to a second above), -1 for no measured time.
 */
const ROUNDED_MS = `CASE WHEN a.response_time_ms IS NULL THEN -1
                          WHEN a.response_time_ms < 100 THEN a.response_time_ms
                          WHEN a.response_time_ms < 1000 THEN round(a.response_time_ms, -1)::int
                          WHEN a.response_time_ms < 10000 THEN round(a.response_time_ms, -2)::int
                          ELSE round(a.response_time_ms, -3)::int END`;

/** 2^0 .. 2^30: width_bucket over them gives a time's power of two (its highest bit) in one lookup. */
const POWERS_OF_TWO = `'{${Array.from({ length: 31 }, (_, i) => 2 ** i).join(',')}}'::int[]`;

/** Below this a time is its own latency class; above, 16 classes per power of two. */
export const HOURLY_EXACT_BELOW_MS = 32;

/**
 * The latency class of a response time (ms, an integer) in the hourly level, as its midpoint: the
 * time itself below 32 ms; above, the power of two holding it is cut into 16 classes of equal width
 * (32-33, 34-35, ..., 62-63, 64-67, ..., 1024-1087, ...), so a class is at most 1/16 of the times
 * it holds wide and its midpoint within 1/32 (3.2%) of each. The same as HOURLY_CLASS_MS, in SQL.
 */
export function latencyClassMs(ms: number): number {
  if (ms < HOURLY_EXACT_BELOW_MS) return ms;
  const shift = 31 - Math.clz32(ms) - 4;
  const width = 2 ** shift;
  return Math.floor(ms / width) * width + width / 2;
}

const SHIFT = `(width_bucket(a.response_time_ms, ${POWERS_OF_TWO}) - 5)`;
/** latencyClassMs in SQL, -1 for no measured time (as ROUNDED_MS). */
const HOURLY_CLASS_MS = `CASE WHEN a.response_time_ms IS NULL THEN -1
                              WHEN a.response_time_ms < ${HOURLY_EXACT_BELOW_MS} THEN a.response_time_ms
                              ELSE ((a.response_time_ms >> ${SHIFT}) << ${SHIFT}) + (1 << (${SHIFT} - 1)) END`;

/** A coarse level's rows from `source`'s counts by class: the counts summed, the histogram as two arrays by class. */
const histograms = (start: string, source: string) => `SELECT endpoint_id, workspace_id, ${start}, sum(successes), sum(failures),
           coalesce(array_agg(class_ms ORDER BY class_ms) FILTER (WHERE class_ms >= 0), '{}'),
           coalesce(array_agg(n ORDER BY class_ms) FILTER (WHERE class_ms >= 0), '{}')
      FROM ${source} GROUP BY 1, 2, 3`;

/** Adds a coarse level's new row (`excluded`) to the one already there (`t`): counts, and the histograms class by class. */
const mergeHistograms = (t: string) => `
           successes = ${t}.successes + excluded.successes,
           failures = ${t}.failures + excluded.failures,
           (latency_ms, latency_n) = (
             SELECT coalesce(array_agg(ms ORDER BY ms), '{}'), coalesce(array_agg(n ORDER BY ms), '{}')
               FROM (SELECT ms, sum(n)::int AS n
                       FROM (SELECT * FROM unnest(${t}.latency_ms, ${t}.latency_n) UNION ALL SELECT * FROM unnest(excluded.latency_ms, excluded.latency_n)) x (ms, n)
                      GROUP BY ms) m)`;

/**
 * The attempts started in [$1, $2), counted by endpoint, 5-minute bucket, verdict, rounded time and
 * latency class, added to the three levels: the 5-minute one (rows by bucket, verdict and rounded
 * time), the hourly one and the 6-hour one (a row per endpoint and hour, or 6-hour block: counts and
 * a histogram by class, merged into the row when an earlier step counted a part of it already; both
 * from the same classes, so an attempt lands in one row of each level). Read endpoint by endpoint
 * through the (endpoint_id, started_at) index (the attempts have no index on the time alone, and the
 * delivery path pays for none): one index range per endpoint, over the step's attempts only, read
 * once for all levels. The aggregate inside the lateral subquery keeps the planner from turning this
 * into a join over the whole table. Endpoints deleted (more than the margin) before the step are
 * skipped: their statistics are not served any more.
 */
const ROLL_SQL = `WITH s AS (
    SELECT e.id AS endpoint_id, e.workspace_id, c.bucket_start, c.ok, c.latency_ms, c.class_ms, c.n
      FROM webhook_endpoints e
     CROSS JOIN LATERAL (
       SELECT date_bin('5 minutes', a.started_at, timestamptz 'epoch') AS bucket_start, a.ok, ${ROUNDED_MS} AS latency_ms,
              ${HOURLY_CLASS_MS} AS class_ms, count(*)::int AS n
         FROM webhook_delivery_attempts a
        WHERE a.endpoint_id = e.id AND a.started_at >= $1 AND a.started_at < $2
        GROUP BY 1, 2, 3, 4
     ) c
     WHERE e.deleted_at IS NULL OR e.deleted_at >= $3
  ), added AS (
    INSERT INTO webhook_endpoint_stats (endpoint_id, workspace_id, bucket_start, ok, latency_ms, n)
    SELECT endpoint_id, workspace_id, bucket_start, ok, latency_ms, sum(n)::int FROM s GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (endpoint_id, bucket_start, ok, latency_ms) DO UPDATE SET n = webhook_endpoint_stats.n + excluded.n
    RETURNING 1
  ), classes AS (
    SELECT endpoint_id, workspace_id, date_bin('1 hour', bucket_start, timestamptz 'epoch') AS hour_start, class_ms,
           coalesce(sum(n) FILTER (WHERE ok), 0)::int AS successes, coalesce(sum(n) FILTER (WHERE NOT ok), 0)::int AS failures, sum(n)::int AS n
      FROM s GROUP BY 1, 2, 3, 4
  ), hours AS (
    INSERT INTO webhook_endpoint_stats_hourly AS h (endpoint_id, workspace_id, hour_start, successes, failures, latency_ms, latency_n)
    ${histograms('hour_start', 'classes')}
        ON CONFLICT (endpoint_id, hour_start) DO UPDATE SET ${mergeHistograms('h')}
    RETURNING 1
  ), block_classes AS (
    SELECT endpoint_id, workspace_id, date_bin('6 hours', hour_start, timestamptz 'epoch') AS block_start, class_ms,
           sum(successes)::int AS successes, sum(failures)::int AS failures, sum(n)::int AS n
      FROM classes GROUP BY 1, 2, 3, 4
  ), blocks AS (
    INSERT INTO webhook_endpoint_stats_6h AS b (endpoint_id, workspace_id, block_start, successes, failures, latency_ms, latency_n)
    ${histograms('block_start', 'block_classes')}
        ON CONFLICT (endpoint_id, block_start) DO UPDATE SET ${mergeHistograms('b')}
    RETURNING 1
  )
  SELECT coalesce(sum(n), 0)::int AS attempts, (SELECT count(*)::int FROM added) AS rows, (SELECT count(*)::int FROM hours) AS hours,
         (SELECT count(*)::int FROM blocks) AS blocks FROM s`;

/** The oldest attempt's time, found with one index descent per endpoint; null without attempts. */
const OLDEST_SQL = `SELECT min(o.started_at) AS oldest
    FROM webhook_endpoints e
   CROSS JOIN LATERAL (SELECT min(a.started_at) AS started_at FROM webhook_delivery_attempts a WHERE a.endpoint_id = e.id) o`;

export interface RollupStep {
  from: Date;
  to: Date;
  /** Attempts counted into the rollup. */
  attempts: number;
}

export interface RollupRun {
  steps: RollupStep[];
  /** The watermark after the run; null only when another process held the lock before a first run. */
  rolledUntil: Date | null;
  /** Another process held the lock: this run did nothing. */
  busy: boolean;
}

export interface RollupOptions {
  /** At most this much time per transaction (a multiple of 5 minutes); ROLLUP_STEP_MS by default. */
  stepMs?: number;
  /** Asked between two steps: a run ends early when it answers true (a graceful stop). */
  stopped?: () => boolean;
}

/** What the rollup uses of the service. */
export type RollupDeps = { db: Db; clock: Clock; config: Pick<Config, 'leaseMs'> };

/**
 * Rolls the attempts up to the horizon (rollupHorizon at ctx.clock's now), one transaction per step
 * of at most `stepMs`. Each step holds the schema's advisory lock, reads the watermark (locking its
 * row, so even two steps that got past the lock at once would run one after the other and the
 * second would start where the first ended), adds [rolled_until, to) to the three levels of the
 * rollup (5-minute, hourly and 6-hour) and moves their one watermark to `to`, all or nothing: every
 * attempt is counted once in each level. The first run starts at the oldest attempt's bucket. A step cancelled by the statement time-out is tried again at half the
 * size (down to one bucket) for the rest of the run.
 */
export async function runRollup(ctx: RollupDeps, options: RollupOptions = {}): Promise<RollupRun> {
  let stepMs = options.stepMs ?? ROLLUP_STEP_MS;
  const horizon = rollupHorizon(ctx.clock.now(), ctx.config.leaseMs);
  const run: RollupRun = { steps: [], rolledUntil: null, busy: false };
  for (;;) {
    if (options.stopped?.()) return run;
    let result: Awaited<ReturnType<typeof rollStep>>;
    try {
      result = await rollStep(ctx.db, horizon, stepMs, 2 * ctx.config.leaseMs + 60_000);
    } catch (error) {
      // A step too big for the statement time-out (a busy database, or far more attempts than
      // usual) is tried again at half the size, down to one bucket: the job never stalls on one.
      if (!cancelledByTimeout(error) || stepMs <= ROLLUP_BUCKET_MS) throw error;
      stepMs = Math.max(ROLLUP_BUCKET_MS, Math.floor(stepMs / 2 / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS);
      continue;
    }
    if (result === 'busy') return { ...run, busy: true };
    run.rolledUntil = result.rolledUntil;
    if (!result.step) return run;
    run.steps.push(result.step);
  }
}

async function rollStep(db: Db, horizon: Date, stepMs: number, marginMs: number): Promise<'busy' | { rolledUntil: Date | null; step: RollupStep | null }> {
  return db.tx(async (q) => {
    const [{ locked }] = await q.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema())) AS locked', [LOCK_KEY]);
    if (!locked) return 'busy' as const;
    const [state] = await q.query<{ rolled_until: Date | null }>('SELECT rolled_until FROM webhook_endpoint_stats_rollup FOR UPDATE');
    const rolled = state.rolled_until === null ? null : new Date(state.rolled_until);
    const from = rolled ?? (await oldestBucket(q)) ?? horizon;
    if (from.getTime() >= horizon.getTime()) {
      // Nothing to count (yet): a first run over no attempts starts the watermark at the horizon.
      if (rolled === null) await setWatermark(q, horizon, horizon);
      return { rolledUntil: rolled ?? horizon, step: null };
    }
    const to = new Date(Math.min(from.getTime() + stepMs, horizon.getTime()));
    const [{ attempts }] = await q.query<{ attempts: number }>(ROLL_SQL, [from, to, new Date(from.getTime() - marginMs)]);
    // A first run fills every level from its start on: the hourly and 6-hour levels are complete from there.
    await setWatermark(q, to, rolled === null ? from : null);
    return { rolledUntil: to, step: { from, to, attempts } };
  });
}

/** PostgreSQL cancelled the statement at its time-out (SVC_DB_STATEMENT_TIMEOUT). */
function cancelledByTimeout(error: unknown): boolean {
  return error instanceof DatabaseUnavailableError && (error.original as { code?: string } | null)?.code === '57014';
}

async function oldestBucket(q: Queryable): Promise<Date | null> {
  const [{ oldest }] = await q.query<{ oldest: Date | null }>(OLDEST_SQL);
  if (oldest === null) return null;
  return new Date(Math.floor(new Date(oldest).getTime() / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS);
}

/** Moves the watermark of the levels; `since` (a first run's start) says where the hourly and 6-hour levels begin. */
async function setWatermark(q: Queryable, until: Date, since: Date | null): Promise<void> {
  await q.query(
    'UPDATE webhook_endpoint_stats_rollup SET rolled_until = $1, hourly_since = coalesce($2, hourly_since), six_hour_since = coalesce($2, six_hour_since)',
    [until, since],
  );
}

/**
 * Deletes the rollup's buckets that ended before `before` (retention: src/server/retention.ts), up to
 * `batchSize` rows per statement, oldest first through the age index (named by its expression,
 * which equals bucket_start: see migrations/012); SKIP LOCKED lets processes run it side by side.
 * Returns the rows this batch deleted and whether it was full.
 */
export async function pruneRollupBatch(q: Queryable, before: Date, batchSize: number): Promise<{ deleted: number; full: boolean }> {
  const cutoff = new Date(Math.floor(before.getTime() / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS);
  const [batch] = await q.query<{ deleted: number; selected: number }>(
    `WITH doomed AS (
       SELECT endpoint_id, bucket_start, ok, latency_ms FROM webhook_endpoint_stats
        WHERE date_bin('5 minutes', bucket_start, timestamptz 'epoch') < $1
        ORDER BY date_bin('5 minutes', bucket_start, timestamptz 'epoch') LIMIT $2 FOR UPDATE SKIP LOCKED
     ), gone AS (
       DELETE FROM webhook_endpoint_stats s USING doomed d
        WHERE s.endpoint_id = d.endpoint_id AND s.bucket_start = d.bucket_start AND s.ok = d.ok AND s.latency_ms = d.latency_ms
       RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS deleted, (SELECT count(*)::int FROM doomed) AS selected`,
    [cutoff, batchSize],
  );
  return { deleted: batch.deleted, full: batch.selected >= batchSize };
}

/** The coarse levels' tables, the column of their rows' start, and their rows' length. */
const COARSE_LEVELS = {
  hourly: { table: 'webhook_endpoint_stats_hourly', start: 'hour_start', interval: '1 hour', ms: HOUR_MS },
  sixHour: { table: 'webhook_endpoint_stats_6h', start: 'block_start', interval: '6 hours', ms: SIX_HOURS_MS },
} as const;

/**
 * Deletes a coarse level's rows (hours or 6-hour blocks) that ended before `before`, as
 * pruneRollupBatch does for the 5-minute level (the age indexes: migrations/014 and 015).
 */
async function pruneCoarseBatch(level: keyof typeof COARSE_LEVELS, q: Queryable, before: Date, batchSize: number): Promise<{ deleted: number; full: boolean }> {
  const { table, start, interval, ms } = COARSE_LEVELS[level];
  const cutoff = new Date(Math.floor(before.getTime() / ms) * ms);
  const age = `date_bin('${interval}', ${start}, timestamptz 'epoch')`;
  const [batch] = await q.query<{ deleted: number; selected: number }>(
    `WITH doomed AS (
       SELECT endpoint_id, ${start} FROM ${table} WHERE ${age} < $1 ORDER BY ${age} LIMIT $2 FOR UPDATE SKIP LOCKED
     ), gone AS (
       DELETE FROM ${table} t USING doomed d WHERE t.endpoint_id = d.endpoint_id AND t.${start} = d.${start}
       RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS deleted, (SELECT count(*)::int FROM doomed) AS selected`,
    [cutoff, batchSize],
  );
  return { deleted: batch.deleted, full: batch.selected >= batchSize };
}

/** The hourly level's hours that ended before `before` (pruneCoarseBatch). */
export const pruneHourlyBatch = (q: Queryable, before: Date, batchSize: number) => pruneCoarseBatch('hourly', q, before, batchSize);
/** The 6-hour level's blocks that ended before `before` (pruneCoarseBatch). */
export const pruneSixHourBatch = (q: Queryable, before: Date, batchSize: number) => pruneCoarseBatch('sixHour', q, before, batchSize);

/** Runs the rollup in the background of `svc serve` and `svc worker`; stop() ends a run between two steps. */
export function startRollup(ctx: RollupDeps, onError: (error: unknown) => void): { stop(): Promise<void> } {
  return startPeriodic((stopped) => runRollup(ctx, { stopped }), { firstMs: ROLLUP_FIRST_RUN_MS, intervalMs: ROLLUP_INTERVAL_MS }, onError);
}
