import { afterEach, describe, expect, it } from 'vitest';
import { INITIAL_SHARE } from '../../src/engine/delivery/lane.js';
import { startWorkers } from '../../src/engine/delivery/workers.js';
import { startTestApp } from '../helpers/app.js';
import { CLAIM, hungBacklog, recordStatements, testWorker } from '../helpers/delivery.js';
import { startReceiver } from '../helpers/receiver.js';

/** Backlogs of endpoints never heard from, after a start (src/engine/delivery/lanes.ts, review). */
describe('the verdict on endpoints never heard from', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('moves a hanging endpoint’s backlog out of the way once, instead of claiming it again row by row', async () => {
    const t = await startTestApp({ config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const hung = await startReceiver(() => ({ hang: true }));
    cleanup.push(() => hung.close());
    // Five endpoints that never answer, three hundred rows due each: the state a restart finds.
    await hungBacklog(t, hung.url, 5, 300);
    const statements = recordStatements(t);
    const worker = testWorker(t);
    await worker.start();
    cleanup.push(() => worker.stop());
    // Stopping, the worker waits for its attempts: the receiver answers them first.
    cleanup.push(async () => hung.release({ status: 200 }));
    await hung.waitFor(5 * INITIAL_SHARE);

    // Past the verdict (1.25 s after the first probes), then as long again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const before = statements.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const claimed = statements.slice(before).filter((s) => CLAIM.test(s.sql)).reduce((sum, s) => sum + s.rows, 0);
    // Claimed again since: only the few whose deferral was still being written when they were moved
    // (at a healthy endpoint's pace, the backlog would be coming back a row every few milliseconds).
    expect(claimed).toBeLessThan(100);
    const [{ due, last }] = await t.ctx.db.query<{ due: number; last: number }>(
      `SELECT count(*) FILTER (WHERE next_attempt_at <= now())::int AS due,
              extract(epoch FROM max(next_attempt_at) - now())::float AS last
         FROM webhook_deliveries WHERE status = 'pending'`,
    );
    // Nothing of it stands in front of the due rows: it is spaced a suspect endpoint's pace apart,
    // an attempt's time (over a second) between rows, three hundred of them an endpoint.
    expect(due).toBeLessThan(5 * INITIAL_SHARE);
    expect(last).toBeGreaterThan(250);
    expect(hung.requests.length).toBe(5 * INITIAL_SHARE);
  });

  it('lets a start wait while the backlog it found is being moved, and not at all when there is none', async () => {
    const t = await startTestApp({ config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const hung = await startReceiver(() => ({ hang: true }));
    cleanup.push(() => hung.close());
    const settled = (workers: { settle(mostMs: number): Promise<void> }, waitMs: number) =>
      Promise.race([workers.settle(60_000).then(() => 'settled'), new Promise((resolve) => setTimeout(resolve, waitMs, 'waiting'))]);

    const idle = await startWorkers(t.ctx, 1, {});
    expect(await settled(idle, 5_000)).toBe('settled');
    await idle.stop();

    await hungBacklog(t, hung.url, 5, 300);
    // Claims may lock rows, but the move cannot write them until this transaction ends.
    const lock = await t.ctx.db.begin();
    await lock.query('LOCK TABLE webhook_deliveries IN SHARE MODE');
    const workers = await startWorkers(t.ctx, 1, {});
    cleanup.push(async () => void (await workers.stop()));
    cleanup.push(async () => hung.release({ status: 200 }));
    // The first claim has offered the backlog: the probes are out, the rest waits to be moved.
    await hung.waitFor(5 * INITIAL_SHARE);
    expect(await settled(workers, 1_000)).toBe('waiting');
    await lock.commit();
    expect(await settled(workers, 10_000)).toBe('settled');
    // No row is left for a claim to take: the probes and the rows queued behind them are held by
    // the worker, the rest went behind the verdict.
    const takeable = await t.ctx.db.tx((q) =>
      q.query(`SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now() FOR UPDATE SKIP LOCKED`),
    );
    expect(takeable).toEqual([]);
  });
});
