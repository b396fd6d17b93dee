import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { buildApp } from '../../src/server/app.js';
import { createContext } from '../../src/server/runtime.js';
import { startTestApp, testConfig } from '../helpers/app.js';
import { proxiedDatabase } from '../helpers/db.js';
import { addEndpoint, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * A worker whose database is found down while it holds jobs not yet started: it starts none of
 * them (their outcomes could not be recorded, and they would be sent again a lease later), and
 * sends them once the database answers again.
 */
describe('a worker during a database outage', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('starts no attempt while the database is known down, and sends what waited, once each, when it is back', async () => {
    const masterKey = randomBytes(32);
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    // Each request takes 3 s: the worker's single place is taken when the database goes, and
    // until it is known down (its query time-out, 1.5 s).
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 3_000 }));
    cleanup.push(() => receiver.close());
    const { id: endpointId } = await addEndpoint(t, receiver.url);

    const { proxy, url } = await proxiedDatabase();
    cleanup.push(() => proxy.stop());
    const db = await openPostgres({ url, schema: t.testDb.schema, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 500 } });
    const ctx = createContext(testConfig({ allowPrivateTargets: true }), db, masterKey);
    cleanup.push(async () => {
      await ctx.rateLimits.close();
      await db.close();
    });
    // Whether the database is down, as the process knows it.
    let down = false;
    db.onAvailability((change) => (down = change.down));

    const worker = new DeliveryWorker(ctx, { concurrency: 1 });
    await worker.start();
    cleanup.push(() => worker.stop());
    // Products created through an app of the same process: their deliveries are handed to the
    // worker under a lease as they commit; the first one is attempted, the others wait their turn.
    const app = await buildApp(ctx);
    cleanup.push(() => app.close());
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}` }, payload: { name: `Hat ${i}` } });
      expect(res.statusCode).toBe(201);
    }
    await receiver.waitFor(1, 10_000);

    // The database goes silent while the first attempt runs; a statement finds it down.
    proxy.setMode('blackhole');
    await db.query('SELECT 1').catch(() => {});
    await eventually(() => down, 5_000);
    // The first attempt ends meanwhile; nothing more starts.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(down).toBe(true);
    expect(receiver.requests).toHaveLength(1);

    proxy.setMode('pass');
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((row) => row.status === 'success'), 20_000);
    expect(down).toBe(false);
    const ids = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });
});
