import type { Queryable } from '../../db/db.js';
import { toIso } from '../../lib/iso.js';
import { HOUR_MS, SIX_HOURS_MS } from './rollup.js';
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
 * An endpoint's attempts in a window of 5-minute buckets (1h): counts per bucket (and so in all) and
 * latency percentiles, in one statement (one snapshot). Most of the window comes from the rollup's
 * 5-minute level (rollup.ts): the attempts already counted by 5-minute bucket, verdict and rounded
 * response time, a few hundred rows per bucket at most however many attempts it holds, read as one
 * range of its primary key. The recent
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

/**
 * The end of the statements that read a coarse level: `hours` (rows of whole hours or blocks, with
 * a histogram by class) and `finer` (counts by bucket, verdict and time) become the buckets' counts
 * and the percentiles.
 */
const COARSE_TAIL = `), counts AS (
    SELECT date_bin($4::interval, hour_start, $2::timestamptz) AS bucket, successes, failures FROM hours
    UNION ALL
    SELECT bucket, sum(n) FILTER (WHERE ok), sum(n) FILTER (WHERE NOT ok) FROM finer GROUP BY bucket
  ), times AS (
    SELECT unnest(latency_ms) AS ms, unnest(latency_n) AS n FROM hours
    UNION ALL
    SELECT ms, n FROM finer WHERE ms IS NOT NULL
  ), latency AS (
    SELECT ms, sum(sum(n)) OVER (ORDER BY ms) AS upto, sum(sum(n)) OVER () AS total FROM times GROUP BY ms
  )
  SELECT (SELECT json_agg(b) FROM (SELECT bucket, sum(successes) AS successes, sum(failures) AS failures FROM counts GROUP BY bucket) b) AS buckets,
         (SELECT ARRAY[min(ms) FILTER (WHERE upto >= ceil(0.5::float8 * total)), min(ms) FILTER (WHERE upto >= ceil(0.95::float8 * total)),
                       min(ms) FILTER (WHERE upto >= ceil(0.99::float8 * total))]
            FROM latency) AS latency`;

/**
 * The last part of `finer` in the coarse statements, the attempts not rolled up yet (from the
 * watermark on: one range of the (endpoint_id, started_at) index), then COARSE_TAIL.
 */
const RECENT_AND_TAIL = `    SELECT date_bin($4::interval, started_at, $2::timestamptz) AS bucket, ok, response_time_ms AS ms, count(*)::int AS n
      FROM webhook_delivery_attempts
     WHERE endpoint_id = $1 AND started_at >= (SELECT greatest($2::timestamptz, rolled) FROM mark) AND started_at < $3
     GROUP BY 1, 2, 3
  ${COARSE_TAIL}`;

/**
 * The same for the 24h window, whose buckets are whole hours: most of the window comes from the
 * rollup's hourly level, one row per hour (24 at most, one range of its primary key),
 * with the hour's counts and a histogram of its times by latency class (rollup.ts: exact below
 * 32 ms, within 1/32 above). The hourly level holds every attempt in [hourly_since, rolled_until):
 * the recent part from rolled_until on comes from the attempts, as above, and the part before
 * hourly_since (only during the day after migrations/014, which started the hourly level at the
 * watermark of the moment) from the 5-minute level. The hour holding hourly_since holds only the
 * attempts after it; the 5-minute level's buckets before it hold the rest. So each attempt is
 * counted by exactly one of the three.
 *
 * The histograms are unnested in the select list (two arrays of one length, taken in step): a
 * lateral unnest() per row builds a tuplestore per row and takes longer (bench/notes.md). The
 * percentiles are then taken as above from
 * the counts by time, a class counting as its midpoint: the
 * k-th time of those counts is within 1/32 of the k-th measured time (every time moves by at most
 * 1/32 of itself, which keeps each order statistic within that bound), exact below 32 ms.
 */
const HOURLY_STATS_SQL = `WITH mark AS (
    SELECT coalesce(rolled_until, '-infinity') AS rolled, coalesce(hourly_since, '-infinity') AS since FROM webhook_endpoint_stats_rollup
  ), hours AS (
    SELECT hour_start, successes, failures, latency_ms, latency_n
      FROM webhook_endpoint_stats_hourly
     WHERE endpoint_id = $1 AND hour_start >= $2 AND hour_start < (SELECT least($3::timestamptz, rolled) FROM mark)
  ), finer AS (
    SELECT date_bin($4::interval, bucket_start, $2::timestamptz) AS bucket, ok, nullif(latency_ms, -1) AS ms, sum(n)::int AS n
      FROM webhook_endpoint_stats
     WHERE endpoint_id = $1 AND bucket_start >= $2 AND bucket_start < (SELECT least($3::timestamptz, rolled, since) FROM mark)
     GROUP BY 1, 2, 3
    UNION ALL
${RECENT_AND_TAIL}`;

