import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { openPostgres } from '../src/db/postgres.js';
import { RedisRateLimitStore } from '../src/http/ratelimit/redis.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { eventually } from './helpers/delivery.js';
import { expectError, ok } from './helpers/expect.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { missing, SERVICES } from './helpers/services.js';

const REDIS_URL = SERVICES.redis.where();

/** GET /healthz and GET /readyz, as a load balancer or an orchestrator calls them. */
describe('health and readiness', () => {
  let t: TestApp;
  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

  beforeAll(async () => {
    // Two failed authentications a minute per address: the probes below would pass it many times over.
    t = await startTestApp({ config: { rateLimitUnauthenticated: 2 } });
  });
  afterAll(() => t?.close());

  it('answers /healthz and /readyz without a credential, rate limit or rate-limit headers', async () => {
    for (let i = 0; i < 10; i++) {
      for (const headers of [{}, { authorization: 'Bearer svc_sk_not_a_real_key' }] as Record<string, string>[]) {
        const health = await get('/healthz', headers);
        expect(ok(health)).toEqual({ status: 'ok' });
        const ready = await get('/readyz', headers);
        expect(ok(ready)).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok' } });
        expect(ready.headers['ratelimit']).toBeUndefined();
      }
    }
  });

  it('names migrations this build has and the database lacks', async () => {
    const [last] = await t.ctx.db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name DESC LIMIT 1');
    await t.ctx.db.query('DELETE FROM schema_migrations WHERE name = $1', [last.name]);
    try {
      const error = expectError(await get('/readyz'), 503, 'UNAVAILABLE');
      expect(error.details).toEqual([{ path: 'migrations', message: `not applied: ${last.name}` }]);
    } finally {
      await t.ctx.db.query('INSERT INTO schema_migrations (name) VALUES ($1)', [last.name]);
    }
    ok(await get('/readyz'));
  });

  it('answers 503 naming the database when it cannot be reached, without its address', async () => {
    const db = await openPostgres({ url: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    const app = await buildApp(createContext(testConfig(), db, randomBytes(32)));
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      const error = expectError(res, 503, 'UNAVAILABLE');
      expect(error.details).toEqual([{ path: 'database', message: 'unreachable or not answering' }]);
      expect(res.body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
      expect(ok(await app.inject({ method: 'GET', url: '/healthz' }))).toEqual({ status: 'ok' });
    } finally {
      await app.close();
      await db.close();
    }
  });

  it.skipIf(missing('redis'))('checks Redis when REDIS_URL is set: 503 naming it while it is down, ready again once it is back', async () => {
    const proxy = new TcpProxy(Number(new URL(REDIS_URL).port || 6379));
    await proxy.start();
    const store = new RedisRateLimitStore({ url: proxy.url, prefix: `svc-test:${randomBytes(6).toString('hex')}:`, timeoutMs: 250 });
    const app = await buildApp(createContext(testConfig({ redisUrl: proxy.url }), t.ctx.db, randomBytes(32), t.clock, { rateLimits: store }));
    const ready = () => app.inject({ method: 'GET', url: '/readyz' });
    try {
      expect(ok(await ready()).checks).toEqual({ database: 'ok', migrations: 'ok', redis: 'ok' });
      await proxy.stop();
      const error = expectError(await ready(), 503, 'UNAVAILABLE');
      expect(error.details).toEqual([{ path: 'redis', message: 'unreachable or not answering' }]);
      await proxy.start();
      await eventually(async () => (await ready()).statusCode === 200);
    } finally {
      await app.close();
      await store.close();
      await proxy.stop();
    }
  });

  // Last: a stop cannot be taken back, and every check above needs a process that is not stopping.
  it('turns /readyz 503 as soon as a graceful stop begins, while /healthz still answers', async () => {
    t.ctx.readiness.stop();
    const error = expectError(await get('/readyz'), 503, 'UNAVAILABLE');
    expect(error).toMatchObject({ message: 'Not ready: shutdown: the process is stopping.', details: [{ path: 'shutdown', message: 'the process is stopping' }] });
    ok(await get('/healthz'));
  });
});
