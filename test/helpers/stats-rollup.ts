import { expect } from 'vitest';
import type { RollupStep } from '../../src/webhooks/attempts/rollup.js';
import { statsBuckets } from '../../src/webhooks/attempts/stats.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type ManualClock, type TestApp } from './app.js';
import { statsOf, type KnownAttempt } from './stats.js';

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const WINDOWS = ['1h', '24h', '7d'] as const;

/** An attempt as the rollup tests write it: when it started (ms), its verdict and its response time. */
export type Known = KnownAttempt;

/** 10:02:30 on Jan 1, 2026: the time the rollup tests' clock starts at. */
export const ROLLUP_START = Date.parse('2026-01-01T10:02:30.000Z');

/** An app on `clock` whose retention (SVC_RETENTION) is 30 days. */
export const startRollupApp = (clock: ManualClock): Promise<TestApp> => startTestApp({ clock, config: { retentionMs: 30 * DAY } });

/** Steps cover one range without gaps or overlaps, none longer than `maxMs`. */
export const expectContiguous = (steps: RollupStep[], from: number, to: number, maxMs: number) => {
  const sorted = [...steps].sort((a, b) => a.from.getTime() - b.from.getTime());
  let at = from;
  for (const step of sorted) {
    expect(step.from.getTime()).toBe(at);
    expect(step.to.getTime() - step.from.getTime()).toBeLessThanOrEqual(maxMs);
    at = step.to.getTime();
  }
  expect(at).toBe(to);
};

/**
 * Endpoints, attempts, statistics and the rollup's tables of the app `app` returns (started in a
 * beforeAll, so read at each call), through the API of the first demo workspace and its database.
 */
export function rollupProbe(app: () => TestApp) {
  const createEndpoint = async (): Promise<string> =>
    (await app().call(app().demo.workspaces[0].apiKey, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] })).json().id;
  const insert = async (endpoint: string, rows: Known[]) => {
    for (const row of rows) {
      await app().ctx.db.query(
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms, error)
         VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8)`,
        [newId('whd', new Date(row.at)), app().demo.workspaces[0].id, endpoint, new Date(row.at), row.ok, row.ok ? 200 : 500, row.ms, row.ok ? null : 'HTTP 500'],
      );
    }
  };
  const stats = async (id: string, window: string) => {
    const res = await app().call(app().demo.workspaces[0].apiKey, 'GET', `/v1/webhooks/endpoints/${id}/stats?window=${window}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const allStats = async (id: string) => Promise.all(WINDOWS.map((w) => stats(id, w)));
  /** What the raw attempts give for a window at the clock's now: counts, series and percentile_disc of the exact times. */
  const truth = async (id: string, window: (typeof WINDOWS)[number]) => {
    const { start, end, bucketMs } = statsBuckets(window, app().clock.now());
    const rows = await app().ctx.db.query<{ at: Date; ok: boolean; ms: number | null }>(
      'SELECT started_at AS at, ok, response_time_ms AS ms FROM webhook_delivery_attempts WHERE endpoint_id = $1 AND started_at >= $2 AND started_at < $3',
      [id, new Date(start), new Date(end)],
    );
    return statsOf(window, start, end, bucketMs, rows.map((r) => ({ at: new Date(r.at).getTime(), ok: r.ok, ms: r.ms })));
  };
  /**
   * Every window answers what the raw attempts give: counts, rate and series exactly; percentiles
   * within the precision of the level the window reads (1h: two significant digits, so within 5%;
   * 24h and 7d: the hourly level's classes, within 1/32).
   */
  const expectRaw = async (id: string, hourlyPrecision = 1 / 32) => {
    for (const window of WINDOWS) {
      const [got, want] = [await stats(id, window), await truth(id, window)];
      expect({ ...got, latencyMs: null }).toEqual({ ...want, latencyMs: null });
      const precision = window === '1h' ? 0.05 : hourlyPrecision;
      for (const p of ['p50', 'p95', 'p99'] as const) {
        const exact = want.latencyMs[p];
        if (exact === null) expect(got.latencyMs[p]).toBeNull();
        else expect(Math.abs(got.latencyMs[p] - exact), `${window} ${p}: ${got.latencyMs[p]} for ${exact}`).toBeLessThanOrEqual(exact * precision);
      }
    }
  };
  /** Attempts of one endpoint (or all: null) started in [from, to). */
  const attemptsBetween = async (id: string | null, from: Date, to: Date) => {
    const [row] = await app().ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE ($1::text IS NULL OR endpoint_id = $1) AND started_at >= $2 AND started_at < $3',
      [id, from, to],
    );
    return row.n;
  };
  /** Attempts, and attempts with a time, that a coarse level (hourly or 6-hour) counts: of one endpoint, or all. */
  const levelTotal = async (table: string, id?: string) => {
    const [row] = await app().ctx.db.query<{ n: number; timed: number }>(
      `SELECT coalesce(sum(successes + failures), 0)::int AS n, coalesce(sum((SELECT sum(x) FROM unnest(latency_n) x)), 0)::int AS timed
         FROM ${table} WHERE $1::text IS NULL OR endpoint_id = $1`,
      [id ?? null],
    );
    return row;
  };
  const hourlyTotal = (id?: string) => levelTotal('webhook_endpoint_stats_hourly', id);
  const sixHourTotal = (id?: string) => levelTotal('webhook_endpoint_stats_6h', id);
  const since = async () => {
    const [row] = await app().ctx.db.query<{ hourly_since: Date; six_hour_since: Date }>('SELECT hourly_since, six_hour_since FROM webhook_endpoint_stats_rollup');
    return { hourly: new Date(row.hourly_since).toISOString(), sixHour: new Date(row.six_hour_since).toISOString() };
  };
  const rolled = async (id?: string) => {
    const [row] = await app().ctx.db.query<{ n: number }>('SELECT coalesce(sum(n), 0)::int AS n FROM webhook_endpoint_stats WHERE $1::text IS NULL OR endpoint_id = $1', [id ?? null]);
    return row.n;
  };
  const attemptsBefore = async (until: Date, id?: string) => {
    const [row] = await app().ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE started_at < $1 AND ($2::text IS NULL OR endpoint_id = $2)',
      [until, id ?? null],
    );
    return row.n;
  };
  const watermark = async () => {
    const [row] = await app().ctx.db.query<{ rolled_until: Date | null }>('SELECT rolled_until FROM webhook_endpoint_stats_rollup');
    return row.rolled_until === null ? null : new Date(row.rolled_until).toISOString();
  };

  return { createEndpoint, insert, stats, allStats, truth, expectRaw, attemptsBetween, hourlyTotal, sixHourTotal, since, rolled, attemptsBefore, watermark };
}