/**
 * The same for the 7d window, whose buckets are 6-hour blocks aligned to UTC: most of the window
 * comes from the rollup's 6-hour level, one row per block (28 for a week, 29 while the newest block
 * is still filling; one range of its primary key), with the block's counts and histogram by class
 * (the hourly level's classes). The 6-hour level holds every attempt in [six_hour_since,
 * rolled_until); before six_hour_since (only during the week after migrations/015, which started it
 * at the watermark of the day) the window reads what came before it, each attempt from one place:
 * - the hourly level for [hourly_since, the hour holding six_hour_since): whole hours, except the
 *   one holding hourly_since, which holds only the attempts after it;
 * - the 5-minute level before hourly_since (as in the 24h window), and between the start of the hour
 *   holding six_hour_since and six_hour_since itself: that hour's hourly row also holds attempts
 *   after six_hour_since, which the 6-hour level counts, so the row is left out and its first
 *   minutes come from the 5-minute level (at most 11 buckets, a second range of its key);
 * - the attempts from rolled_until on.
 * hourly_since <= six_hour_since <= rolled_until always (migrations/015 set it to the watermark, a
 * first run sets both to where it starts), so the four ranges meet without gaps or overlaps.
 *
 * A week read from 6-hour blocks unnests a sixth of the histogram entries it would read from hourly
 * rows, which were most of the statement's time (bench/notes.md).
 */
const SIX_HOUR_STATS_SQL = `WITH mark AS (
    SELECT coalesce(rolled_until, '-infinity') AS rolled, coalesce(hourly_since, '-infinity') AS hourly_since,
           coalesce(six_hour_since, '-infinity') AS six_since, coalesce(date_bin('1 hour', six_hour_since, timestamptz 'epoch'), '-infinity') AS six_hour
      FROM webhook_endpoint_stats_rollup
  ), hours AS (
    SELECT block_start AS hour_start, successes, failures, latency_ms, latency_n
      FROM webhook_endpoint_stats_6h
     WHERE endpoint_id = $1 AND block_start >= $2 AND block_start < (SELECT least($3::timestamptz, rolled) FROM mark)
    UNION ALL
    SELECT hour_start, successes, failures, latency_ms, latency_n
      FROM webhook_endpoint_stats_hourly
     WHERE endpoint_id = $1 AND hour_start >= $2 AND hour_start < (SELECT least($3::timestamptz, rolled, six_hour) FROM mark)
  ), finer AS (
    SELECT date_bin($4::interval, bucket_start, $2::timestamptz) AS bucket, ok, nullif(latency_ms, -1) AS ms, sum(n)::int AS n
      FROM webhook_endpoint_stats
     WHERE endpoint_id = $1 AND bucket_start >= $2 AND bucket_start < (SELECT least($3::timestamptz, rolled, hourly_since) FROM mark)
     GROUP BY 1, 2, 3
    UNION ALL
    SELECT date_bin($4::interval, bucket_start, $2::timestamptz) AS bucket, ok, nullif(latency_ms, -1) AS ms, sum(n)::int AS n
      FROM webhook_endpoint_stats
     WHERE endpoint_id = $1 AND bucket_start >= (SELECT greatest($2::timestamptz, hourly_since, six_hour) FROM mark)
       AND bucket_start < (SELECT least($3::timestamptz, rolled, six_since) FROM mark)
     GROUP BY 1, 2, 3
    UNION ALL
${RECENT_AND_TAIL}`;

/** The statement of a window: by the level its buckets are made of (6-hour blocks, whole hours, 5 minutes). */
function statsSql(bucketMs: number): string {
  if (bucketMs % SIX_HOURS_MS === 0) return SIX_HOUR_STATS_SQL;
  if (bucketMs % HOUR_MS === 0) return HOURLY_STATS_SQL;
  return STATS_SQL;
}

export async function endpointStats(q: Queryable, endpointId: string, window: StatsWindow, now: Date): Promise<EndpointStatsView> {
  const { start, end, bucketMs, count } = statsBuckets(window, now);
  const [row] = await q.query<StatsRow>(statsSql(bucketMs), [endpointId, new Date(start), new Date(end), `${bucketMs / 1000} seconds`]);
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
