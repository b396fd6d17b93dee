import { afterEach, describe, expect, it } from 'vitest';
import { Capacity, LAG_HIGH_MS, SUSTAINED, WINDOW, type Load } from '../../src/engine/delivery/capacity.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const calm: Load = { lagMs: 0 };
const lagging: Load = { lagMs: LAG_HIGH_MS + 1 };

describe('capacity', () => {
  it('starts at its ceiling, falls only under lag sustained over a window, and comes back once a window is calm', () => {
    let load = calm;
    const seen: number[] = [];
    const capacity = new Capacity(2048, () => load, (limit) => seen.push(limit));
    expect(capacity.limit).toBe(2048);
    // A garbage collector's pause spoils a reading or two: nothing changes.
    load = lagging;
    capacity.adjust();
    capacity.adjust();
    load = calm;
    for (let i = 0; i < 3 * WINDOW; i++) capacity.adjust();
    expect(capacity.limit).toBe(2048);
    // Lag in SUSTAINED readings of a window: a quarter less, once per window.
    load = lagging;
    for (let i = 0; i < SUSTAINED; i++) capacity.adjust();
    expect(capacity.limit).toBe(1536);
    for (let i = 0; i < WINDOW - 1; i++) capacity.adjust();
    expect(capacity.limit).toBe(1536);
    capacity.adjust();
    expect(capacity.limit).toBe(1152);
    // However long it lasts, never below a sixteenth of the ceiling.
    for (let i = 0; i < 30 * WINDOW; i++) capacity.adjust();
    expect(capacity.limit).toBe(128);
    // Calm again: after a whole window without lag, a tenth of the ceiling per reading.
    load = calm;
    for (let i = 0; i < WINDOW - 1; i++) capacity.adjust();
    expect(capacity.limit).toBe(128);
    capacity.adjust();
    expect(capacity.limit).toBe(128 + 205);
    for (let i = 0; i < 20; i++) capacity.adjust();
    expect(capacity.limit).toBe(2048);
    expect(seen[0]).toBe(2048);
    expect(seen.at(-1)).toBe(2048);
    expect(Math.min(...seen)).toBe(128);
  });
});

/**
 * A worker admits what its receivers can take from its first claim: slow receivers hold attempts in
 * flight without costing work. Only an event loop that lags over a window brings its capacity down,
 * and attempts in flight are not cut short. The process's load is given by the test (the worker's
 * `load` option); the receivers' latency is real.
 */
describe("a worker's admission", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('grows to the work from the first claim under slow receivers, and shrinks under sustained lag', async () => {
    const t: TestApp = await startTestApp({ config: { allowPrivateTargets: true, pollIntervalMs: 3_600_000 } });
    cleanup.push(() => t.close());
    const arrivals: number[] = [];
    const receiver: Receiver = await startReceiver(() => {
      arrivals.push(performance.now());
      return { status: 200, delayMs: 3_000 };
    });
    cleanup.push(() => receiver.close());
    const endpoints = await Promise.all(Array.from({ length: 150 }, (_, i) => addEndpoint(t, `${receiver.url}/e${i}`)));
    for (let i = 0; i < 2; i++) await createProduct(t, `Hat ${i}`);

    let load = calm;
    const worker = new DeliveryWorker(t.ctx, { load: () => load, concurrency: 1024 });
    cleanup.push(() => worker.stop());
    expect(worker.limit).toBe(1024);
    await worker.start();
    // 300 deliveries of 3 s to 150 endpoints: an attempt to each of them at once, before the first answer
    // (a capacity that started at 64 would have had 64 open).
    await eventually(() => arrivals.length >= 150, 10_000);
    expect(arrivals[149] - arrivals[0]).toBeLessThan(3_000);

    load = lagging;
    await eventually(() => worker.limit < 1024 / 2, 8_000);
    load = calm;
    await eventually(async () => (await Promise.all(endpoints.map((e) => deliveriesOf(t, e.id)))).flat().every((r) => r.status === 'success'), 30_000);
    await eventually(() => worker.limit === 1024, 5_000);
    expect(new Set(receiver.requests.map((r) => r.flatHeaders['webhook-id'])).size).toBe(300);
  }, 60_000);
});
