import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/lib/config.js';
import { ManualClock } from '../../src/lib/clock.js';
import { runAttempt } from '../../src/engine/delivery/attempt.js';
import { recordOutcomes } from '../../src/engine/delivery/outcome.js';
import { createSender } from '../../src/engine/destinations/destinations.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, endpointState, eventually, leaseDue, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Behaviour, type Receiver } from '../helpers/receiver.js';

/** The background loop: real time, wake-ups, concurrency and graceful stop. */
describe('delivery worker', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(config: Partial<Config>, script?: (r: unknown, i: number) => Behaviour) {
    const t = await startTestApp({ config: { allowPrivateTargets: true, ...config } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver(script);
    cleanup.push(() => receiver.close());
    const endpoint = await addEndpoint(t, receiver.url);
    return { t, receiver, endpointId: endpoint.id };
  }

  async function started(t: TestApp, concurrency?: number) {
    const worker = testWorker(t, { concurrency });
    await worker.start();
    cleanup.push(() => worker.stop());
    return worker;
  }

  it('wakes on NOTIFY when a change commits, without waiting for a poll', async () => {
    const { t, receiver, endpointId } = await setup({ pollIntervalMs: 3_600_000 });
    await started(t);
    await createProduct(t);
    await receiver.waitFor(1);
    await eventually(async () => (await deliveriesOf(t, endpointId))[0].status === 'success');
  });

  it('picks up retries as they come due by polling', async () => {
    const { t, receiver, endpointId } = await setup({ pollIntervalMs: 20, retryScheduleMs: [50] }, (_r, i) => ({ status: i === 0 ? 500 : 204 }));
    await started(t);
    await createProduct(t);
    await eventually(async () => (await deliveriesOf(t, endpointId))[0].status === 'success');
    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ attempt: 2, response_status: 204, error: null });
    expect(receiver.requests.map((r) => r.flatHeaders['webhook-id'])).toEqual([row.id, row.id]);
  });

  it('keeps a hanging endpoint to its share of attempts; stop() lets them finish, records them and leaves the rest due soon', async () => {
    const { t, receiver, endpointId } = await setup({ pollIntervalMs: 20 }, () => ({ hang: true }));
    const worker = testWorker(t, { concurrency: 3 });
    await worker.start();
    for (let i = 0; i < 5; i++) await createProduct(t, `Hat ${i}`);
    await receiver.waitFor(3);
    // Several poll rounds pass with the whole concurrency in flight: no fourth request.
    await sleep(200);
    expect(receiver.requests).toHaveLength(3);

    const stopping = worker.stop();
    receiver.release({ status: 200 });
    await stopping;
    const rows = await deliveriesOf(t, endpointId);
    expect(rows.filter((r) => r.status === 'success')).toHaveLength(3);
    const unsent = rows.filter((r) => r.status === 'pending' && r.attempt === 0);
    expect(unsent).toHaveLength(2);
    // Rows taken but never started are handed back or put off, never left to a lease.
    for (const row of unsent) expect(new Date(row.next_attempt_at!).getTime()).toBeLessThan(Date.now() + t.ctx.config.leaseMs / 2);
    expect(receiver.requests).toHaveLength(3);
  });
});

