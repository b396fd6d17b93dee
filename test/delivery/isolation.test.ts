import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { createContext } from '../../src/server/runtime.js';
import { INITIAL_SHARE } from '../../src/engine/delivery/lane.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * A receiver that never answers must not delay anyone else: the healthy endpoint's deliveries all
 * arrive while the hanging endpoints' first attempts are still waiting for their time-out (10 s),
 * and each hanging endpoint holds no more than its share of attempts.
 */
describe('isolation between endpoints', () => {
  // Torn down in this order: receivers first (their sockets cut, the hanging attempts end at once),
  // then workers, then apps.
  const receivers: Receiver[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const r of receivers.splice(0)) await r.close();
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  const masterKey = randomBytes(32);

  async function setup(hanging: number) {
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const healthy = await startReceiver(() => ({ status: 200 }));
    const silent = await startReceiver(() => ({ hang: true }));
    receivers.push(healthy, silent);
    const { id: healthyId } = await addEndpoint(t, `${healthy.url}/ok`, ['product.created']);
    const hangingIds: string[] = [];
    for (let i = 0; i < hanging; i++) hangingIds.push((await addEndpoint(t, `${silent.url}/hang/${i}`, ['product.created'])).id);
    return { t, healthy, silent, healthyId, hangingIds };
  }

  function startWorker(t: TestApp, concurrency = 64) {
    const worker = new DeliveryWorker(t.ctx, { concurrency });
    cleanup.push(() => worker.stop());
    return worker;
  }

  /** Requests each hanging endpoint has received, by its path. */
  function perEndpoint(silent: Receiver): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of silent.requests) counts.set(r.url, (counts.get(r.url) ?? 0) + 1);
    return counts;
  }

  for (const hanging of [1, 10]) {
    it(`delivers to a healthy endpoint at once beside ${hanging} endpoint(s) that never answer, whose backlogs wait`, async () => {
      const { t, healthy, silent, healthyId, hangingIds } = await setup(hanging);
      // A backlog first: 25 events, each for every endpoint, before any worker runs.
      for (let i = 0; i < 25; i++) await createProduct(t, `Backlog ${i}`);
      const worker = startWorker(t);
      await worker.start();
      // Then events arriving one by one.
      for (let i = 0; i < 15; i++) await createProduct(t, `Live ${i}`);
      await healthy.waitFor(40);
      await eventually(async () => (await deliveriesOf(t, healthyId)).every((r) => r.status === 'success'));

      // Every hanging attempt is still waiting (none has timed out), and each endpoint has at most its share of them.
      const hangingRows = (await Promise.all(hangingIds.map((id) => deliveriesOf(t, id)))).flat();
      expect(hangingRows.every((r) => r.status === 'pending' && r.attempt === 0)).toBe(true);
      for (const count of perEndpoint(silent).values()) expect(count).toBeLessThanOrEqual(INITIAL_SHARE);
      expect(silent.requests.length).toBeGreaterThanOrEqual(hanging);
      // The rest of their backlog was put off: due later, not taken by a lease.
      const now = Date.now();
      const putOff = hangingRows.filter((r) => r.next_attempt_at!.getTime() > now && r.next_attempt_at!.getTime() < now + t.ctx.config.leaseMs / 2);
      expect(putOff.length).toBeGreaterThan(0);
      // Nothing was sent twice to the healthy endpoint.
      expect(new Set(healthy.requests.map((r) => r.flatHeaders['webhook-id'])).size).toBe(40);
    });
  }

  // Worker processes need a database server they can share.
  it('isolates in every worker process: two processes on one PostgreSQL both keep the hanging endpoint to its share', async () => {
    const { t, healthy, silent, healthyId, hangingIds } = await setup(2);
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 12 });
    const other = createContext(testConfig({ allowPrivateTargets: true }), db, masterKey);
    cleanup.push(async () => {
      await other.rateLimits.close();
      await db.close();
    });
    for (let i = 0; i < 30; i++) await createProduct(t, `Backlog ${i}`);
    const first = startWorker(t);
    const second = new DeliveryWorker(other, { concurrency: 64 });
    cleanup.push(() => second.stop());
    await Promise.all([first.start(), second.start()]);
    for (let i = 0; i < 10; i++) await createProduct(t, `Live ${i}`);
    await healthy.waitFor(40);
    await eventually(async () => (await deliveriesOf(t, healthyId)).every((r) => r.status === 'success'));
    for (const count of perEndpoint(silent).values()) expect(count).toBeLessThanOrEqual(2 * INITIAL_SHARE);
    const hangingRows = (await Promise.all(hangingIds.map((id) => deliveriesOf(t, id)))).flat();
    expect(hangingRows.every((r) => r.status === 'pending' && r.attempt === 0)).toBe(true);
  });
});
