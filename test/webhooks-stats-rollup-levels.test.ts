import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latencyClassMs, runRollup } from '../src/webhooks/attempts/rollup.js';
import { ManualClock, type TestApp } from './helpers/app.js';
import { expectContiguous, HOUR, MINUTE, ROLLUP_START, rollupProbe, startRollupApp, WINDOWS, type Known } from './helpers/stats-rollup.js';

/**
 * The statistics rollup's hourly and 6-hour levels: a row per endpoint and hour or 6-hour block,
 * added to across the watermark and across a run stopped between two steps, each attempt counted once.
 */
describe('endpoint statistics rollup', () => {
  let t: TestApp;
  const start = ROLLUP_START;
  const clock = new ManualClock(start);
  const { createEndpoint, insert, allStats, truth, expectRaw, hourlyTotal, sixHourTotal, rolled, attemptsBefore, watermark } = rollupProbe(() => t);

  let straddling: string;

  beforeAll(async () => {
    t = await startRollupApp(clock);
    // A run at 13:02:30, before any attempt: the watermark starts at 12:55.
    clock.set(new Date(start + 3 * HOUR));
    await runRollup(t.ctx);
  });
  afterAll(() => t?.close());

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
});
