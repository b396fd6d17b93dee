import type { Queryable } from '../../db/db.js';
import { toIso } from '../../lib/iso.js';
import { STATS_WINDOWS, type StatsWindow } from './schemas.js';

export interface EndpointStatsView {
  window: StatsWindow;
  attempts: number;
  successes: number;
  failures: number;
  successRate: number | null;
  latencyMs: { p50: number | null; p95: number | null; p99: number | null };
  series: { start: string; successes: number; failures: number }[];
}

/** The buckets of a window at `now`: aligned to UTC multiples of their size, the last one holding `now`. */
export function statsBuckets(window: StatsWindow, now: Date): { start: number; end: number; bucketMs: number; count: number } {
  const { windowMs, bucketMs } = STATS_WINDOWS[window];
  const end = Math.floor(now.getTime() / bucketMs) * bucketMs + bucketMs;
  return { start: end - windowMs, end, bucketMs, count: windowMs / bucketMs };
}

interface StatsRow {
  buckets: { bucket: string; successes: number; failures: number }[] | null;
  latency: (number | null)[];
}

/**
 * An endpoint's attempts in a window: counts per bucket (and so in all) and latency percentiles, in
 * one statement (one snapshot). Most of the window comes from the rollup (rollup.ts): the attempts
 * already counted by 5-minute bucket, verdict and rounded response time, a few hundred rows per
 * bucket at most however many attempts it holds, read as one range of its primary key. The recent
 * part not rolled up yet, from the watermark (rolled_until) on, comes from the attempts themselves:
 * one range of the (endpoint_id, started_at) index, read without visiting the table (index-only),
 * since the index carries `ok` and the response time. An attempt is counted by exactly one half: the
 * rollup holds every attempt started before the watermark and none after (it moves in the same
 * transaction that adds them). The watermark is on a 5-minute boundary, as every window's buckets are.
 *
 * Both halves become counts by (bucket, ok, response time): a hash table of a few thousand groups.
 * The percentiles are then taken from the counts by response time, exactly as percentile_disc
 * defines them (the first value whose position reaches ceil(p * n), computed in double precision as
 * PostgreSQL does), without sorting every attempt. They cover every attempt with a measured time,
 * failures included, in whole milliseconds: exact for the recent part, rounded as the rollup keeps
 * them (exact below 100 ms, two significant digits above) for the rest (docs/webhooks.md has the
 * plans).
 */
const STATS_SQL = `WITH mark AS (
    SELECT rolled_until FROM webhook_endpoint_stats_rollup
  ), counts AS (
    SELECT date_bin($4::interval, bucket_start, $2::timestamptz) AS bucket, ok, nullif(latency_ms, -1) AS ms, sum(n)::int AS n
      FROM webhook_endpoint_stats
     WHERE endpoint_id = $1 AND bucket_start >= $2 AND bucket_start < (SELECT least($3::timestamptz, coalesce(rolled_until, '-infinity')) FROM mark)
     GROUP BY 1, 2, 3
    UNION ALL
    SELECT date_bin($4::interval, started_at, $2::timestamptz) AS bucket, ok, response_time_ms AS ms, count(*)::int AS n
      FROM webhook_delivery_attempts
     WHERE endpoint_id = $1 AND started_at >= (SELECT greatest($2::timestamptz, coalesce(rolled_until, '-infinity')) FROM mark) AND started_at < $3
     GROUP BY 1, 2, 3
  ), latency AS (
    SELECT ms, sum(sum(n)) OVER (ORDER BY ms) AS upto, sum(sum(n)) OVER () AS total
      FROM counts WHERE ms IS NOT NULL GROUP BY ms
  )
  SELECT (SELECT json_agg(b) FROM (SELECT bucket, sum(n) FILTER (WHERE ok) AS successes, sum(n) FILTER (WHERE NOT ok) AS failures
                                     FROM counts GROUP BY bucket) b) AS buckets,
         (SELECT ARRAY[min(ms) FILTER (WHERE upto >= ceil(0.5::float8 * total)), min(ms) FILTER (WHERE upto >= ceil(0.95::float8 * total)),
                       min(ms) FILTER (WHERE upto >= ceil(0.99::float8 * total))]
            FROM latency) AS latency`;

export async function endpointStats(q: Queryable, endpointId: string, window: StatsWindow, now: Date): Promise<EndpointStatsView> {
  const { start, end, bucketMs, count } = statsBuckets(window, now);
  const [row] = await q.query<StatsRow>(STATS_SQL, [endpointId, new Date(start), new Date(end), `${bucketMs / 1000} seconds`]);
  const series = Array.from({ length: count }, (_, i) => ({ start: toIso(new Date(start + i * bucketMs)), successes: 0, failures: 0 }));
  let attempts = 0;
  let successes = 0;
  for (const b of row.buckets ?? []) {
    const i = Math.round((Date.parse(b.bucket) - start) / bucketMs);
    series[i] = { start: series[i].start, successes: b.successes ?? 0, failures: b.failures ?? 0 };
    attempts += series[i].successes + series[i].failures;
    successes += series[i].successes;
  }
  const [p50 = null, p95 = null, p99 = null] = row.latency ?? [];
  return {
    window,
    attempts,
    successes,
    failures: attempts - successes,
    successRate: attempts === 0 ? null : successes / attempts,
    latencyMs: { p50, p95, p99 },
    series,
  };
}
