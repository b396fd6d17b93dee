import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.js';
import type { AppContext } from '../src/server/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { revokeApiKey } from '../src/api-keys/store.js';
import { createContext } from '../src/server/runtime.js';
import { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { cliBuilt, freePort, startServer } from './helpers/cli.js';
import { POSTGRES_URL } from './helpers/db.js';
import { addEndpoint, createProduct, eventually } from './helpers/delivery.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/** Short waits, so that a silent database shows within a second or two. */
const TIMEOUTS = { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 };

function urlThrough(proxy: TcpProxy): string {
  const url = new URL(POSTGRES_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  return url.toString();
}

/**
 * A database that stops answering (it accepts connections and bytes, and never replies), seen
 * through a TCP proxy in front of the shared PostgreSQL: one service's connections go through it,
 * while the test's own connection goes straight to the server.
 */
describe('a silent database', () => {
  const masterKey = randomBytes(32);
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /** The test app (direct), and a second service on the same schema whose every connection crosses the proxy. */
  async function setup(): Promise<{ t: TestApp; proxy: TcpProxy; ctx: AppContext; app: App; receiver: Receiver }> {
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(async () => {
      proxy.release();
      await proxy.stop();
    });
    const db = await openPostgres({ url: urlThrough(proxy), schema: t.testDb.schema, poolSize: 12, timeouts: TIMEOUTS });
    const ctx = createContext(testConfig({ allowPrivateTargets: true, pollIntervalMs: 200 }), db, masterKey);
    const app = await buildApp(ctx);
    cleanup.push(async () => {
      await app.close();
      await ctx.rateLimits.close();
      await db.close();
    });
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    return { t, proxy, ctx, app, receiver };
  }

  it('answers 503 UNAVAILABLE with Retry-After within seconds, backs the worker off with one log line, and recovers without losing a delivery', async () => {
    const { t, proxy, ctx, app, receiver } = await setup();
    await addEndpoint(t, receiver.url);
    const errors: string[] = [];
    const recovered: string[] = [];
    const worker = new DeliveryWorker(ctx, { onError: (_e, during) => errors.push(during), onRecover: (during) => recovered.push(during) });
    await worker.start();
    cleanup.push(() => worker.stop());
    const apiKey = t.demo.workspaces[0].apiKey;
    expect((await app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${apiKey}` } })).statusCode).toBe(200);

    proxy.hang();
    const started = performance.now();
    const res = await app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${apiKey}` } });
    const waited = performance.now() - started;
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.json()).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String), requestId: res.headers['request-id'] } });
    expect(waited).toBeLessThan(10_000);

    // Changes committed meanwhile (through the other, healthy connection) wait for the database to answer the worker again.
    const products: string[] = [];
    for (let i = 0; i < 5; i++) products.push(await createProduct(t, `During ${i}`));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // Several claims failed in these seconds: reported once.
    expect(errors.filter((d) => d === 'claim')).toHaveLength(1);
    expect(receiver.requests).toHaveLength(0);

    proxy.release();
    await eventually(async () => (await app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${apiKey}` } })).statusCode === 200, 10_000);
    await receiver.waitFor(5, 10_000);
    const delivered = receiver.requests.map((r) => JSON.parse(r.body).subject.id);
    expect(delivered.sort()).toEqual([...products].sort());
    expect(recovered).toContain('claim');
  });

  it('flushes the credential cache when the revocation listener loses its connection', async () => {
    const { t, proxy, app } = await setup();
    const key = t.demo.workspaces[0];
    const call = () => app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${key.apiKey}` } });
    expect((await call()).statusCode).toBe(200);
    // The connection is cut: the revoke's NOTIFY, made meanwhile through the test's own connection, is lost to this service.
    await proxy.stop();
    const [{ id }] = await t.ctx.db.query<{ id: string }>('SELECT id FROM api_keys WHERE workspace_id = $1 AND NOT test', [key.id]);
    expect(await revokeApiKey(t.ctx.db, key.id, id, t.clock.now())).not.toBeNull();
    await proxy.start();
    // The first answer once the database is reachable again already knows: no cached credential outlived the cut.
    await eventually(async () => (await call()).statusCode !== 503, 10_000);
    expect((await call()).statusCode).toBe(401);
  });

  it.skipIf(!cliBuilt())('exits on SIGTERM while the database is silent', async () => {
    const t = await startTestApp({ masterKey });
    cleanup.push(() => t.close());
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(async () => {
      proxy.release();
      await proxy.stop();
    });
    const url = new URL(urlThrough(proxy));
    url.searchParams.set('options', `-c search_path=${t.testDb.schema}`);
    const port = await freePort();
    const server = await startServer([], {
      DATABASE_URL: url.toString(),
      SVC_MASTER_KEY: masterKey.toString('hex'),
      PORT: String(port),
      SVC_DB_CONNECT_TIMEOUT: '1s',
      SVC_DB_STATEMENT_TIMEOUT: '1s',
      SVC_DB_QUERY_TIMEOUT: '1500ms',
      SVC_DELIVERY_TIMEOUT: '2s',
      SVC_LEASE: '5s',
      LOG_LEVEL: 'silent',
    });
    proxy.hang();
    // A request in progress when the stop begins.
    const inProgress = fetch(`http://127.0.0.1:${port}/v1/products`, { headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}` } }).catch(() => null);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const code = await server.stop();
    expect(code === 0 || code === 1).toBe(true);
    const res = await inProgress;
    if (res) expect([503, 401]).toContain(res.status);
  });
});
