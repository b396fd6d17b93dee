import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.js';
import { loadConfig } from '../src/lib/config.js';
import { openRateLimitStore } from '../src/http/ratelimit/open.js';
import { RedisRateLimitStore } from '../src/http/ratelimit/redis.js';
import { createContext } from '../src/server/runtime.js';
import { ManualClock, startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { LogCapture } from './helpers/log.js';
import { checkAgainstModel, sequences } from './helpers/rate-model.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { missing, SERVICES } from './helpers/services.js';

/**
 * Two API instances on one database and one real Redis (127.0.0.1:6379), each with its own
 * connection, as two processes of one deployment would be. Every test uses its own key prefix.
 */
const REDIS_URL = SERVICES.redis.where();
const REDIS_PORT = Number(new URL(REDIS_URL).port || 6379);

describe.skipIf(missing('redis'))('rate limits shared through Redis', () => {
  let prefix: string;
  let clock: ManualClock;
  let a: TestApp;
  let b: App;
  let storeB: RedisRateLimitStore;
  /** What this test opened, closed after it in reverse order. */
  let opened: { close(): Promise<unknown> }[] = [];
  let logB: LogCapture;
  let proxy: TcpProxy | null = null;

  const store = (url: string, timeoutMs = 250) => new RedisRateLimitStore({ url, prefix, timeoutMs });

  /**
   * Instance A talks to Redis directly; instance B through `urlB` (the proxy in outage tests). A
   * test of counting, not of outages, gives Redis a time-out no loaded machine reaches.
   */
  async function start(urlB: string, config = {}, timeoutMs = 250) {
    clock = new ManualClock();
    const storeA = store(REDIS_URL, timeoutMs);
    a = await startTestApp({ clock, config, rateLimits: storeA });
    opened.push(a);
    storeB = store(urlB, timeoutMs);
    opened.push(storeB);
    logB = new LogCapture();
    b = await buildApp(createContext(testConfig(config), a.testDb.db, randomBytes(32), clock, { rateLimits: storeB }), {
      logger: { level: 'info', stream: logB },
    });
    opened.push(b);
    await storeA.waitShared();
    await storeB.waitShared();
  }

  const call = (app: App, token: string) => app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${token}` } });

  beforeEach(() => {
    prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
  });

  afterEach(async () => {
    for (const thing of opened.reverse()) await thing.close();
    opened = [];
    await proxy?.stop();
    proxy = null;
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('holds the combined limit of 300 per minute across two instances', async () => {
    await start(REDIS_URL);
    const key = a.demo.workspaces[0].apiKey;
    const responses: LightMyRequestResponse[] = [];
    for (let i = 0; i < 301; i++) {
      clock.advance(100);
      responses.push(await call(i % 2 === 0 ? a.app : b, key));
    }
    const codes = responses.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 429)).toHaveLength(1);
    expect(codes[300]).toBe(429);
    expect(responses[1].headers['ratelimit']).toBe('"default";r=298;t=60');
    const refused = responses[300];
    expect(refused.json().error.code).toBe('RATE_LIMITED');
    expect(refused.headers['ratelimit-policy']).toBe('"default";q=300;w=60');
    expect(refused.headers['ratelimit']).toBe('"default";r=0;t=30');
    expect(refused.headers['retry-after']).toBe('30');
    // The counters are in Redis, under this test's prefix only.
    const me = (await call(a.app, key)).statusCode;
    expect(me).toBe(429);
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    await redis.quit();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${prefix}cred:key_[0-9a-z]{26}$`));
  });

  it('runs the same algorithm in its Lua script as in memory, on random sequences', async () => {
    const shared = store(REDIS_URL);
    opened.push(shared);
    await shared.waitShared();
    let run = 0;
    await fc.assert(fc.asyncProperty(sequences, (sequence) => checkAgainstModel(shared, `model:${run++}`, sequence)), { numRuns: 60 });
    expect(shared.shared).toBe(true);
  });

  it('is the store the configuration picks with REDIS_URL, under SVC_REDIS_KEY_PREFIX', async () => {
    const configured = openRateLimitStore(loadConfig({ REDIS_URL, SVC_REDIS_KEY_PREFIX: prefix }));
    expect(configured).toBeInstanceOf(RedisRateLimitStore);
    await (configured as RedisRateLimitStore).waitShared();
    const rule = { limit: 2, windowMs: 60_000 };
    expect((await configured.hit('cred:key_x', rule, 1_000)).remaining).toBe(1);
    await configured.close();
    const redis = new Redis(REDIS_URL);
    expect(await redis.zcard(`${prefix}rl:cred:key_x`)).toBe(1);
    await redis.quit();
    expect(openRateLimitStore(loadConfig({}))).not.toBeInstanceOf(RedisRateLimitStore);
  });

  it('admits exactly the limit when both instances are hit at once', async () => {
    await start(REDIS_URL, { rateLimitApiKey: 50 }, 5_000);
    const key = a.demo.workspaces[0].apiKey;
    const responses = await Promise.all(Array.from({ length: 80 }, (_, i) => call(i % 2 === 0 ? a.app : b, key)));
    expect(responses.filter((r) => r.statusCode === 200)).toHaveLength(50);
    expect(responses.filter((r) => r.statusCode === 429)).toHaveLength(30);
  });

  it('shares the per-address count of failed authentications', async () => {
    await start(REDIS_URL, { rateLimitUnauthenticated: 4 });
    const fail = (app: App) => app.inject({ method: 'GET', url: '/v1/me', remoteAddress: '192.0.2.44' });
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push((await fail(i % 2 === 0 ? a.app : b)).statusCode);
    expect(codes).toEqual([401, 401, 401, 401, 429, 429]);
  });

  it('keeps serving while Redis is down, logs the outage once, and shares counters again when it is back', async () => {
    proxy = new TcpProxy(REDIS_PORT);
    await proxy.start();
    await start(proxy.url, { rateLimitApiKey: 10 });
    const key = a.demo.workspaces[0].apiKey;
    for (let i = 0; i < 4; i++) expect((await call(a.app, key)).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) expect((await call(b, key)).statusCode).toBe(200);

    await proxy.stop();
    // B cannot reach Redis: it keeps answering, counting in its own memory meanwhile.
    for (let i = 0; i < 6; i++) {
      const res = await call(b, key);
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"default";q=10;w=60');
    }
    expect(storeB.shared).toBe(false);
    // A still counts in Redis: 4 + 4 before the outage, 2 more fit.
    expect((await call(a.app, key)).statusCode).toBe(200);

    await proxy.start();
    await storeB.waitShared();
    // Back on Redis: 9 counted there, so one more fits and then B refuses, whatever its memory held.
    expect((await call(b, key)).statusCode).toBe(200);
    expect((await call(b, key)).statusCode).toBe(429);
    expect((await call(a.app, key)).statusCode).toBe(429);

    const messages = logB.records.map((r) => `${r.level} ${r.msg}`);
    expect(messages.filter((m) => m.includes('unreachable'))).toHaveLength(1);
    expect(messages.filter((m) => m.includes('reachable again'))).toHaveLength(1);
    expect(messages.find((m) => m.includes('unreachable'))).toMatch(/^40 /);
    expect(logB.text).not.toContain(key);
  });

  it('does not wait on a Redis that stops answering, and finds it again when it answers', async () => {
    proxy = new TcpProxy(REDIS_PORT);
    await proxy.start();
    await start(proxy.url, { rateLimitApiKey: 10 });
    const key = a.demo.workspaces[0].apiKey;
    for (let i = 0; i < 8; i++) expect((await call(a.app, key)).statusCode).toBe(200);

    proxy.hang();
    // The first request gives up on Redis after the command time-out; all are answered.
    for (let i = 0; i < 5; i++) expect((await call(b, key)).statusCode).toBe(200);
    expect(storeB.shared).toBe(false);

    proxy.release();
    await storeB.waitShared();
    // Shared again: Redis holds A's 8 (and possibly the command that timed out, which Redis ran once
    // released), so B admits at most 2 more, although its own memory holds only 5.
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await call(b, key)).statusCode);
    expect(after.filter((c) => c === 200).length).toBeLessThanOrEqual(2);
    expect(after.slice(2)).toEqual([429, 429]);
    expect(logB.records.filter((r) => String(r.msg).includes('unreachable'))).toHaveLength(1);
  });
});
