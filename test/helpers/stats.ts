import type { EndpointStatsView } from '../../src/webhooks/attempts/stats.js';
import type { StatsWindow } from '../../src/webhooks/attempts/schemas.js';

/** An endpoint's statistics as the API answers them (GET /v1/webhooks/endpoints/{id}/stats). */
export type Stats = EndpointStatsView;

/** An attempt as the statistics see it: when it started (ms), its verdict and its response time. */
export interface KnownAttempt {
  at: number;
  ok: boolean;
  ms: number | null;
}

/**
 * What the statistics of `attempts` must be over [start, end) in buckets of `bucketMs`: counts,
 * rate and series exactly, and the percentiles as percentile_disc takes them over the exact times.
 */
export function statsOf(window: StatsWindow, start: number, end: number, bucketMs: number, attempts: KnownAttempt[]): Stats {
  const inside = attempts.filter((r) => r.at >= start && r.at < end);
  const times = inside.map((r) => r.ms).filter((ms): ms is number => ms !== null).sort((x, y) => x - y);
  const disc = (p: number) => (times.length ? times[Math.max(0, Math.ceil(p * times.length) - 1)] : null);
  const successes = inside.filter((r) => r.ok).length;
  return {
    window,
    attempts: inside.length,
    successes,
    failures: inside.length - successes,
    successRate: inside.length ? successes / inside.length : null,
    latencyMs: { p50: disc(0.5), p95: disc(0.95), p99: disc(0.99) },
    series: Array.from({ length: (end - start) / bucketMs }, (_, i) => {
      const at = start + i * bucketMs;
      const own = inside.filter((r) => r.at >= at && r.at < at + bucketMs);
      return { start: new Date(at).toISOString(), successes: own.filter((r) => r.ok).length, failures: own.filter((r) => !r.ok).length };
    }),
  };
}
