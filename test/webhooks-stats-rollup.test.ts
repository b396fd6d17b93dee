import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../src/server/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { runRetention } from '../src/server/retention.js';
import { rollupHorizon, runRollup } from '../src/webhooks/attempts/rollup.js';
import { ManualClock, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { sample } from './helpers/metrics.js';
import { DAY, expectContiguous, HOUR, MINUTE, ROLLUP_START, rollupProbe, startRollupApp, type Known } from './helpers/stats-rollup.js';

/** The statistics rollup: the same answers from rolled-up and raw attempts, each attempt counted once. */
describe('endpoint statistics rollup', () => {
  let t: TestApp;
  const start = ROLLUP_START;
  const clock = new ManualClock(start);
  const { createEndpoint, insert, stats, allStats, expectRaw, hourlyTotal, sixHourTotal, since, rolled, attemptsBefore, watermark } = rollupProbe(() => t);

  let endpointId: string;

  beforeAll(async () => {
    t = await startRollupApp(clock);
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
});