/** Deterministic runs with runDue() on one app and a ManualClock; each test has its own endpoint. */
describe('delivery worker runs', () => {
  const clock = new ManualClock();
  let t: TestApp;
  let current: { receiver: Receiver; endpointId: string } | null = null;
  beforeAll(async () => {
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [1000] } });
  });
  afterEach(async () => {
    if (!current) return;
    await current.receiver.close();
    // Gone with its deliveries, so later products fan out to the next test's endpoint only.
    await t.ctx.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [current.endpointId]);
    current = null;
  });
  afterAll(() => t.close());

  async function target(script?: (r: unknown, i: number) => Behaviour) {
    const receiver = await startReceiver(script);
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    current = { receiver, endpointId };
    return current;
  }

  it('shares due rows between workers without sending any twice', async () => {
    const { receiver, endpointId } = await target();
    for (let i = 0; i < 40; i++) await createProduct(t, `Hat ${i}`);
    const counts = await Promise.all([testWorker(t, { concurrency: 4 }).runDue(), testWorker(t, { concurrency: 4 }).runDue()]);
    expect(counts[0] + counts[1]).toBe(40);
    const ids = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    expect(new Set(ids).size).toBe(40);
    expect((await deliveriesOf(t, endpointId)).every((r) => r.status === 'success' && r.attempt === 1)).toBe(true);
  });

  it('ends a delivery disabled, with its attempt logged, when the endpoint is paused while the request is in flight', async () => {
    const { receiver, endpointId } = await target(() => ({ hang: true }));
    await createProduct(t);
    const worker = testWorker(t);
    const running = worker.runDue();
    await receiver.waitFor(1);
    const paused = await t.call(t.demo.workspaces[0].apiKey, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { active: false });
    expect(paused.statusCode).toBe(200);
    receiver.release({ status: 500 });
    await running;

    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'disabled', attempt: 1, error: 'HTTP 500', response_status: 500, next_attempt_at: null, delivered_at: null });
    expect(await endpointState(t, endpointId)).toMatchObject({ active: false, disabled_reason: 'manual', consecutive_failures: 0 });
    clock.advance(60_000);
    expect(await worker.runDue()).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });

  it('does not retry a failed attempt, nor send a claimed row, once the endpoint is inactive', async () => {
    const { receiver, endpointId } = await target(() => ({ hang: true }));
    await createProduct(t);
    const worker = testWorker(t);
    const running = worker.runDue();
    await receiver.waitFor(1);
    // Inactive behind the API's back: the pending rows are left as they are.
    await t.ctx.db.query('UPDATE webhook_endpoints SET active = false WHERE id = $1', [endpointId]);
    clock.advance(1000);
    await createProduct(t, 'Second hat');
    receiver.release({ status: 500 });
    await running;
    const [first] = await deliveriesOf(t, endpointId);
    expect(first).toMatchObject({ status: 'disabled', attempt: 1, error: 'HTTP 500', next_attempt_at: null });

    // The fan-out queued the second event as disabled. Make that row pending by hand, as a row queued
    // just before the endpoint turned inactive would be, to see the check made at claim time.
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $2 WHERE endpoint_id = $1 AND attempt = 0", [endpointId, clock.now()]);
    expect(await worker.runDue()).toBe(1);
    const rows = await deliveriesOf(t, endpointId);
    expect(rows[1]).toMatchObject({ status: 'disabled', attempt: 0, next_attempt_at: null, response_status: null });
    expect(receiver.requests).toHaveLength(1);
  });

  it('writes an outcome once: a repeated or stale write changes nothing', async () => {
    const { endpointId } = await target(() => ({ status: 500 }));
    await createProduct(t);
    const sender = createSender(t.ctx.config);
    try {
      const [first] = await leaseDue(t, clock.now());
      const firstOutcome = await runAttempt({ ...t.ctx, sender }, first);
      await recordOutcomes(t.ctx, [firstOutcome]);
      await recordOutcomes(t.ctx, [firstOutcome]);
      expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'pending', attempt: 1 });

      clock.advance(1000);
      const [second] = await leaseDue(t, clock.now());
      expect(second).toMatchObject({ id: first.id, attempt: 1 });
      await recordOutcomes(t.ctx, [firstOutcome]);
      await recordOutcomes(t.ctx, [await runAttempt({ ...t.ctx, sender }, second)]);
      expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'failed', attempt: 2 });
      expect(await endpointState(t, endpointId)).toMatchObject({ consecutive_failures: 1 });
    } finally {
      await sender.close();
    }
  });

  it('resets a failure count raised after the claim when the delivery succeeds', async () => {
    const { endpointId } = await target();
    await createProduct(t);
    const sender = createSender(t.ctx.config);
    try {
      const [row] = await leaseDue(t, clock.now());
      expect(row.endpointFailures).toBe(0);
      await t.ctx.db.query('UPDATE webhook_endpoints SET consecutive_failures = 3 WHERE id = $1', [endpointId]);
      await recordOutcomes(t.ctx, [await runAttempt({ ...t.ctx, sender }, row)]);
      expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'success', attempt: 1 });
      expect(await endpointState(t, endpointId)).toMatchObject({ consecutive_failures: 0 });
    } finally {
      await sender.close();
    }
  });

  it('sends a test ping with its own payload', async () => {
    const { receiver, endpointId } = await target();
    const res = await t.call(t.demo.workspaces[0].apiKey, 'POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`);
    expect(res.statusCode).toBe(201);
    const { deliveryId, eventId } = res.json();
    expect(await testWorker(t).runDue()).toBe(1);
    const [{ payload }] = await t.ctx.db.query<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE id = $1', [deliveryId]);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0].body).toBe(payload);
    expect(receiver.requests[0].flatHeaders['webhook-id']).toBe(deliveryId);
    expect(JSON.parse(payload)).toMatchObject({ id: eventId, type: 'webhook.ping' });
  });
});
