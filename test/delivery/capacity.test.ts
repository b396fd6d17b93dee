import { afterEach, describe, expect, it } from 'vitest';
import { Capacity, CPU_HIGH, LAG_HIGH_MS, type Load } from '../../src/webhooks/engine/capacity.js';
import { DeliveryWorker } from '../../src/webhooks/engine/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

describe('capacity', () => {
  it('rises by a tenth while it holds work back with the loop prompt and a core left, falls by a quarter when the loop lags', () => {
    let load: Load = { lagMs: 0, cpu: 0.2 };
    const capacity = new Capacity({ min: 16, max: 512 }, () => load);
    expect(capacity.limit).toBe(64);
    capacity.adjust(true);
    expect(capacity.limit).toBe(64 + 7);
    // Nothing waited: no reason to grow.
    capacity.adjust(false);
    expect(capacity.limit).toBe(71);
    // Work waits, but the process has no core left: it holds.
    load = { lagMs: 0, cpu: CPU_HIGH + 0.05 };
    capacity.adjust(true);
    expect(capacity.limit).toBe(71);
    // The loop lags: it falls, whether or not work waits, down to its floor.
    load = { lagMs: LAG_HIGH_MS + 1, cpu: 0.2 };
    capacity.adjust(true);
    expect(capacity.limit).toBe(53);
    for (let i = 0; i < 20; i++) capacity.adjust(false);
    expect(capacity.limit).toBe(16);
    // And back up to its ceiling.
    load = { lagMs: 0, cpu: 0.2 };
    for (let i = 0; i < 100; i++) capacity.adjust(true);
    expect(capacity.limit).toBe(512);
  });

  it('never goes past a ceiling lower than its floor', () => {
    const capacity = new Capacity({ min: 16, max: 4 }, () => ({ lagMs: LAG_HIGH_MS + 1, cpu: 0 }));
    expect(capacity.limit).toBe(4);
    capacity.adjust(true);
    expect(capacity.limit).toBe(4);
  });
});

/**
 * A worker's capacity follows its process: receivers that are slow hold attempts in flight without
 * costing work, so the limit grows; an event loop that lags brings it down. The process's load is
 * given by the test (the worker's `load` option); the receivers' latency is real.
 */
describe('a worker\'s capacity', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('grows beyond its start under slow receivers, and shrinks when the event loop lags', async () => {
    const t: TestApp = await startTestApp({ config: { allowPrivateTargets: true, pollIntervalMs: 3_600_000 } });
    cleanup.push(() => t.close());
    const receiver: Receiver = await startReceiver(() => ({ status: 200, delayMs: 400 }));
    cleanup.push(() => receiver.close());
    const endpoints = await Promise.all(Array.from({ length: 20 }, (_, i) => addEndpoint(t, `${receiver.url}/e${i}`)));
    for (let i = 0; i < 40; i++) await createProduct(t, `Hat ${i}`);

    let load: Load = { lagMs: 0, cpu: 0.1 };
    const worker = new DeliveryWorker(t.ctx, { load: () => load });
    cleanup.push(() => worker.stop());
    expect(worker.limit).toBe(64);
    await worker.start();
    // 800 deliveries of 400 ms over 20 endpoints: far more than 64 could carry at once.
    await eventually(() => worker.limit > 128, 10_000);
    await eventually(() => receiver.requests.length > 128, 10_000);

    const grown = worker.limit;
    load = { lagMs: 3 * LAG_HIGH_MS, cpu: 0.95 };
    await eventually(() => worker.limit < grown / 2, 5_000);
    load = { lagMs: 0, cpu: 0.1 };
    await eventually(async () => (await Promise.all(endpoints.map((e) => deliveriesOf(t, e.id)))).flat().every((r) => r.status === 'success'), 30_000);
    expect(new Set(receiver.requests.map((r) => r.flatHeaders['webhook-id'])).size).toBe(800);
  }, 60_000);
});
