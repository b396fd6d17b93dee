import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, eventually } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { killAll, spawnWorker } from '../helpers/worker-process.js';

/** A short lease, so that a delivery whose outcome was lost would be sent again within the test. */
const LEASE = { leaseMs: 5_000, deliveryTimeoutMs: 2_000 };

/**
 * Without any fault, every delivery is sent exactly once, however the attempts' ends fall against
 * claims, hand-overs from row lock to lease, and leases: receivers that take a few hundred
 * milliseconds make attempts end around the moment a held claim's hold runs out (500 ms), which is
 * where an outcome could be written under a mark its row did not hold yet, and be lost.
 */
describe('exactly once without faults', () => {
  const masterKey = randomBytes(32);
  const children: ChildProcess[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    killAll(children.splice(0));
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(): Promise<{ t: TestApp; receiver: Receiver; endpoints: string[] }> {
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true, ...LEASE } });
    cleanup.push(() => t.close());
    // 250-650 ms, spread so that answers keep arriving around every claim's hold time.
    const receiver = await startReceiver((_r, i) => ({ status: 200, delayMs: 250 + ((i * 37) % 400) }));
    cleanup.push(() => receiver.close());
    const endpoints = [(await addEndpoint(t, `${receiver.url}/a`)).id, (await addEndpoint(t, `${receiver.url}/b`)).id];
    return { t, receiver, endpoints };
  }

  async function createProducts(t: TestApp, count: number): Promise<void> {
    for (let i = 0; i < count; i += 20) {
      const batch = Array.from({ length: Math.min(20, count - i) }, (_, j) => t.call(t.demo.workspaces[0].apiKey, 'POST', '/v1/products', { name: `Hat ${i + j}` }));
      expect((await Promise.all(batch)).every((r) => r.statusCode === 201)).toBe(true);
    }
  }

  /** Waits until every row succeeded, then for more than a lease, and counts the requests per delivery. */
  async function sentOnce(t: TestApp, receiver: Receiver, total: number): Promise<void> {
    await eventually(async () => {
      const [{ n }] = await t.ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'success'");
      return n === total;
    }, 90_000);
    await sleep(LEASE.leaseMs + 1_500);
    const rows = await t.ctx.db.query<{ id: string; status: string; attempt: number }>('SELECT id, status, attempt FROM webhook_deliveries');
    expect(rows).toHaveLength(total);
    expect(rows.every((r) => r.status === 'success' && r.attempt === 1)).toBe(true);
    const counts = new Map<string, number>();
    for (const r of receiver.requests) counts.set(r.flatHeaders['webhook-id'], (counts.get(r.flatHeaders['webhook-id']) ?? 0) + 1);
    const twice = [...counts].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    expect(counts.size).toBe(total);
  }

  it('sends each of 400 deliveries once through an in-process worker (hand-offs, claims, leases)', async () => {
    const { t, receiver } = await setup();
    const worker = new DeliveryWorker(t.ctx, { concurrency: 32 });
    await worker.start();
    cleanup.push(() => worker.stop());
    await createProducts(t, 200);
    await sentOnce(t, receiver, 400);
  }, 120_000);

  it('sends each of 600 deliveries once through held claims in a separate svc worker process', async () => {
    const { t, receiver } = await setup();
    await createProducts(t, 300);
    const child = spawnWorker(t, masterKey, { SVC_LEASE: '5s', SVC_DELIVERY_TIMEOUT: '2s', SVC_WORKER_CONCURRENCY: '32' });
    children.push(child);
    await sentOnce(t, receiver, 600);
    expect(child.exitCode).toBeNull();
  }, 120_000);
});
