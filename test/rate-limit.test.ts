import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/lib/config.js';
import { addressKey } from '../src/http/ratelimit/hooks.js';
import { MemoryRateLimitStore } from '../src/http/ratelimit/memory.js';
import { ManualClock, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { checkAgainstModel, sequences } from './helpers/rate-model.js';

const MINUTE = 60_000;

function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): void {
  expect(res.statusCode).toBe(status);
  const { error } = res.json();
  expect(error.code).toBe(code);
  expect(error.requestId).toBe(res.headers['request-id']);
}

/** Sends `n` requests and returns their responses. */
async function burst(n: number, send: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse[]> {
  const out: LightMyRequestResponse[] = [];
  for (let i = 0; i < n; i++) out.push(await send());
  return out;
}

const statuses = (responses: LightMyRequestResponse[]) => responses.map((r) => r.statusCode);

/** Wraps an app opener so that every app it opens in a test is closed after that test. */
function closedAfterEach(open: (options: Parameters<typeof startTestApp>[0]) => Promise<TestApp>) {
  let opened: TestApp[] = [];
  afterEach(async () => {
    for (const app of opened) await app.close();
    opened = [];
  });
  return async (options: Parameters<typeof startTestApp>[0]) => {
    const app = await open(options);
    opened.push(app);
    return app;
  };
}

describe('rate limits per credential', () => {
  let t: TestApp;
  let clock: ManualClock;
  const open = closedAfterEach(async (options: Parameters<typeof startTestApp>[0]) => (t = await startTestApp(options)));

  async function start(config = {}) {
    clock = new ManualClock();
    await open({ clock, config });
  }

  it('admits 300 requests of one API key inside a minute and refuses the 301st with the headers', async () => {
    await start();
    const key = t.demo.workspaces[0].apiKey;
    const responses = await burst(301, () => {
      clock.advance(100);
      return t.call(key, 'GET', '/v1/me');
    });
    // 301 requests over 30.1 s of clock time: exactly one refusal, the last.
    expect(statuses(responses).filter((s) => s === 429)).toHaveLength(1);
    expect(statuses(responses).slice(0, 300).every((s) => s === 200)).toBe(true);

    const first = responses[0];
    expect(first.headers['ratelimit-policy']).toBe('"default";q=300;w=60');
    expect(first.headers['ratelimit']).toBe('"default";r=299;t=60');
    expect(responses[299].headers['ratelimit']).toBe('"default";r=0;t=31');

    const refused = responses[300];
    expectEnvelope(refused, 429, 'RATE_LIMITED');
    expect(refused.headers['ratelimit-policy']).toBe('"default";q=300;w=60');
    // The first request (at +0.1 s) leaves the window at +60.1 s; the refusal is at +30.1 s.
    expect(refused.headers['retry-after']).toBe('30');
    expect(refused.headers['ratelimit']).toBe('"default";r=0;t=30');

    // Another credential has its own count.
    expect((await t.call(t.demo.workspaces[1].apiKey, 'GET', '/v1/me')).statusCode).toBe(200);
    // Once the oldest request ages out, one more fits.
    clock.advance(30_000);
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(200);
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(429);
  });

  it('puts the headers on every authenticated response, errors included', async () => {
    await start();
    const key = t.demo.workspaces[0].apiKey;
    for (const [method, url, body] of [
      ['GET', '/v1/products'],
      ['GET', '/v1/products/prd_nope'],
      ['POST', '/v1/products', { name: 5 }],
      ['GET', '/v1/no-such-route'],
      ['GET', `/v1/workspaces/${t.demo.workspaces[1].id}/products`],
    ] as const) {
      const res = await t.call(key, method, url, body);
      expect(res.headers['ratelimit-policy'], `${method} ${url}`).toBe('"default";q=300;w=60');
      expect(res.headers['ratelimit'], `${method} ${url}`).toMatch(/^"default";r=\d+;t=\d+$/);
    }
  });

  it('slides: a full quota spent just before a minute boundary is not renewed at the boundary', async () => {
    await start();
    const key = t.demo.workspaces[0].apiKey;
    clock.advance(59_000);
    expect(statuses(await burst(300, () => t.call(key, 'GET', '/v1/me'))).every((s) => s === 200)).toBe(true);

    // Two seconds later a fixed window would have started afresh; the sliding window still holds 300.
    clock.advance(2_000);
    const refused = await t.call(key, 'GET', '/v1/me');
    expectEnvelope(refused, 429, 'RATE_LIMITED');
    expect(refused.headers['retry-after']).toBe('58');
    clock.advance(57_999);
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(429);

    // Exactly one minute after they were admitted, all 300 have left the window.
    clock.advance(1);
    const again = await burst(301, () => t.call(key, 'GET', '/v1/me'));
    expect(statuses(again).filter((s) => s === 200)).toHaveLength(300);
    expect(again[300].statusCode).toBe(429);
  });

  it('frees quota as requests age out, never more than the limit in any minute', async () => {
    await start();
    const key = t.demo.workspaces[0].apiKey;
    await burst(100, () => t.call(key, 'GET', '/v1/me'));
    clock.advance(30_000);
    await burst(200, () => t.call(key, 'GET', '/v1/me'));
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(429);
    // At +60 s the first 100 have left; the 200 of +30 s remain.
    clock.advance(30_000);
    const next = await burst(101, () => t.call(key, 'GET', '/v1/me'));
    expect(statuses(next).filter((s) => s === 200)).toHaveLength(100);
    expect(next[100].headers['retry-after']).toBe('30');
  });

  it('limits a personal access token to 120 per minute', async () => {
    await start();
    const token = userOf(t.demo, 'owner').token;
    const responses = await burst(121, () => t.call(token, 'GET', '/v1/me'));
    expect(statuses(responses).slice(0, 120).every((s) => s === 200)).toBe(true);
    expect(responses[0].headers['ratelimit-policy']).toBe('"default";q=120;w=60');
    expectEnvelope(responses[120], 429, 'RATE_LIMITED');
    expect(responses[120].headers['retry-after']).toBe('60');
  });

  it('takes the defaults from the configuration', async () => {
    await start({ rateLimitApiKey: 3, rateLimitPat: 2 });
    const key = t.demo.workspaces[0].apiKey;
    expect(statuses(await burst(4, () => t.call(key, 'GET', '/v1/me')))).toEqual([200, 200, 200, 429]);
    const token = userOf(t.demo, 'viewer').token;
    expect(statuses(await burst(3, () => t.call(token, 'GET', '/v1/me')))).toEqual([200, 200, 429]);
  });

  it('applies a per-key override, and refused requests change nothing', async () => {
    await start();
    const owner = userOf(t.demo, 'owner').token;
    const ws = t.demo.workspaces[0].id;
    const created = await t.call(owner, 'POST', `/v1/workspaces/${ws}/api-keys`, { name: 'slow', rateLimit: 5 });
    expect(created.statusCode).toBe(201);
    const slow = created.json().key as string;

    const responses = await burst(6, () => t.call(slow, 'POST', '/v1/products', { name: 'Mug' }));
    expect(statuses(responses)).toEqual([201, 201, 201, 201, 201, 429]);
    expect(responses[0].headers['ratelimit-policy']).toBe('"default";q=5;w=60');
    expect(responses[0].headers['ratelimit']).toBe('"default";r=4;t=60');
    expectEnvelope(responses[5], 429, 'RATE_LIMITED');
    const list = await t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/products?limit=100');
    expect(list.json().data).toHaveLength(5);
  });
});

describe('failed authentications per client address', () => {
  let t: TestApp;
  let clock: ManualClock;
  const open = closedAfterEach(async (options: Parameters<typeof startTestApp>[0]) => (t = await startTestApp(options)));

  const from = (address: string, token: string | null) =>
    t.app.inject({
      method: 'GET',
      url: '/v1/me',
      remoteAddress: address,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });

  it('refuses an address with 429 after 30 failures in a minute, before looking at its credential', async () => {
    clock = new ManualClock();
    await open({ clock });
    const wrong = 'svc_sk_' + 'A'.repeat(36);
    const failures = await burst(30, () => from('203.0.113.9', wrong));
    expect(statuses(failures).every((s) => s === 401)).toBe(true);
    expect(failures[0].headers['ratelimit-policy']).toBe('"unauthenticated";q=30;w=60');
    expect(failures[0].headers['ratelimit']).toBe('"unauthenticated";r=29;t=60');
    expect(failures[29].headers['ratelimit']).toBe('"unauthenticated";r=0;t=60');

    // Blocked: even a valid key is not evaluated from this address.
    const blocked = await from('203.0.113.9', t.demo.workspaces[0].apiKey);
    expectEnvelope(blocked, 429, 'RATE_LIMITED');
    expect(blocked.headers['retry-after']).toBe('60');
    expect(blocked.headers['ratelimit-policy']).toBe('"unauthenticated";q=30;w=60');
    expect((await from('203.0.113.9', null)).statusCode).toBe(429);

    // Other addresses are not affected, and successful requests are not counted.
    expect((await from('198.51.100.7', wrong)).statusCode).toBe(401);
    expect(statuses(await burst(40, () => from('198.51.100.8', t.demo.workspaces[0].apiKey))).every((s) => s === 200)).toBe(true);

    clock.advance(MINUTE);
    expect((await from('203.0.113.9', t.demo.workspaces[0].apiKey)).statusCode).toBe(200);
    expect((await from('203.0.113.9', wrong)).statusCode).toBe(401);
  });

  it('takes its limit from the configuration and counts an IPv6 /64 as one address', async () => {
    clock = new ManualClock();
    await open({ clock, config: { rateLimitUnauthenticated: 2 } });
    expect((await from('2001:db8:1:2::1', null)).statusCode).toBe(401);
    expect((await from('2001:db8:1:2:ffff::9', null)).statusCode).toBe(401);
    expect((await from('2001:db8:1:2::77', null)).statusCode).toBe(429);
    expect((await from('2001:db8:1:3::1', null)).statusCode).toBe(401);
  });
});

describe('client address behind proxies', () => {
  let t: TestApp;
  const open = closedAfterEach(async (options: Parameters<typeof startTestApp>[0]) => (t = await startTestApp(options)));
  const from = (forwarded: string) =>
    t.app.inject({ method: 'GET', url: '/v1/me', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': forwarded } });

  it('takes the address from X-Forwarded-For only when the proxy is trusted', async () => {
    await open({ config: { rateLimitUnauthenticated: 1, trustProxy: true } });
    expect((await from('203.0.113.1')).statusCode).toBe(401);
    expect((await from('203.0.113.2')).statusCode).toBe(401);
    expect((await from('203.0.113.1')).statusCode).toBe(429);

    await open({ config: { rateLimitUnauthenticated: 1 } });
    expect((await from('203.0.113.1')).statusCode).toBe(401);
    // Not trusted: a forged header does not make a new address.
    expect((await from('203.0.113.2')).statusCode).toBe(429);
  });

  it('reads the rate-limit settings, refusing bad values by name', () => {
    const config = loadConfig({ SVC_RATE_LIMIT_UNAUTHENTICATED: '7', SVC_REDIS_TIMEOUT: '1s', SVC_TRUST_PROXY: '10.0.0.0/8, 192.0.2.1' });
    expect(config).toMatchObject({ rateLimitApiKey: 300, rateLimitPat: 120, rateLimitUnauthenticated: 7, redisTimeoutMs: 1000, trustProxy: ['10.0.0.0/8', '192.0.2.1'], redisKeyPrefix: 'svc:' });
    expect(loadConfig({ SVC_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ SVC_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({}).trustProxy).toBe(false);
    for (const [name, value] of [
      ['SVC_RATE_LIMIT_UNAUTHENTICATED', '0'],
      ['SVC_RATE_LIMIT_API_KEY', 'many'],
      ['SVC_REDIS_TIMEOUT', '0ms'],
      ['SVC_TRUST_PROXY', 'proxy.example.com'],
      ['REDIS_URL', 'http://127.0.0.1:6379'],
    ]) {
      expect(() => loadConfig({ [name]: value }), name).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: value }), name).toThrow(name);
    }
  });
});

describe('addressKey', () => {
  it('keys IPv4 by address and IPv6 by /64', () => {
    expect(addressKey('203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('2001:db8:0001:0002:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('MemoryRateLimitStore', () => {
  it('decides as the sliding window is defined, on random sequences, never admitting more than the limit in any minute', async () => {
    await fc.assert(fc.asyncProperty(sequences, (sequence) => checkAgainstModel(new MemoryRateLimitStore(), 'k', sequence)), { numRuns: 300 });
  });

  it('forgets callers whose window has emptied', async () => {
    const store = new MemoryRateLimitStore();
    const rule = { limit: 2, windowMs: MINUTE };
    for (let i = 0; i < 100; i++) await store.hit(`k${i}`, rule, 0);
    expect(store.size).toBe(100);
    await store.hit('late', rule, MINUTE);
    expect(store.size).toBe(1);
  });

  it('looks without counting when asked to', async () => {
    const store = new MemoryRateLimitStore();
    const rule = { limit: 1, windowMs: MINUTE };
    expect((await store.hit('k', rule, 0, false)).remaining).toBe(1);
    expect((await store.hit('k', rule, 0)).allowed).toBe(true);
    expect((await store.hit('k', rule, 0, false)).allowed).toBe(false);
  });
});
