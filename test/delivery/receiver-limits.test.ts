import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createContext } from '../../src/server/runtime.js';
import { afterFailure, retryAfterMs } from '../../src/engine/delivery/schedule.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, createProduct, deliveriesOf, eventually, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Behaviour, type Receiver } from '../helpers/receiver.js';

const SECOND = 1000;
const HOUR = 3600 * SECOND;

describe('Retry-After', () => {
  it('reads seconds and HTTP dates on 429 and 503 only', () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    expect(retryAfterMs(429, { 'retry-after': '120' }, now)).toBe(120 * SECOND);
    expect(retryAfterMs(503, { 'retry-after': 'Thu, 01 Jan 2026 00:10:00 GMT' }, now)).toBe(10 * 60 * SECOND);
    expect(retryAfterMs(503, { 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, now)).toBe(0);
    expect(retryAfterMs(500, { 'retry-after': '120' }, now)).toBeNull();
    expect(retryAfterMs(429, { 'retry-after': 'soon' }, now)).toBeNull();
    expect(retryAfterMs(429, { 'retry-after': '-5' }, now)).toBeNull();
    expect(retryAfterMs(429, {}, now)).toBeNull();
  });

  it('takes the later of the schedule and the wait asked for, counted up to the schedule\'s longest delay', () => {
    const at = new Date('2026-01-01T00:00:00.000Z');
    const schedule = [5 * 60 * SECOND, 12 * HOUR];
    expect(afterFailure(schedule, 1, at, 60 * SECOND).nextAttemptAt!.getTime() - at.getTime()).toBe(5 * 60 * SECOND);
    expect(afterFailure(schedule, 1, at, HOUR).nextAttemptAt!.getTime() - at.getTime()).toBe(HOUR);
    expect(afterFailure(schedule, 1, at, 48 * HOUR).nextAttemptAt!.getTime() - at.getTime()).toBe(12 * HOUR);
    expect(afterFailure(schedule, 3, at, HOUR)).toEqual({ status: 'failed', nextAttemptAt: null });
  });

  describe('against a receiver', () => {
    let t: TestApp;
    const clock = new ManualClock();
    const receivers: Receiver[] = [];
    beforeAll(async () => {
      t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [10 * SECOND, 10 * SECOND, 2 * HOUR] } });
    });
    afterAll(async () => {
      for (const r of receivers) await r.close();
      await t.close();
    });

    async function oneDelivery(script: (r: unknown, i: number) => Behaviour) {
      const receiver = await startReceiver(script);
      receivers.push(receiver);
      const { id } = await addEndpoint(t, receiver.url);
      await createProduct(t);
      const worker = testWorker(t);
      return { receiver, worker, endpointId: id };
    }

    it('does not try again before a 429\'s Retry-After, then delivers', async () => {
      const { receiver, worker, endpointId } = await oneDelivery((_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '60' } } : { status: 200 }));
      const start = clock.now().getTime();
      expect(await worker.runDue()).toBe(1);
      const [row] = await deliveriesOf(t, endpointId);
      expect(row).toMatchObject({ status: 'pending', attempt: 1, response_status: 429 });
      expect(row.next_attempt_at!.getTime()).toBe(start + 60 * SECOND);
      // The schedule alone would have tried again after 10 s.
      clock.set(new Date(start + 59_999));
      expect(await worker.runDue()).toBe(0);
      clock.set(new Date(start + 60 * SECOND));
      expect(await worker.runDue()).toBe(1);
      expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'success', attempt: 2 });
      expect(receiver.requests).toHaveLength(2);
      await t.ctx.db.query('UPDATE webhook_endpoints SET active = false WHERE id = $1', [endpointId]);
    });

    it('keeps to the schedule when a 503\'s Retry-After is shorter, and ignores it on other statuses', async () => {
      const { worker, endpointId } = await oneDelivery((_r, i) => (i === 0 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 500, headers: { 'retry-after': '3600' } }));
      const start = clock.now().getTime();
      expect(await worker.runDue()).toBe(1);
      expect((await deliveriesOf(t, endpointId))[0].next_attempt_at!.getTime()).toBe(start + 10 * SECOND);
      clock.set(new Date(start + 10 * SECOND));
      expect(await worker.runDue()).toBe(1);
      // A 500's Retry-After (an hour, within the schedule's longest delay) is not a request to wait: the schedule's 10 s again.
      expect((await deliveriesOf(t, endpointId))[0].next_attempt_at!.getTime()).toBe(start + 20 * SECOND);
      await t.ctx.db.query('UPDATE webhook_endpoints SET active = false WHERE id = $1', [endpointId]);
    });
  });
});

