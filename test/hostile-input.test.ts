import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { hostileRequests, startHostileApp, type Route } from './helpers/hostile-input.js';
import { expectEnvelope, rawRequest, snapshot } from './helpers/security.js';

/**
 * Input an attacker or a broken client sends: each gets the documented 4xx envelope with the
 * Request-Id, never a 5xx, and leaves every table of the database exactly as it was.
 */
describe('hostile input', () => {
  let t: TestApp;
  let key: string;
  let owner: string;
  let ws: string;
  let port: number;
  let routes: Route[];

  beforeAll(async () => {
    ({ t, key, owner, ws, port, routes } = await startHostileApp());
  });
  afterAll(() => t.close());

  const { refused, auth } = hostileRequests(() => t);
  const json = (payload: string | Buffer, token = key): InjectOptions => ({
    method: 'POST',
    url: '/v1/products',
    headers: { ...auth(token), 'content-type': 'application/json' },
    payload,
  });

  describe('bodies', () => {
    it('refuses a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
      const big = JSON.stringify({ name: 'x', description: 'y'.repeat(t.ctx.config.bodyLimitBytes) });
      await refused(json(big), 413, 'PAYLOAD_TOO_LARGE');
      await refused({ ...json(big), url: `/v1/workspaces/${ws}/api-keys`, headers: { ...auth(owner), 'content-type': 'application/json' } }, 413);
    });

    it('refuses a streamed body over the limit, with no Content-Length, with 413 over a real socket', async () => {
      const chunk = 'a'.repeat(64 * 1024);
      const chunks = Math.ceil(t.ctx.config.bodyLimitBytes / chunk.length) + 1;
      const first = `{"name":"${chunk}`;
      let body = `${first.length.toString(16)}\r\n${first}\r\n`;
      for (let i = 1; i < chunks; i++) body += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
      body += '0\r\n\r\n';
      const before = await snapshot(t.ctx);
      const res = await rawRequest(
        port,
        `POST /v1/products HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
      );
      expect(expectEnvelope(res.status, res.headers, res.body).code).toBe('PAYLOAD_TOO_LARGE');
      expect(res.status).toBe(413);
      expect(await snapshot(t.ctx)).toEqual(before);
    });

    it('refuses bodies that are not application/json with 415', async () => {
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
        'text/json',
        'application/jsonx',
        'application/json-patch+json',
        'application/vnd.api+json',
        'application/octet-stream',
      ]) {
        await refused({ ...json('{"name":"x"}'), headers: { ...auth(), 'content-type': type } }, 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
      await refused({ method: 'POST', url: '/v1/products', headers: auth(), payload: 'name=x' }, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('refuses malformed JSON with 400 VALIDATION', async () => {
      for (const text of ['{', '{"name":}', '{"name":"x",}', '[1,]', 'NaN', "{'name':'x'}", '{"name":"x"}x', '\uFEFF{"name":"x"}', '{"name":"x"', 'nul', '"\\x"', '{"name":"\\ud83"}']) {
        await refused(json(text), 400, 'VALIDATION');
      }
    });

    it('refuses deep nesting without exhausting the stack', async () => {
      const depth = 100_000;
      await refused(json('['.repeat(depth) + ']'.repeat(depth)), 400, 'VALIDATION');
      await refused(json('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)), 400, 'VALIDATION');
      let nested: unknown = 'x';
      for (let i = 0; i < 40; i++) nested = { k: nested };
      await refused(json(JSON.stringify({ name: 'x', metadata: nested })), 400, 'VALIDATION');
    });

    it('refuses huge strings, wrong types and unknown fields, naming the field', async () => {
      const cases: unknown[] = [
        { name: 'x'.repeat(900_000) },
        { name: 'x', description: 'd'.repeat(100_000) },
        { name: 'x', metadata: { k: 'v'.repeat(10_000) } },
        { name: 'x', metadata: { ['k'.repeat(1000)]: 'v' } },
        { name: 'x', metadata: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 'v'])) },
        {},
        { name: 123 },
        { name: null },
        { name: ['x'] },
        { name: { toString: 'x' } },
        { name: true },
        { name: 'x', price: '5' },
        { name: 'x', price: { amount: '5', currency: 'USD' } },
        { name: 'x', price: { amount: 1e308, currency: 'USD' } },
        { name: 'x', price: { amount: -0.5, currency: 'USD' } },
        { name: 'x', price: { amount: 5, currency: 'usd' } },
        { name: 'x', active: 'true' },
        { name: 'x', active: 1 },
        { name: 'x', metadata: [] },
        { name: 'x', metadata: { a: { b: 'c' } } },
        { name: 'x', colour: 'red' },
        { name: 'x', price: { amount: 5, currency: 'USD', tax: 1 } },
        [],
        [{ name: 'x' }],
        'x',
        42,
        null,
        true,
      ];
      for (const body of cases) await refused(json(JSON.stringify(body)), 400, 'VALIDATION');
      const unknown = await refused(json('{"name":"x","colour":"red"}'), 400, 'VALIDATION');
      expect(unknown.message).toContain('colour');
      for (const text of ['{"name":"x","__proto__":{"admin":true}}', '{"name":"x","constructor":{"prototype":{}}}', '{"name":"x","metadata":{"__proto__":{"a":1}}}']) {
        await refused(json(text), 400, 'VALIDATION');
      }
    });

    it('refuses NUL characters, lone surrogates and invalid UTF-8 in bodies', async () => {
      for (const text of [
        '{"name":"a\\u0000b"}',
        '{"name":"x","metadata":{"k\\u0000":"v"}}',
        '{"name":"x","metadata":{"k":"\\u0000"}}',
        '{"name":"\\ud800"}',
        '{"name":"x","metadata":{"k":"\\udfff"}}',
        '{"name":"x","metadata":{"\\ud800":"v"}}',
        '{"name":"x","description":"\\udc00\\ud800"}',
      ]) {
        await refused(json(text), 400, 'VALIDATION');
      }
      for (const bytes of [
        Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      ]) {
        await refused(json(bytes), 400, 'VALIDATION');
      }
    });

    it('refuses a missing, empty or non-object body on every POST route that takes one', async () => {
      const posts = routes.filter((r) => r.method === 'POST');
      expect(posts.length).toBeGreaterThan(0);
      for (const route of posts) {
        const url = route.path.replace('{workspaceId}', ws).replace(/\{(\w+)\}/g, 'nope');
        // API keys, notifications and push devices are a user's: they take a personal access token.
        const token = url.includes('/api-keys') || url.includes('/notifications') || url.startsWith('/v1/me/') ? owner : key;
        for (const options of [
          { method: 'POST', url, headers: auth(token) },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: '' },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: 'null' },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: '[]' },
        ] as InjectOptions[]) {
          await refused(options);
        }
      }
      // Every POST route of both mounts, a dozen bodies each: it grows with the API.
    }, 120_000);
  });

  describe('orders', () => {
    const order = (payload: unknown): InjectOptions => ({
      method: 'POST',
      url: '/v1/orders',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
    let productId: string;
    beforeAll(async () => {
      productId = (await t.call(key, 'POST', '/v1/products', { name: 'Orderable', price: { amount: 100, currency: 'EUR' } })).json().id;
    });

    it('refuses huge line-item arrays, naming the field', async () => {
      for (const count of [101, 10_000]) {
        const error = await refused(order({ lineItems: Array.from({ length: count }, () => ({ productId, quantity: 1 })) }), 400, 'VALIDATION');
        expect(error.details?.[0].path).toBe('body.lineItems');
      }
      await refused(order({ lineItems: Array.from({ length: 200_000 }, () => ({ productId, quantity: 1 })) }), 413, 'PAYLOAD_TOO_LARGE');
    });

    it('refuses negative, fractional, huge and mistyped quantities and product ids', async () => {
      for (const quantity of [-1, 0, 0.5, 1.5, 10_001, 1e308, -0.0001, '1', null, true, [1], { n: 1 }]) {
        const error = await refused(order({ lineItems: [{ productId, quantity }] }), 400, 'VALIDATION');
        expect(error.details?.[0].path, JSON.stringify(quantity)).toBe('body.lineItems.0.quantity');
      }
      for (const id of ['', 'x'.repeat(10_000), 1, null, ['prd_x'], { id: productId }]) {
        const error = await refused(order({ lineItems: [{ productId: id, quantity: 1 }] }), 400, 'VALIDATION');
        expect(error.details?.[0].path, JSON.stringify(id).slice(0, 40)).toBe('body.lineItems.0.productId');
      }
      for (const id of ["prd_' OR 1=1 --", 'PRD_01KDVDNA00HBT6QFA3NA92FSMH', productId.toUpperCase(), `${productId} `, 'ord_01kdvdna00hbt6qfa3na92fsmh']) {
        const error = await refused(order({ lineItems: [{ productId: id, quantity: 1 }] }), 400, 'VALIDATION');
        expect(error.message).toContain('lineItems[0].productId');
      }
      await refused(order('{"lineItems":[{"productId":"prd_\\u0000","quantity":1}]}'), 400, 'VALIDATION');
      await refused(order({ lineItems: { 0: { productId, quantity: 1 } } }), 400, 'VALIDATION');
      await refused(order({ lineItems: [{ productId, quantity: 1 }], customerEmail: `${'a'.repeat(300)}@example.com` }), 400, 'VALIDATION');
    });

    it('refuses order list filters that are not what they claim', async () => {
      for (const query of ['status=PAID', 'status=paid&status=pending', `status=${'x'.repeat(10_000)}`, 'createdGte=2016-12-31T23:59:60Z', 'createdLte=0000-01-01T00:00:00Z', 'expand=lineItems,nope']) {
        await refused({ method: 'GET', url: `/v1/orders?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
    });
  });
});
