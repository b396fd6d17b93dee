import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../src/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { runRetention } from '../src/ops/retention.js';
import { rollupHorizon, runRollup, type RollupStep } from '../src/webhooks/attempts/rollup.js';
import { ManualClock, startTestApp, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { sample } from './helpers/metrics.js';

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

    expect(await allStats(endpointId)).toEqual(before);
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
    clock.set(start + 30 * MINUTE);
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
    expect(await allStats(endpointId)).toEqual(later);
  });

  it('keeps times of 100 ms and more to two significant digits, and says so in the percentiles', async () => {
    // After the watermark (10:25), so this run rolls them up; the clock moves on to 10:42:30.
    const id = await createEndpoint();
    const times = [7, 100, 104, 105, 155, 994, 995, 1049, 1050, 9949, 9950, 12345, 12500];
    await insert(id, [...times.map((ms, i) => ({ at: Date.parse('2026-01-01T10:26:00.000Z') + i * 1000, ok: i % 2 === 0, ms })), { at: Date.parse('2026-01-01T10:27:00.000Z'), ok: false, ms: null }]);
    clock.set(start + 40 * MINUTE);
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
    clock.set(start + 2 * HOUR);
    const before = await allStats(id);
    // On PostgreSQL a second pool on the same schema stands for a second process; PGlite has one connection.
    const second = t.testDb.schema ? await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 2 }) : null;
    try {
      const other: Pick<AppContext, 'db' | 'clock' | 'config'> = { db: second ?? t.ctx.db, clock, config: t.ctx.config };
      if (second) {
        // While another process holds the schema's rollup lock, a run does nothing at all.
        const holder = await second.begin!();
        await holder.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [0x524f_4c4c]);
        expect(await runRollup(t.ctx)).toEqual({ steps: [], rolledUntil: null, busy: true });
        await holder.commit();
        expect(await watermark()).toBe('2026-01-01T10:35:00.000Z');
      }
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
      await second?.close();
    }
    expect(await watermark()).toBe('2026-01-01T11:55:00.000Z');
    expect(await rolled(id)).toBe(rows.length);
    expect(await rolled()).toBe(await attemptsBefore(new Date('2026-01-01T11:55:00.000Z')));
    expect(await allStats(id)).toEqual(before);
  });

  it('gets past a step that outlasts the statement time-out, in smaller steps, counting each attempt once', async () => {
    const id = await createEndpoint();
    const rows: Known[] = Array.from({ length: 60 }, (_, i) => ({ at: Date.parse('2026-01-01T11:55:00.000Z') + i * 47_000, ok: i % 4 !== 0, ms: (i * 13) % 100 }));
    await insert(id, rows);
    clock.set(start + 3 * HOUR);
    // At 13:02:30 the horizon is 12:55. Another transaction holds, uncommitted, a row the bucket of
    // 12:35 will need: every step over that bucket waits for it until the statement time-out.
    const held = rows.find((r) => r.at >= Date.parse('2026-01-01T12:35:00.000Z'))!;
    const before = await allStats(id);
    const schema = t.testDb.schema;
    const slow = schema ? await openPostgres({ url: POSTGRES_URL, schema, poolSize: 1, timeouts: { statementMs: 300, queryMs: 5_000 } }) : null;
    const holding = schema ? await openPostgres({ url: POSTGRES_URL, schema, poolSize: 1 }) : null;
    try {
      if (slow && holding) {
        const holder = await holding.begin!();
        await holder.query(
          `INSERT INTO webhook_endpoint_stats (endpoint_id, workspace_id, bucket_start, ok, latency_ms, n) VALUES ($1, $2, '2026-01-01T12:35:00Z', $3, $4, 1)`,
          [id, t.demo.workspaces[0].id, held.ok, held.ms],
        );
        const stuck = runRollup({ db: slow, clock, config: t.ctx.config });
        await expect(stuck).rejects.toThrow(/statement timeout/);
        // Smaller and smaller steps rolled everything up to the held bucket.
        expect(await watermark()).toBe('2026-01-01T12:35:00.000Z');
        expect(await rolled(id)).toBe(rows.filter((r) => r.at < Date.parse('2026-01-01T12:35:00.000Z')).length);
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
    expect(await allStats(id)).toEqual(before);
  });

  it('is pruned by retention like the attempts it counts', async () => {
    // SVC_RETENTION is 30 days: at 30 days after 10:00 on Jan 1 minus three days, buckets before 10:00 on Dec 29 go.
    const cutoff = new Date(Date.parse('2026-01-01T10:00:00.000Z') - 3 * DAY);
    clock.set(cutoff.getTime() + 30 * DAY);
    const [{ old, kept }] = await t.ctx.db.query<{ old: number; kept: number }>(
      'SELECT count(*) FILTER (WHERE bucket_start < $1)::int AS old, count(*) FILTER (WHERE bucket_start >= $1)::int AS kept FROM webhook_endpoint_stats',
      [cutoff],
    );
    expect(old).toBeGreaterThan(10);
    const run = await runRetention(t.ctx, { batchSize: 7, pauseMs: 0 });
    expect(run.deleted.webhook_endpoint_stats).toBe(old);
    const [{ left, oldest }] = await t.ctx.db.query<{ left: number; oldest: Date }>('SELECT count(*)::int AS left, min(bucket_start) AS oldest FROM webhook_endpoint_stats');
    expect(left).toBe(kept);
    expect(new Date(oldest).getTime()).toBeGreaterThanOrEqual(cutoff.getTime());
    expect(sample(await t.ctx.metrics.text(), 'svc_retention_deleted_rows_total', { table: 'webhook_endpoint_stats' })).toBe(old);
    expect((await runRetention(t.ctx, { pauseMs: 0 })).deleted.webhook_endpoint_stats).toBe(0);
  });
});