describe('an endpoint\'s rateLimit', () => {
  const masterKey = randomBytes(32);
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /** The most arrivals within any `windowMs` window. */
  function busiestWindow(arrivals: number[], windowMs: number): number {
    const sorted = [...arrivals].sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; j < sorted.length; j++) {
      while (sorted[j] - sorted[i] >= windowMs) i++;
      most = Math.max(most, j - i + 1);
    }
    return most;
  }

  /**
   * Twelve sends at 4 per second, seen at the receiver. Sends are granted 250 ms apart; a busy
   * machine can hold one back by up to a step before it reaches the socket, so any second may see
   * one more than the rate, and the whole run spans at least ten steps. Unlimited, all twelve
   * arrive within a few milliseconds.
   */
  function expectPaced(arrivals: number[]): void {
    expect(busiestWindow(arrivals, 1000)).toBeLessThanOrEqual(6);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeGreaterThanOrEqual(10 * 250);
  }

  async function setup() {
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const arrivals: number[] = [];
    const limited = await startReceiver(() => {
      arrivals.push(performance.now());
      return { status: 200 };
    });
    const free = await startReceiver(() => ({ status: 200 }));
    cleanup.push(async () => {
      await limited.close();
      await free.close();
    });
    const apiKey = t.demo.workspaces[0].apiKey;
    const created = await t.call(apiKey, 'POST', '/v1/webhooks/endpoints', { url: limited.url, subscribedEvents: ['product.created'], rateLimit: 4 });
    expect(created.statusCode).toBe(201);
    expect(created.json().rateLimit).toBe(4);
    await addEndpoint(t, free.url, ['product.created']);
    return { t, arrivals, limited, free, endpointId: created.json().id as string };
  }

  it('is set, shown, changed and cleared through the API, and refused out of range', async () => {
    const { t, endpointId } = await setup();
    const apiKey = t.demo.workspaces[0].apiKey;
    expect((await t.call(apiKey, 'GET', `/v1/webhooks/endpoints/${endpointId}`)).json().rateLimit).toBe(4);
    expect((await t.call(apiKey, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { rateLimit: 50 })).json().rateLimit).toBe(50);
    expect((await t.call(apiKey, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { rateLimit: null })).json().rateLimit).toBeNull();
    for (const bad of [0, -1, 1.5, '10', 100_001]) {
      const res = await t.call(apiKey, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { rateLimit: bad });
      expect(res.statusCode, String(bad)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION');
    }
    expect((await t.call(apiKey, 'GET', `/v1/webhooks/endpoints/${endpointId}`)).json().rateLimit).toBeNull();
  });

  it('sends at most rateLimit deliveries per second, while another endpoint gets its own at once', async () => {
    const { t, arrivals, free, endpointId } = await setup();
    for (let i = 0; i < 12; i++) await createProduct(t, `Hat ${i}`);
    const worker = new DeliveryWorker(t.ctx, { concurrency: 16 });
    await worker.start();
    cleanup.push(() => worker.stop());
    await free.waitFor(12);
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'), 20_000);
    expect(arrivals).toHaveLength(12);
    expectPaced(arrivals);
    expect((await deliveriesOf(t, endpointId)).every((r) => r.attempt === 1)).toBe(true);
  });

  it('holds across two worker processes on one PostgreSQL', async () => {
    const { t, arrivals, endpointId } = await setup();
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 12 });
    const other = createContext(testConfig({ allowPrivateTargets: true }), db, masterKey);
    cleanup.push(async () => {
      await other.rateLimits.close();
      await db.close();
    });
    for (let i = 0; i < 12; i++) await createProduct(t, `Hat ${i}`);
    const workers = [new DeliveryWorker(t.ctx, { concurrency: 16 }), new DeliveryWorker(other, { concurrency: 16 })];
    await Promise.all(workers.map((w) => w.start()));
    cleanup.push(async () => {
      await Promise.all(workers.map((w) => w.stop()));
    });
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'), 20_000);
    expect(arrivals).toHaveLength(12);
    expectPaced(arrivals);
  });
});
