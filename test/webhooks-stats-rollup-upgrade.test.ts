import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRollup } from '../src/webhooks/attempts/rollup.js';
import { ManualClock, type TestApp } from './helpers/app.js';
import { DAY, MINUTE, ROLLUP_START, rollupProbe, startRollupApp, type Known } from './helpers/stats-rollup.js';

/**
 * The statistics rollup of an upgraded installation: a window reads the 5-minute level before the
 * hourly level began and the hourly level before the 6-hour level began, each attempt counted once.
 */
describe('endpoint statistics rollup', () => {
  let t: TestApp;
  const clock = new ManualClock(ROLLUP_START);
  const { createEndpoint, insert, expectRaw, attemptsBetween, hourlyTotal, sixHourTotal, since, watermark } = rollupProbe(() => t);

  let upgraded: string;

  beforeAll(async () => {
    t = await startRollupApp(clock);
    // Rolled up to 18:05 on Jan 1 (a run at 18:12:30, before any attempt), then 10:00 on Jan 28.
    clock.set('2026-01-01T18:12:30.000Z');
    await runRollup(t.ctx);
    clock.set('2026-01-28T10:00:00.000Z');
  });
  afterAll(() => t?.close());

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
