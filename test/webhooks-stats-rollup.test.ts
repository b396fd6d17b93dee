import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../src/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { runRetention } from '../src/ops/retention.js';
import { latencyClassMs, rollupHorizon, runRollup, type RollupStep } from '../src/webhooks/attempts/rollup.js';
import { statsBuckets } from '../src/webhooks/attempts/stats.js';
import { ManualClock, startTestApp, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { sample } from './helpers/metrics.js';
import { statsOf } from './helpers/stats.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WINDOWS = ['1h', '24h', '7d'] as const;

interface Known {
  at: number;
  ok: boolean;
  ms: number | null;
}

/** The statistics rollup: the same answers from rolled-up and raw attempts, each attempt counted once. */
describe('endpoint statistics rollup', () => {
  let t: TestApp;
  let key: string;
  const start = Date.parse('2026-01-01T10:02:30.000Z');
  const clock = new ManualClock(start);
  let serial = 0;

  const createEndpoint = async (): Promise<string> =>
    (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] })).json().id;
  const insert = async (endpoint: string, rows: Known[]) => {
    for (const row of rows) {
      await t.ctx.db.query(
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms, error)
         VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8)`,
        [`whd_rollup${String(serial++).padStart(16, '0')}`, t.demo.workspaces[0].id, endpoint, new Date(row.at), row.ok, row.ok ? 200 : 500, row.ms, row.ok ? null : 'HTTP 500'],
      );
    }
  };
  const stats = async (id: string, window: string) => {
    const res = await t.call(key, 'GET', `/v1/webhooks/endpoints/${id}/stats?window=${window}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const allStats = async (id: string) => Promise.all(WINDOWS.map((w) => stats(id, w)));
  /** What the raw attempts give for a window at the clock's now: counts, series and percentile_disc of the exact times. */
  const truth = async (id: string, window: (typeof WINDOWS)[number]) => {
    const { start, end, bucketMs } = statsBuckets(window, clock.now());
    const rows = await t.ctx.db.query<{ at: Date; ok: boolean; ms: number | null }>(
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
    const [row] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE ($1::text IS NULL OR endpoint_id = $1) AND started_at >= $2 AND started_at < $3',
      [id, from, to],
    );
    return row.n;
  };
  /** Attempts, and attempts with a time, that a coarse level (hourly or 6-hour) counts: of one endpoint, or all. */
  const levelTotal = async (table: string, id?: string) => {
    const [row] = await t.ctx.db.query<{ n: number; timed: number }>(
      `SELECT coalesce(sum(successes + failures), 0)::int AS n, coalesce(sum((SELECT sum(x) FROM unnest(latency_n) x)), 0)::int AS timed
         FROM ${table} WHERE $1::text IS NULL OR endpoint_id = $1`,
      [id ?? null],
    );
    return row;
  };
  const hourlyTotal = (id?: string) => levelTotal('webhook_endpoint_stats_hourly', id);
  const sixHourTotal = (id?: string) => levelTotal('webhook_endpoint_stats_6h', id);
  const since = async () => {
    const [row] = await t.ctx.db.query<{ hourly_since: Date; six_hour_since: Date }>('SELECT hourly_since, six_hour_since FROM webhook_endpoint_stats_rollup');
    return { hourly: new Date(row.hourly_since).toISOString(), sixHour: new Date(row.six_hour_since).toISOString() };
  };
  const rolled = async (id?: string) => {
    const [row] = await t.ctx.db.query<{ n: number }>('SELECT coalesce(sum(n), 0)::int AS n FROM webhook_endpoint_stats WHERE $1::text IS NULL OR endpoint_id = $1', [id ?? null]);
    return row.n;
  };
  const attemptsBefore = async (until: Date, id?: string) => {
    const [row] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE started_at < $1 AND ($2::text IS NULL OR endpoint_id = $2)',
      [until, id ?? null],
    );
    return row.n;
  };
  const watermark = async () => {
    const [row] = await t.ctx.db.query<{ rolled_until: Date | null }>('SELECT rolled_until FROM webhook_endpoint_stats_rollup');
    return row.rolled_until === null ? null : new Date(row.rolled_until).toISOString();
  };
  /** Steps cover one range without gaps or overlaps, none longer than `maxMs`. */
  const expectContiguous = (steps: RollupStep[], from: number, to: number, maxMs: number) => {
    const sorted = [...steps].sort((a, b) => a.from.getTime() - b.from.getTime());
    let at = from;
    for (const step of sorted) {
      expect(step.from.getTime()).toBe(at);
      expect(step.to.getTime() - step.from.getTime()).toBeLessThanOrEqual(maxMs);
      at = step.to.getTime();
    }
    expect(at).toBe(to);
  };

  let endpointId: string;
  let straddling: string;
  let upgraded: string;

  beforeAll(async () => {
    t = await startTestApp({ clock, config: { retentionMs: 30 * DAY } });
    key = t.demo.workspaces[0].apiKey;
    endpointId = await createEndpoint();
  });
  afterAll(() => t?.close());

  it('answers the same before and after a first rollup, which starts at the oldest attempt and stops short of the margin', async () => {
    // Eight days of attempts below 100 ms (kept exact), some without a time, some failures; and
    // attempts of the last minutes, newer than the margin.
    const rows: Known[] = [];
    for (let i = 0; i < 390; i++) rows.push({ at: start - 8 * DAY + 1234 + i * 29 * MINUTE, ok: i % 5 !== 0, ms: i % 17 === 0 ? null : (i * 37) % 100 });
    for (let i = 0; i < 12; i++) rows.push({ at: Date.parse('2026-01-01T09:06:00.000Z') + i * 4 * MINUTE, ok: i % 3 !== 1, ms: 90 + (i % 9) });
    for (const minutesAgo of [9, 7.5, 6, 4, 2, 0.5]) rows.push({ at: start - minutesAgo * MINUTE, ok: minutesAgo !== 4, ms: Math.round(minutesAgo * 10) });
    await insert(endpointId, rows);
    const other = await createEndpoint();
    await insert(other, [{ at: start - 3 * HOUR, ok: false, ms: 50 }]);

    const before = await allStats(endpointId);
    expect(before[0].attempts).toBe(18);
    expect(await watermark()).toBeNull();

    const run = await runRollup(t.ctx);
    // SVC_LEASE is 60 s: the margin is 3 minutes, so at 10:02:30 the rollup goes up to 09:55.
    const horizon = Date.parse('2026-01-01T09:55:00.000Z');
    expect(rollupHorizon(clock.now(), t.ctx.config.leaseMs).getTime()).toBe(horizon);
    expect(run.busy).toBe(false);
    expect(run.rolledUntil?.getTime()).toBe(horizon);
    expect(await watermark()).toBe('2026-01-01T09:55:00.000Z');
    // From the bucket of the oldest attempt, in steps of at most six hours.
    const oldest = Math.floor(rows[0].at / (5 * MINUTE)) * 5 * MINUTE;
    expectContiguous(run.steps, oldest, horizon, 6 * HOUR);
    expect(run.steps.length).toBe(Math.ceil((horizon - oldest) / (6 * HOUR)));

    // Each attempt before the horizon counted once; the newer ones stay raw and still count.
    const rolledUp = rows.filter((r) => r.at < horizon).length;
    expect(await rolled(endpointId)).toBe(rolledUp);
    expect(run.steps.reduce((n, s) => n + s.attempts, 0)).toBe(rolledUp + 1);
    const [{ newest }] = await t.ctx.db.query<{ newest: Date }>('SELECT max(bucket_start) AS newest FROM webhook_endpoint_stats');
    expect(new Date(newest).getTime()).toBeLessThan(horizon);
    expect(rows.filter((r) => r.at >= horizon)).toHaveLength(5);

    // The hourly and 6-hour levels count the same attempts, from the first run's start on.
    const total = { n: rolledUp, timed: rows.filter((r) => r.at < horizon && r.ms !== null).length };
    expect(await hourlyTotal(endpointId)).toEqual(total);
    expect(await sixHourTotal(endpointId)).toEqual(total);
    expect(await since()).toEqual({ hourly: new Date(oldest).toISOString(), sixHour: new Date(oldest).toISOString() });

    // The last hour reads the 5-minute level, exact below 100 ms; the day the hourly one, the week the 6-hour one.
    const after = await allStats(endpointId);
    expect(after[0]).toEqual(before[0]);
    await expectRaw(endpointId);
    expect(before[0].series.at(-1)).toEqual({ start: '2026-01-01T10:00:00.000Z', successes: 2, failures: 0 });
  });

  it('counts nothing twice: a second run adds nothing, a later one only what came since', async () => {
    const before = await allStats(endpointId);
    const total = await rolled();
    const again = await runRollup(t.ctx);
    expect(again.steps).toEqual([]);
    expect(again.rolledUntil?.toISOString()).toBe('2026-01-01T09:55:00.000Z');
    expect(await rolled()).toBe(total);
    expect(await allStats(endpointId)).toEqual(before);

    // Half an hour on: attempts of the meantime (one written only now, long after it started, but
    // after the watermark), then a run that rolls up to 10:25.
    clock.set(new Date(start + 30 * MINUTE));
    await insert(endpointId, [
      { at: start + 5 * MINUTE, ok: true, ms: 12 },
      { at: start + 17 * MINUTE, ok: false, ms: null },
      { at: start + 24 * MINUTE, ok: true, ms: 99 },
      { at: start + 29 * MINUTE, ok: true, ms: 1 },
    ]);
    const later = await allStats(endpointId);
    const run = await runRollup(t.ctx);
    expectContiguous(run.steps, Date.parse('2026-01-01T09:55:00.000Z'), Date.parse('2026-01-01T10:25:00.000Z'), 6 * HOUR);
    expect(await rolled()).toBe(await attemptsBefore(new Date('2026-01-01T10:25:00.000Z')));
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T10:25:00.000Z')));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T10:25:00.000Z')));
    expect((await allStats(endpointId))[0]).toEqual(later[0]);
    await expectRaw(endpointId);
  });

  it('keeps times of 100 ms and more to two significant digits, and says so in the percentiles', async () => {
    // After the watermark (10:25), so this run rolls them up; the clock moves on to 10:42:30.
    const id = await createEndpoint();
    const times = [7, 100, 104, 105, 155, 994, 995, 1049, 1050, 9949, 9950, 12345, 12500];
    await insert(id, [...times.map((ms, i) => ({ at: Date.parse('2026-01-01T10:26:00.000Z') + i * 1000, ok: i % 2 === 0, ms })), { at: Date.parse('2026-01-01T10:27:00.000Z'), ok: false, ms: null }]);
    clock.set(new Date(start + 40 * MINUTE));
    const raw = await stats(id, '1h');
    expect(raw.latencyMs).toEqual({ p50: 995, p95: 12500, p99: 12500 });

    await runRollup(t.ctx);
    expect(await watermark()).toBe('2026-01-01T10:35:00.000Z');
    const kept = await t.ctx.db.query<{ latency_ms: number; n: number }>(
      'SELECT latency_ms, sum(n)::int AS n FROM webhook_endpoint_stats WHERE endpoint_id = $1 GROUP BY 1 ORDER BY 1',
      [id],
    );
    expect(Object.fromEntries(kept.map((r) => [r.latency_ms, r.n]))).toEqual({
      '-1': 1, 7: 1, 100: 2, 110: 1, 160: 1, 990: 1, 1000: 2, 1100: 1, 9900: 1, 10000: 1, 12000: 1, 13000: 1,
    });
    const after = await stats(id, '1h');
    expect(after.latencyMs).toEqual({ p50: 1000, p95: 13000, p99: 13000 });
    // Counts and buckets do not change.
    expect({ ...after, latencyMs: null }).toEqual({ ...raw, latencyMs: null });
  });

  it('lets two processes run at once without counting an attempt twice', async () => {
    const id = await createEndpoint();
    const rows: Known[] = Array.from({ length: 120 }, (_, i) => ({ at: Date.parse('2026-01-01T10:35:00.000Z') + i * 37_000, ok: i % 7 !== 0, ms: i % 90 }));
    await insert(id, rows);
    clock.set(new Date(start + 2 * HOUR));
    const before = await allStats(id);
    // A second pool on the same schema stands for a second process.
    const second = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 2 });
    try {
      const other: Pick<AppContext, 'db' | 'clock' | 'config'> = { db: second, clock, config: t.ctx.config };
      // While another process holds the schema's rollup lock, a run does nothing at all.
      const holder = await second.begin();
      await holder.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [0x524f_4c4c]);
      expect(await runRollup(t.ctx)).toEqual({ steps: [], rolledUntil: null, busy: true });
      await holder.commit();
      expect(await watermark()).toBe('2026-01-01T10:35:00.000Z');
      const runs = await Promise.all([runRollup(t.ctx, { stepMs: 5 * MINUTE }), runRollup(other, { stepMs: 5 * MINUTE }), runRollup(t.ctx, { stepMs: 5 * MINUTE })]);
      expectContiguous(
        runs.flatMap((r) => r.steps),
        Date.parse('2026-01-01T10:35:00.000Z'),
        Date.parse('2026-01-01T11:55:00.000Z'),
        5 * MINUTE,
      );
      // Whichever run was left out by the lock, the rest is done by the next one.
      await runRollup(other);
    } finally {
      await second.close();
    }
    expect(await watermark()).toBe('2026-01-01T11:55:00.000Z');
    expect(await rolled(id)).toBe(rows.length);
    expect(await rolled()).toBe(await attemptsBefore(new Date('2026-01-01T11:55:00.000Z')));
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T11:55:00.000Z')));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T11:55:00.000Z')));
    expect((await allStats(id))[0]).toEqual(before[0]);
    await expectRaw(id);
  });

  it('gets past a step that outlasts the statement time-out, in smaller steps, counting each attempt once', async () => {
    const id = await createEndpoint();
    const rows: Known[] = Array.from({ length: 60 }, (_, i) => ({ at: Date.parse('2026-01-01T11:55:00.000Z') + i * 47_000, ok: i % 4 !== 0, ms: (i * 13) % 100 }));
    await insert(id, rows);
    clock.set(new Date(start + 3 * HOUR));
    // At 13:02:30 the horizon is 12:55. Another transaction holds, uncommitted, a row the bucket of
    // 12:35 will need: every step over that bucket waits for it until the statement time-out.
    const held = rows.find((r) => r.at >= Date.parse('2026-01-01T12:35:00.000Z'))!;
    const before = await allStats(id);
    const schema = t.testDb.schema;
    const slow = schema ? await openPostgres({ url: POSTGRES_URL, schema, poolSize: 1, timeouts: { statementMs: 300, queryMs: 5_000 } }) : null;
    const holding = schema ? await openPostgres({ url: POSTGRES_URL, schema, poolSize: 1 }) : null;
    try {
      if (slow && holding) {
        const holder = await holding.begin();
        await holder.query(
          `INSERT INTO webhook_endpoint_stats (endpoint_id, workspace_id, bucket_start, ok, latency_ms, n) VALUES ($1, $2, '2026-01-01T12:35:00Z', $3, $4, 1)`,
          [id, t.demo.workspaces[0].id, held.ok, held.ms],
        );
        const stuck = runRollup({ db: slow, clock, config: t.ctx.config });
        await expect(stuck).rejects.toThrow(/statement timeout/);
        // Smaller and smaller steps rolled everything up to the held bucket.
        expect(await watermark()).toBe('2026-01-01T12:35:00.000Z');
        expect(await rolled(id)).toBe(rows.filter((r) => r.at < Date.parse('2026-01-01T12:35:00.000Z')).length);
        expect((await hourlyTotal(id)).n).toBe(await rolled(id));
        expect((await sixHourTotal(id)).n).toBe(await rolled(id));
        await holder.rollback();
      }
      const rest = await runRollup(t.ctx);
      expect(rest.rolledUntil?.toISOString()).toBe('2026-01-01T12:55:00.000Z');
    } finally {
      await slow?.close();
      await holding?.close();
    }
    expect(await rolled(id)).toBe(rows.filter((r) => r.at < Date.parse('2026-01-01T12:55:00.000Z')).length);
    expect(await rolled()).toBe(await attemptsBefore(new Date('2026-01-01T12:55:00.000Z')));
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T12:55:00.000Z')));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T12:55:00.000Z')));
    expect((await allStats(id))[0]).toEqual(before[0]);
    await expectRaw(id);
  });

  it('reads the day from one row per endpoint and hour, the week from one per 6 hours, with percentiles within 1/32', async () => {
    // Four hours from the watermark (12:55) of a busy endpoint: 20 attempts per 5 minutes, times
    // spread from 20 ms to 5 s (hundreds of distinct rounded times), some failures, some untimed.
    const id = await createEndpoint();
    const from = Date.parse('2026-01-01T12:55:00.000Z');
    const rows: Known[] = Array.from({ length: 960 }, (_, i) => ({
      at: from + i * 15_000,
      ok: i % 9 !== 0,
      ms: i % 50 === 0 ? null : Math.round(20 * 250 ** (((i * 7919) % 1000) / 1000)),
    }));
    await insert(id, rows);
    // Times on the edges of the classes, in another endpoint.
    const edges = [0, 1, 31, 32, 33, 34, 63, 64, 67, 68, 100, 1023, 1024, 1087, 1088, 65_535, 600_000];
    const other = await createEndpoint();
    await insert(other, edges.map((ms, i) => ({ at: from + i * 1000, ok: true, ms })));
    // An endpoint whose hour of 16:00 this run counts in part (the next test adds the rest).
    straddling = await createEndpoint();
    await insert(straddling, [{ at: Date.parse('2026-01-01T16:10:00.000Z'), ok: true, ms: 40 }]);
    clock.set(new Date(start + 7 * HOUR));
    const before = await allStats(id);
    await runRollup(t.ctx);
    expect(await watermark()).toBe('2026-01-01T16:55:00.000Z');

    // One row per hour touched (12:55-16:55: five hours), however many times the hour holds.
    const hours = await t.ctx.db.query<{ hour_start: Date; latency_ms: number[]; latency_n: number[] }>(
      'SELECT hour_start, latency_ms, latency_n FROM webhook_endpoint_stats_hourly WHERE endpoint_id = $1 ORDER BY hour_start',
      [id],
    );
    expect(hours.map((h) => new Date(h.hour_start).toISOString().slice(11, 16))).toEqual(['12:00', '13:00', '14:00', '15:00', '16:00']);
    expect(await hourlyTotal(id)).toEqual({ n: rows.length, timed: rows.filter((r) => r.ms !== null).length });
    // One row for the 6-hour block that holds them all (12:00-18:00): the hours added up, class by class.
    const blocks = await t.ctx.db.query<{ block_start: Date; latency_ms: number[]; latency_n: number[] }>(
      'SELECT block_start, latency_ms, latency_n FROM webhook_endpoint_stats_6h WHERE endpoint_id = $1',
      [id],
    );
    expect(blocks.map((b) => new Date(b.block_start).toISOString())).toEqual(['2026-01-01T12:00:00.000Z']);
    const summed = new Map<number, number>();
    for (const h of hours) h.latency_ms.forEach((ms, i) => summed.set(ms, (summed.get(ms) ?? 0) + h.latency_n[i]));
    const byClass = [...summed].sort(([x], [y]) => x - y);
    expect(blocks[0].latency_ms).toEqual(byClass.map(([ms]) => ms));
    expect(blocks[0].latency_n).toEqual(byClass.map(([, n]) => n));
    expect(await sixHourTotal(id)).toEqual(await hourlyTotal(id));
    const fine = await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoint_stats WHERE endpoint_id = $1', [id]);
    expect(fine[0].n).toBeGreaterThan(300);

    // The classes are those latencyClassMs names, in ascending order.
    const [edge] = await t.ctx.db.query<{ latency_ms: number[]; latency_n: number[] }>(
      'SELECT latency_ms, latency_n FROM webhook_endpoint_stats_hourly WHERE endpoint_id = $1',
      [other],
    );
    const classes = new Map<number, number>();
    for (const ms of edges) classes.set(latencyClassMs(ms), (classes.get(latencyClassMs(ms)) ?? 0) + 1);
    expect(edge.latency_ms).toEqual([...classes.keys()]);
    expect(edge.latency_n).toEqual([...classes.values()]);
    expect(edge.latency_ms).toEqual([0, 1, 31, 33, 35, 63, 66, 70, 102, 1008, 1056, 1120, 64_512, 606_208]);
    const [edgeBlock] = await t.ctx.db.query<{ latency_ms: number[]; latency_n: number[] }>(
      'SELECT latency_ms, latency_n FROM webhook_endpoint_stats_6h WHERE endpoint_id = $1',
      [other],
    );
    expect(edgeBlock).toEqual(edge);
    for (const ms of edges) expect(Math.abs(latencyClassMs(ms) - ms)).toBeLessThanOrEqual(ms / 32);

    // Counts and series exact; percentiles those of the classes, every attempt being rolled up.
    await expectRaw(id);
    const after = await allStats(id);
    for (const [w, window] of WINDOWS.entries()) {
      if (window === '1h') continue;
      expect({ ...after[w], latencyMs: null }).toEqual({ ...before[w], latencyMs: null });
      const exact = (await truth(id, window)).latencyMs;
      expect(after[w].latencyMs).toEqual({ p50: latencyClassMs(exact.p50!), p95: latencyClassMs(exact.p95!), p99: latencyClassMs(exact.p99!) });
    }
  });

  it('counts attempts on both sides of the watermark once, and adds a later part of an hour, and of a 6-hour block, to its row', async () => {
    // The watermark is at 16:55: attempts from there on are read raw, up to the next run.
    const id = straddling;
    const edges = ['16:55:00.000', '16:57:00.000', '16:59:59.999', '17:00:00.000', '17:04:59.999', '17:05:00.000', '17:05:00.001'];
    const rows = edges.map((time, i) => ({ at: Date.parse(`2026-01-01T${time}Z`), ok: i % 2 === 0, ms: 30 + i * 37 }));
    await insert(id, rows);
    await expectRaw(id);

    // At 17:10:30 the horizon is 17:05: the run adds [16:55, 17:00) to 16:00's row and makes 17:00's.
    clock.set('2026-01-01T17:10:30.000Z');
    await expectRaw(id);
    await runRollup(t.ctx);
    expect(await watermark()).toBe('2026-01-01T17:05:00.000Z');
    await expectRaw(id);
    const hours = await t.ctx.db.query<{ hour_start: Date; successes: number; failures: number; latency_ms: number[]; latency_n: number[] }>(
      'SELECT hour_start, successes, failures, latency_ms, latency_n FROM webhook_endpoint_stats_hourly WHERE endpoint_id = $1 ORDER BY hour_start',
      [id],
    );
    const classes = (...ms: number[]) => ms.map((x) => latencyClassMs(x));
    expect(hours.map((h) => ({ ...h, hour_start: new Date(h.hour_start).toISOString() }))).toEqual([
      // 16:10 (40 ms, the earlier run's), then 16:55 (30), 16:57 (67, failed), 16:59:59.999 (104).
      { hour_start: '2026-01-01T16:00:00.000Z', successes: 3, failures: 1, latency_ms: classes(30, 40, 67, 104), latency_n: [1, 1, 1, 1] },
      // 17:00 (141, failed), 17:04:59.999 (178); 17:05 and after are the next run's.
      { hour_start: '2026-01-01T17:00:00.000Z', successes: 1, failures: 1, latency_ms: classes(141, 178), latency_n: [1, 1] },
    ]);
    // The block of 12:00-18:00 got 16:10 from the earlier run and the rest from this one.
    const blocks = await t.ctx.db.query<{ block_start: Date; successes: number; failures: number; latency_ms: number[]; latency_n: number[] }>(
      'SELECT block_start, successes, failures, latency_ms, latency_n FROM webhook_endpoint_stats_6h WHERE endpoint_id = $1',
      [id],
    );
    expect(blocks.map((b) => ({ ...b, block_start: new Date(b.block_start).toISOString() }))).toEqual([
      { block_start: '2026-01-01T12:00:00.000Z', successes: 4, failures: 2, latency_ms: classes(30, 40, 67, 104, 141, 178), latency_n: [1, 1, 1, 1, 1, 1] },
    ]);
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T17:05:00.000Z')));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T17:05:00.000Z')));
  });

  it('resumes a run stopped between two steps where it stopped, counting nothing twice', async () => {
    const id = await createEndpoint();
    const rows: Known[] = Array.from({ length: 90 }, (_, i) => ({ at: Date.parse('2026-01-01T17:05:00.000Z') + i * 40_000, ok: i % 6 !== 0, ms: 20 + ((i * 53) % 400) }));
    await insert(id, rows);
    // At 18:12:30 the horizon is 18:05; a graceful stop after three steps of 5 minutes leaves the watermark at 17:20.
    clock.set('2026-01-01T18:12:30.000Z');
    let asked = 0;
    const stopped = await runRollup(t.ctx, { stepMs: 5 * MINUTE, stopped: () => ++asked > 3 });
    expect(stopped.steps).toHaveLength(3);
    expect(await watermark()).toBe('2026-01-01T17:20:00.000Z');
    const until = new Date('2026-01-01T17:20:00.000Z');
    expect(await rolled()).toBe(await attemptsBefore(until));
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(until));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(until));
    await expectRaw(id);

    const rest = await runRollup(t.ctx);
    expectContiguous(rest.steps, until.getTime(), Date.parse('2026-01-01T18:05:00.000Z'), 6 * HOUR);
    expect(await rolled()).toBe(await attemptsBefore(new Date('2026-01-01T18:05:00.000Z')));
    expect((await hourlyTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T18:05:00.000Z')));
    expect((await sixHourTotal()).n).toBe(await attemptsBefore(new Date('2026-01-01T18:05:00.000Z')));
    expect((await hourlyTotal(id)).n).toBe(rows.filter((r) => r.at < Date.parse('2026-01-01T18:05:00.000Z')).length);
    expect((await sixHourTotal(id)).n).toBe(rows.filter((r) => r.at < Date.parse('2026-01-01T18:05:00.000Z')).length);
    await expectRaw(id);
  });

  it('is pruned by retention like the attempts it counts, every level', async () => {
    // SVC_RETENTION is 30 days: at 30 days after 10:00 on Jan 1 minus three days, buckets, hours and
    // 6-hour blocks that ended before 10:00 on Dec 29 go (the block of 06:00-12:00 stays).
    const cutoff = new Date(Date.parse('2026-01-01T10:00:00.000Z') - 3 * DAY);
    clock.set(new Date(cutoff.getTime() + 30 * DAY));
    const levels = [
      { table: 'webhook_endpoint_stats', time: 'bucket_start', length: '5 minutes' },
      { table: 'webhook_endpoint_stats_hourly', time: 'hour_start', length: '1 hour' },
      { table: 'webhook_endpoint_stats_6h', time: 'block_start', length: '6 hours' },
    ];
    const before = [];
    for (const { table, time, length } of levels) {
      const ended = `${time} + interval '${length}' <= $1`;
      const [row] = await t.ctx.db.query<{ old: number; kept: number }>(`SELECT count(*) FILTER (WHERE ${ended})::int AS old, count(*) FILTER (WHERE NOT (${ended}))::int AS kept FROM ${table}`, [
        cutoff,
      ]);
      expect(row.old).toBeGreaterThan(10);
      expect(row.kept).toBeGreaterThan(0);
      before.push(row);
    }
    const run = await runRetention(t.ctx, { batchSize: 7, pauseMs: 0 });
    for (const [i, { table, time, length }] of levels.entries()) {
      expect(run.deleted[table]).toBe(before[i].old);
      const [{ left, oldest_end }] = await t.ctx.db.query<{ left: number; oldest_end: Date }>(
        `SELECT count(*)::int AS left, min(${time}) + interval '${length}' AS oldest_end FROM ${table}`,
      );
      expect(left).toBe(before[i].kept);
      expect(new Date(oldest_end).getTime()).toBeGreaterThan(cutoff.getTime());
      expect(sample(await t.ctx.metrics.text(), 'svc_retention_deleted_rows_total', { table })).toBe(before[i].old);
    }
    const again = await runRetention(t.ctx, { pauseMs: 0 });
    expect([again.deleted.webhook_endpoint_stats, again.deleted.webhook_endpoint_stats_hourly, again.deleted.webhook_endpoint_stats_6h]).toEqual([0, 0, 0]);
    const [{ block }] = await t.ctx.db.query<{ block: Date }>('SELECT min(block_start) AS block FROM webhook_endpoint_stats_6h');
    expect(new Date(block).toISOString()).toBe('2025-12-29T06:00:00.000Z');
  });

  it('reads the 5-minute level before the hourly level began, as after upgrading a rolled-up installation', async () => {
    // A day of attempts rolled up into every level (the run goes from 18:05 on Jan 1 to the horizon).
    const now = clock.now().getTime();
    const id = await createEndpoint();
    const rows: Known[] = Array.from({ length: 200 }, (_, i) => ({ at: now - DAY + i * 7 * MINUTE, ok: i % 8 !== 0, ms: i % 30 === 0 ? null : 20 + ((i * 97) % 900) }));
    await insert(id, rows.filter((r) => r.at < now - 10 * MINUTE));
    await runRollup(t.ctx);
    const mark = (await watermark())!;
    // What migrations/014 and 015 applied together leave: the 5-minute level alone below the
    // watermark, the hourly and 6-hour levels from it.
    await t.ctx.db.query('DELETE FROM webhook_endpoint_stats_hourly');
    await t.ctx.db.query('DELETE FROM webhook_endpoint_stats_6h');
    await t.ctx.db.query('UPDATE webhook_endpoint_stats_rollup SET hourly_since = rolled_until, six_hour_since = rolled_until');
    // Below hourly_since the precision is the 5-minute level's (two significant digits).
    await expectRaw(id, 0.05);

    // Attempts of the next minutes: the hourly level counts them from hourly_since on.
    await insert(id, rows.filter((r) => r.at >= now - 10 * MINUTE));
    await insert(id, [{ at: now + 2 * MINUTE, ok: false, ms: 250 }]);
    clock.set(new Date(now + 20 * MINUTE));
    await runRollup(t.ctx);
    expect(Date.parse((await watermark())!)).toBeGreaterThan(Date.parse(mark));
    expect((await hourlyTotal(id)).n).toBe(await attemptsBetween(id, new Date(mark), new Date((await watermark())!)));
    expect((await sixHourTotal(id)).n).toBe(await attemptsBetween(id, new Date(mark), new Date((await watermark())!)));
    await expectRaw(id, 0.05);
    upgraded = id;
  });

  it('reads the hourly level before the 6-hour level began, as after upgrading past migrations/015 only', async () => {
    // The last run went up to 10:15 on Jan 28 (hourly_since 09:55). Attempts from there to 13:40,
    // below 100 ms (which every level keeps within 1/32), rolled up into every level.
    const id = await createEndpoint();
    const at = (time: string) => Date.parse(`2026-01-28T${time}Z`);
    const early: Known[] = Array.from({ length: 52 }, (_, i) => ({ at: at('10:15:00') + i * 4 * MINUTE, ok: i % 6 !== 0, ms: i % 13 === 0 ? null : 20 + ((i * 37) % 80) }));
    await insert(id, early);
    clock.set(new Date(at('13:47:30')));
    await runRollup(t.ctx);
    expect(await watermark()).toBe('2026-01-28T13:40:00.000Z');

    // What migrations/015 leaves on an installation that has the hourly level: the 6-hour level
    // empty, starting at the watermark, which is not on an hour.
    await t.ctx.db.query('DELETE FROM webhook_endpoint_stats_6h');
    await t.ctx.db.query('UPDATE webhook_endpoint_stats_rollup SET six_hour_since = rolled_until');
    expect(await since()).toEqual({ hourly: '2026-01-28T09:55:00.000Z', sixHour: '2026-01-28T13:40:00.000Z' });
    // The week: the hourly level's 10:00-13:00, the 5-minute level's 13:00-13:40 (the hour of 13:00
    // also holds what the 6-hour level will count), nothing from the 6-hour level yet.
    await expectRaw(id);
    await expectRaw(upgraded, 0.05);

    // Attempts from the watermark on, over the block edge of 18:00, spread from 20 ms to 920 ms.
    const late: Known[] = Array.from({ length: 88 }, (_, i) => ({ at: at('13:40:00') + i * 4 * MINUTE, ok: i % 7 !== 0, ms: i % 11 === 0 ? null : 20 + ((i * 97) % 900) }));
    for (const time of ['17:59:59.999', '18:00:00.000', '19:24:59.999', '19:25:00.000']) late.push({ at: at(time), ok: true, ms: 33 });
    await insert(id, late);
    clock.set(new Date(at('19:32:30')));
    await expectRaw(id);
    await runRollup(t.ctx);
    expect(await watermark()).toBe('2026-01-28T19:25:00.000Z');

    // The 6-hour level counts the attempts from six_hour_since on, each in its block; the hourly
    // level all of them from hourly_since on.
    const blocks = await t.ctx.db.query<{ block_start: Date; n: number }>(
      'SELECT block_start, successes + failures AS n FROM webhook_endpoint_stats_6h WHERE endpoint_id = $1 ORDER BY block_start',
      [id],
    );
    expect(blocks.map((b) => ({ start: new Date(b.block_start).toISOString(), n: b.n }))).toEqual([
      { start: '2026-01-28T12:00:00.000Z', n: await attemptsBetween(id, new Date(at('13:40:00')), new Date(at('18:00:00'))) },
      { start: '2026-01-28T18:00:00.000Z', n: await attemptsBetween(id, new Date(at('18:00:00')), new Date(at('19:25:00'))) },
    ]);
    expect((await hourlyTotal(id)).n).toBe(early.length + late.filter((r) => r.at < at('19:25:00')).length);
    expect((await sixHourTotal()).n).toBe(await attemptsBetween(null, new Date(at('13:40:00')), new Date(at('19:25:00'))));
    // Each attempt counted once: the 6-hour level, the hourly level before it, the 5-minute level
    // between 13:00 and 13:40, the attempts from 19:25 on.
    await expectRaw(id);
    await expectRaw(upgraded, 0.05);
  });
});
