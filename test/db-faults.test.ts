import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.js';
import type { AppContext } from '../src/server/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { eventually } from './helpers/delivery.js';
import { TcpProxy, type ProxyMode } from './helpers/tcp-proxy.js';

/** Short waits, so that each fault shows within a second or two. */
const TIMEOUTS = { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 };
/** Every request is answered within a connection's and a statement's time-outs (a transaction's BEGIN waits for both). */
const ANSWER_MS = TIMEOUTS.connectMs + TIMEOUTS.queryMs + 500;
/** Once a fault is known, a request is answered at once. */
const KNOWN_MS = 300;
const POOL_SIZE = 6;
/** Requests that may be the breaker's probe in 2 s: one every 50 ms at the most (src/db/breaker.ts). */
const PROBES = 2_000 / 50;
/** Connection attempts allowed in the ~4 s of a fault (against "too many clients" there were hundreds). */
const MAX_ATTEMPTS = 50;

function urlThrough(proxy: TcpProxy): string {
  const url = new URL(POSTGRES_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  return url.toString();
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  code: string | undefined;
  ms: number;
}

/**
 * Faults of the database seen through a TCP proxy the test controls (test/helpers/tcp-proxy.ts),
 * in front of the shared PostgreSQL: a service on the test's schema whose every connection crosses
 * the proxy, and the test's own app, connected directly, to check what was written.
 */
describe('a database fault', () => {
  const masterKey = randomBytes(32);
  let t: TestApp;
  let proxy: TcpProxy;
  let ctx: AppContext;
  let app: App;
  let apiKey: string;
  let productId: string;

  beforeAll(async () => {
    t = await startTestApp({ masterKey });
    proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    const db = await openPostgres({ url: urlThrough(proxy), schema: t.testDb.schema, poolSize: POOL_SIZE, timeouts: TIMEOUTS });
    // Hundreds of requests in a few seconds: no rate limit in the way.
    ctx = createContext(testConfig({ rateLimitApiKey: 1_000_000 }), db, masterKey);
    app = await buildApp(ctx);
    apiKey = t.demo.workspaces[0].apiKey;
    const res = await t.call(apiKey, 'POST', '/v1/products', { name: 'Priced', price: { amount: 1200, currency: 'EUR' } });
    productId = res.json().id;
  });

  afterAll(async () => {
    await proxy.stop();
    await app.close();
    await ctx.rateLimits.close();
    await ctx.db.close();
    await t.close();
  });

  async function call(method: 'GET' | 'POST', url: string, body?: unknown, key?: string): Promise<Answer> {
    const started = performance.now();
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${apiKey}`, ...(key ? { 'idempotency-key': key } : {}) },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    const code = res.statusCode === 503 ? res.json().error.code : undefined;
    return { status: res.statusCode, retryAfter: res.headers['retry-after'] as string | undefined, code, ms: performance.now() - started };
  }

  /** Reads and writes of products and orders, with and without an Idempotency-Key, all at once. */
  function wave(tag: string): Promise<Answer>[] {
    const order = { lineItems: [{ productId, quantity: 1 }] };
    return [
      ...Array.from({ length: 8 }, (_, i) => call('POST', '/v1/products', { name: `${tag} plain ${i}` })),
      ...Array.from({ length: 3 }, (_, i) => call('POST', '/v1/products', { name: `${tag} keyed ${i}` }, `${tag}-product-${i}`)),
      ...Array.from({ length: 2 }, () => call('POST', '/v1/orders', order)),
      call('POST', '/v1/orders', order, `${tag}-order`),
      // Identical reads, coalesced into one computation.
      ...Array.from({ length: 5 }, () => call('GET', '/v1/products')),
      call('GET', `/v1/products/${productId}`),
      call('GET', '/v1/orders'),
    ];
  }

  async function healthy(): Promise<void> {
    await eventually(async () => (await call('GET', '/v1/products')).status === 200, 15_000);
  }

  async function names(prefix: string): Promise<Map<string, number>> {
    const rows = await t.ctx.db.query<{ name: string; n: number }>('SELECT name, count(*)::int AS n FROM products WHERE name LIKE $1 GROUP BY name', [`${prefix}%`]);
    return new Map(rows.map((r) => [r.name, r.n]));
  }

  const faults: { name: string; mode: ProxyMode | 'refuse' }[] = [
    { name: 'blackholed', mode: 'blackhole' },
    { name: 'reset', mode: 'reset' },
    { name: 'refusing connections', mode: 'refuse' },
    { name: 'full (too many clients)', mode: 'full' },
  ];

  for (const { name, mode } of faults) {
    it(`${name}: reads and writes answer 503 within the time-out, at once while known down, with connection attempts bounded, and nothing is created twice`, async () => {
      await healthy();
      const tag = `fault-${mode}`;
      proxy.resetAttempts();
      if (mode === 'refuse') await proxy.stop();
      else proxy.setMode(mode);

      try {
        const first = await Promise.all(wave(`${tag}-a`));
        // The fault is known now: for the next two seconds every request is answered at once.
        const later: Answer[] = [];
        const until = performance.now() + 2_000;
        while (performance.now() < until) {
          later.push(...(await Promise.all(wave(`${tag}-b`))));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        for (const answer of first) {
          expect(answer).toMatchObject({ status: 503, code: 'UNAVAILABLE', retryAfter: expect.stringMatching(/^[1-9]\d*$/) });
          expect(answer.ms).toBeLessThan(ANSWER_MS);
        }
        for (const answer of later) expect(answer).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
        const slow = later.filter((a) => a.ms > KNOWN_MS).length;
        // At most a pool's worth of requests wait for the database, and the probes.
        expect(slow).toBeLessThanOrEqual(2 * POOL_SIZE + PROBES);
        // Hundreds of requests, a few connection attempts (the pool's first ones, then a probe at a
        // time, backing off), never a storm.
        if (mode !== 'refuse') expect(proxy.attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
      } finally {
        if (mode === 'refuse') await proxy.start();
        else proxy.setMode('pass');
      }
      await healthy();
      // Nothing answered 503 was written; the keyed creations, retried, are written once.
      expect(await names(tag)).toEqual(new Map());
      for (let i = 0; i < 3; i++) {
        const again = await call('POST', '/v1/products', { name: `${tag}-a keyed ${i}` }, `${tag}-a-product-${i}`);
        expect(again.status).toBe(201);
        const repeat = await call('POST', '/v1/products', { name: `${tag}-a keyed ${i}` }, `${tag}-a-product-${i}`);
        expect(repeat.status).toBe(201);
      }
      expect(await names(tag)).toEqual(new Map([0, 1, 2].map((i) => [`${tag}-a keyed ${i}`, 1])));
    }, 40_000);
  }
});
