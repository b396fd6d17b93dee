import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.js';
import { openPostgres } from '../src/db/postgres.js';
import { createContext } from '../src/server/runtime.js';
import { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { addEndpoint, eventually } from './helpers/delivery.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/** Short waits, so that a lost database shows within a second or two. */
const TIMEOUTS = { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 };

/**
 * The point of storing a key's response in the transaction of its change: the database is lost
 * while a keyed POST finishes, the client sees a 503, retries with its key, and whatever happened
 * it ends up with exactly one change and that change's response. A service whose every connection
 * crosses a TCP proxy in front of the shared PostgreSQL (test/helpers/tcp-proxy.ts) loses it at a
 * chosen statement; the test reads the truth through its own, direct connection.
 */
describe('idempotency keys across a lost database', () => {
  const masterKey = randomBytes(32);
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(): Promise<{ t: TestApp; proxy: TcpProxy; app: App; receiver: Receiver; secret: string; failures: string[] }> {
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { secret } = await addEndpoint(t, receiver.url);
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.testDb.schema, poolSize: 4, timeouts: TIMEOUTS });
    // A short lease: rows handed to the worker by a write whose commit was never confirmed come due soon.
    const ctx = createContext(testConfig({ allowPrivateTargets: true, pollIntervalMs: 200, deliveryTimeoutMs: 1_000, leaseMs: 3_000 }), db, masterKey);
    const app = await buildApp(ctx);
    // The service's own worker: a write's deliveries are handed to it, so a hand-off before the commit would show.
    const failures: string[] = [];
    const worker = new DeliveryWorker(ctx, { onError: (_e, during) => failures.push(during) });
    await worker.start();
    cleanup.push(async () => {
      await worker.stop();
      await app.close();
      await ctx.rateLimits.close();
      await db.close();
    });
    return { t, proxy, app, receiver, secret, failures };
  }

  const create = (app: App, t: TestApp, name: string, key: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/products',
      headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}`, 'idempotency-key': key },
      payload: { name },
    });
  const products = async (t: TestApp, name: string) => t.ctx.db.query<{ id: string }>('SELECT id FROM products WHERE name = $1', [name]);
  const eventsOf = async (t: TestApp, id: string) => t.ctx.db.query('SELECT id FROM events WHERE subject_id = $1', [id]);

  /** After the cut: the proxy back, and the service's retries answered by the database again (a 409 while the lost transaction ends). */
  async function retryUntilAnswered(proxy: TcpProxy, send: () => Promise<LightMyRequestResponse>) {
    await proxy.start();
    let res = await send();
    await eventually(async () => {
      if (res.statusCode !== 503 && res.statusCode !== 409) return true;
      res = await send();
      return false;
    }, 15_000);
    return res;
  }

  it('a commit whose answer is lost: the client sees 503, its retry gets the stored response, and one product was made', async () => {
    const { t, proxy, app, receiver, secret } = await setup();
    // Warm: the credential cached, the service's connections open. A first request on a busy machine
    // may outlast the short time-outs (503); with its key, sending it again is safe.
    await eventually(async () => (await create(app, t, 'Warm-up', 'warm')).statusCode === 201, 15_000);

    const cut = proxy.cutAt('COMMIT', true);
    const first = await create(app, t, 'Committed in the dark', 'cut-after-commit');
    await cut;
    expect(first.statusCode).toBe(503);
    expect(first.json().error.code).toBe('UNAVAILABLE');
    // The change did commit, with its event and stored response: the server carries out the COMMIT
    // it read before the cut in its own time, perhaps after the 503 went out.
    await eventually(async () => (await products(t, 'Committed in the dark')).length === 1, 5_000);
    const [product] = await products(t, 'Committed in the dark');

    const retry = await retryUntilAnswered(proxy, () => create(app, t, 'Committed in the dark', 'cut-after-commit'));
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json().id).toBe(product.id);
    expect(await products(t, 'Committed in the dark')).toHaveLength(1);
    expect(await eventsOf(t, product.id)).toHaveLength(1);

    // Its delivery was written already handed to the worker, under a lease; the worker never got it,
    // since the commit was not confirmed. It goes out once the lease ends, once.
    const subjects = () => receiver.requests.map((r) => (new Webhook(secret).verify(r.body, r.flatHeaders) as { subject: { id: string } }).subject.id);
    await eventually(() => subjects().includes(product.id), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(subjects().filter((id) => id === product.id)).toHaveLength(1);
    expect(await t.ctx.db.query('SELECT id FROM webhook_deliveries d WHERE d.event_id IN (SELECT id FROM events WHERE subject_id = $1)', [product.id])).toHaveLength(1);
  });

  it('a connection lost before the commit: nothing was kept or sent, and the retry makes the one product', async () => {
    const { t, proxy, app, receiver, secret } = await setup();
    // Warm-up without a key: the statement below is still to be prepared on every connection, so its text crosses the proxy.
    // On a busy machine a first request may outlast the short time-outs; one unkeyed creation is made.
    const warm = () => app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}` }, payload: { name: 'Warm-up' } });
    await eventually(async () => (await warm()).statusCode === 201, 15_000);
    await receiver.waitFor(1, 10_000);

    // The statement that stores the response never reaches the server: the product inserted before it is rolled back.
    const cut = proxy.cutAt('INSERT INTO idempotency_keys', false);
    const first = await create(app, t, 'Never committed', 'cut-before-commit');
    await cut;
    expect(first.statusCode).toBe(503);
    expect(await products(t, 'Never committed')).toHaveLength(0);

    const retry = await retryUntilAnswered(proxy, () => create(app, t, 'Never committed', 'cut-before-commit'));
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const made = await products(t, 'Never committed');
    expect(made.map((p) => p.id)).toEqual([retry.json().id]);

    // One delivery: of the committed product. The rolled-back one was never handed to the worker.
    await receiver.waitFor(2, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const subjects = receiver.requests.map((r) => (new Webhook(secret).verify(r.body, r.flatHeaders) as { subject: { id: string } }).subject.id);
    expect(subjects).toHaveLength(2);
    expect(subjects[1]).toBe(made[0].id);
  });
});
