import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { runRetention } from '../src/server/retention.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct } from './helpers/delivery.js';
import { sample } from './helpers/metrics.js';

const DAY = 86_400_000;

/** SVC_RETENTION deletes finished deliveries and unreferenced events, in batches, on the injected clock. */
describe('retention', () => {
  let t: TestApp;
  let clock: ManualClock;
  let endpointId: string;

  const ids = async (table: 'events' | 'webhook_deliveries' | 'event_batches') => (await t.ctx.db.query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).map((r) => r.id);
  const deliveries = async () =>
    t.ctx.db.query<{ id: string; event_id: string; status: string }>('SELECT id, event_id, status FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [endpointId]);
  const setStatus = (id: string, status: string) =>
    t.ctx.db.query(`UPDATE webhook_deliveries SET status = $2, next_attempt_at = CASE WHEN $2 = 'pending' THEN next_attempt_at END WHERE id = $1`, [id, status]);

  /** `n` logged attempts of a delivery, as the engine writes them. */
  const addAttempts = async (deliveryId: string, n: number) => {
    for (let attempt = 1; attempt <= n; attempt++) {
      await t.ctx.db.query(
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms)
         SELECT id, $2, workspace_id, endpoint_id, $3, true, 200, 5 FROM webhook_deliveries WHERE id = $1`,
        [deliveryId, attempt, t.clock.now()],
      );
    }
  };
  const attemptsOf = async () =>
    (await t.ctx.db.query<{ delivery_id: string; attempt: number }>('SELECT delivery_id, attempt FROM webhook_delivery_attempts ORDER BY 1, 2')).map(
      (r) => `${r.delivery_id}/${r.attempt}`,
    );

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock, config: { retentionMs: 30 * DAY } });
  });
  afterAll(() => t?.close());

  it('deletes finished deliveries and the events no pending delivery needs, older than the retention, and nothing else', async () => {
    // An event from before any endpoint: no delivery at all.
    await createProduct(t, 'Before any endpoint');
    endpointId = (await addEndpoint(t, 'https://hooks.example.com/in')).id;
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await createProduct(t, `Old ${i}`);
    }
    const old = await deliveries();
    expect(old).toHaveLength(5);
    for (const [i, status] of ['success', 'failed', 'disabled', 'success'].entries()) await setStatus(old[i].id, status);
    // old[4] stays pending: it and its event are kept however old they are.
    for (const d of old) await addAttempts(d.id, 2);

    clock.advance(30 * DAY + 60_000);
    await createProduct(t, 'Recent');
    const recent = (await deliveries()).at(-1)!;
    await setStatus(recent.id, 'success');
    await addAttempts(recent.id, 1);
    const eventsBefore = await ids('events');
    expect(eventsBefore).toHaveLength(7);

    const run = await runRetention(t.ctx, { batchSize: 2, pauseMs: 0 });
    // Attempts go with their deliveries; a kept delivery keeps its whole log.
    // The event log's batches go by age alone: the kept event can no longer be resumed after.
    expect(run.deleted).toEqual({ webhook_deliveries: 4, webhook_delivery_attempts: 8, events: 5, webhook_recoveries: 0, event_batches: 6, webhook_endpoint_stats: 0, webhook_endpoint_stats_hourly: 0, webhook_endpoint_stats_6h: 0 });
    expect(await ids('webhook_deliveries')).toEqual([old[4].id, recent.id]);
    expect(await attemptsOf()).toEqual([`${old[4].id}/1`, `${old[4].id}/2`, `${recent.id}/1`]);
    expect(await ids('events')).toEqual([old[4].event_id, recent.event_id].sort());

    // A second run finds nothing more; once the pending one finishes, it goes with its event.
    expect((await runRetention(t.ctx, { batchSize: 2, pauseMs: 0 })).deleted).toEqual({ webhook_deliveries: 0, webhook_delivery_attempts: 0, events: 0, webhook_recoveries: 0, event_batches: 0, webhook_endpoint_stats: 0, webhook_endpoint_stats_hourly: 0, webhook_endpoint_stats_6h: 0 });
    await setStatus(old[4].id, 'failed');
    expect((await runRetention(t.ctx, { pauseMs: 0 })).deleted).toEqual({ webhook_deliveries: 1, webhook_delivery_attempts: 2, events: 1, webhook_recoveries: 0, event_batches: 0, webhook_endpoint_stats: 0, webhook_endpoint_stats_hourly: 0, webhook_endpoint_stats_6h: 0 });
    expect(await ids('webhook_deliveries')).toEqual([recent.id]);
    expect(await attemptsOf()).toEqual([`${recent.id}/1`]);
    expect(await ids('events')).toEqual([recent.event_id]);

    const metrics = await t.ctx.metrics.text();
    expect(sample(metrics, 'svc_retention_deleted_rows_total', { table: 'webhook_deliveries' })).toBe(5);
    expect(sample(metrics, 'svc_retention_deleted_rows_total', { table: 'events' })).toBe(6);
    expect(sample(metrics, 'svc_retention_deleted_rows_total', { table: 'webhook_delivery_attempts' })).toBe(10);
  });

  it('runs side by side in several processes without deleting a row twice, and stops between batches', async () => {
    // Ids made in the same millisecond sort at random: a later millisecond keeps the first test's
    // remaining delivery (with its one attempt) first in id order, so in the first batch.
    clock.advance(1);
    for (let i = 0; i < 24; i++) await createProduct(t, `Batch ${i}`);
    for (const d of await deliveries()) await setStatus(d.id, 'success');
    clock.advance(31 * DAY);
    const events = (await ids('events')).length;
    const rows = (await ids('webhook_deliveries')).length;

    // A graceful stop ends the run after the batch in progress.
    let batches = 0;
    const stopped = await runRetention(t.ctx, { batchSize: 3, pauseMs: 0, stopped: () => batches++ >= 1 });
    expect(stopped.deleted).toEqual({ webhook_deliveries: 3, webhook_delivery_attempts: 1 });

    const runs = await Promise.all([0, 1, 2].map(() => runRetention(t.ctx, { batchSize: 3, pauseMs: 0 })));
    const sum = (table: string) => runs.reduce((n, r) => n + r.deleted[table], 0);
    expect(sum('webhook_deliveries')).toBe(rows - 3);
    expect(sum('events')).toBe(events);
    expect(await ids('webhook_deliveries')).toEqual([]);
    expect(await ids('events')).toEqual([]);
    expect(await ids('event_batches')).toEqual([]);
  });

  it('keeps everything with SVC_RETENTION=0', async () => {
    const keep = await startTestApp({ clock, config: { retentionMs: 0 } });
    try {
      await createProduct(keep, 'Kept too');
      clock.advance(365 * DAY);
      expect(await runRetention(keep.ctx, { pauseMs: 0 })).toEqual({ deleted: {} });
      expect(await keep.ctx.db.query('SELECT id FROM events')).toHaveLength(1);
    } finally {
      await keep.close();
    }
  });
});
