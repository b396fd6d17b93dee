import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { openPostgres } from '../src/db/postgres.js';
import { newToken } from '../src/lib/tokens.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

/**
 * The error envelope and the rows of the error table (docs/api.md#errors) that are not about
 * credentials (those are in auth.test.ts): bad input, unknown routes, body limits, faults.
 */
describe('error envelope', () => {
  let t: TestApp;
  let key: string;
  let productId: string;
  const send = (method: 'POST' | 'PATCH', url: string, payload: string | Buffer, contentType = 'application/json') =>
    t.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}`, 'content-type': contentType } });

  beforeAll(async () => {
    t = await startTestApp();
    key = t.demo.workspaces[0].apiKey;
    productId = ok(await t.call(key, 'POST', '/v1/products', { name: 'Original', metadata: { a: 'b' } }), 201).id;
  });
  afterAll(() => t.close());

  it('carries a Request-Id on every response, unique per request, equal to the error requestId', async () => {
    const ids = new Set<string>();
    for (const res of [await t.call(key, 'GET', '/v1/products'), await t.call(null, 'GET', '/openapi.json'), await t.call(null, 'GET', '/v1/products')]) {
      expect(res.headers['request-id']).toMatch(/^req_[0-9a-z]{26}$/);
      ids.add(res.headers['request-id'] as string);
    }
    expect(ids.size).toBe(3);
    // A Request-Id sent by the client is not taken over.
    const res = await t.call(null, 'GET', '/v1/products', undefined, { 'request-id': 'req_mine' });
    expect(expectError(res, 401, 'UNAUTHENTICATED').requestId).not.toBe('req_mine');
  });

  it('answers unknown routes and methods with 404 NOT_FOUND', async () => {
    for (const [method, url] of [
      ['GET', '/v1/nope'],
      ['GET', '/v2/products'],
      ['DELETE', '/v1/events'],
      ['PUT', `/v1/products/${productId}`],
      ['GET', `/v1/products/${productId}/nope`],
    ] as const) {
      expect(expectError(await t.call(key, method, url), 404, 'NOT_FOUND').message).toContain(url.split('?')[0]);
    }
    expectError(await t.call(null, 'GET', '/nope'), 404, 'NOT_FOUND');
    for (const id of ['nope', 'prd_', 'prd_01aaaaaaaaaaaaaaaaaaaaaaaa', productId.toUpperCase(), 'x'.repeat(150)]) {
      expectError(await t.call(key, 'GET', `/v1/products/${id}`), 404, 'NOT_FOUND');
      expectError(await t.call(key, 'PATCH', `/v1/products/${id}`, { name: 'x' }), 404, 'NOT_FOUND');
      expectError(await t.call(key, 'DELETE', `/v1/products/${id}`), 404, 'NOT_FOUND');
    }
  });

  it('refuses malformed JSON with 400 VALIDATION', async () => {
    for (const payload of ['{"name":', '{"name":"a"} x', "{'name':'a'}", '{"name":"a",}', 'nul']) {
      expect(expectError(await send('POST', '/v1/products', payload), 400, 'VALIDATION').message).toMatch(/JSON/);
    }
    expectError(await send('POST', '/v1/products', Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), 400, 'VALIDATION');
    expectError(await send('POST', '/v1/products', ''), 400, 'VALIDATION');
    expectError(await send('POST', '/v1/products', '[{"name":"a"}]'), 400, 'VALIDATION');
    expectError(await send('POST', '/v1/products', '"a"'), 400, 'VALIDATION');
  });

  it('refuses text that PostgreSQL cannot store, instead of failing or altering it', async () => {
    for (const payload of [
      '{"name":"a\\u0000b"}',
      '{"name":"x","metadata":{"k\\u0000":"v"}}',
      // Lone UTF-16 surrogates: valid JSON escapes, but not Unicode text.
      '{"name":"\\ud800"}',
      '{"name":"x","metadata":{"k":"\\udfff"}}',
      '{"name":"x","metadata":{"\\ud83d":"v"}}',
      `${'['.repeat(40)}${']'.repeat(40)}`,
    ]) {
      expectError(await send('POST', '/v1/products', payload), 400, 'VALIDATION');
    }
    expectError(await send('PATCH', `/v1/products/${productId}`, '{"metadata":{"a":"\\ud800"}}'), 400, 'VALIDATION');
    expectError(await t.call(key, 'GET', '/v1/events?type=a%00b'), 400, 'VALIDATION');
    // A surrogate pair is a real character and is kept.
    expect(ok(await send('POST', '/v1/products', '{"name":"\\ud83d\\ude00"}'), 201).name).toBe('\u{1F600}');
    expect(ok(await t.call(key, 'GET', `/v1/products/${productId}`))).toMatchObject({ name: 'Original', metadata: { a: 'b' } });
  });

  it('validates bodies strictly: no coercion, unknown fields named', async () => {
    for (const body of [{ name: 123 }, { name: 'x', active: 'true' }, { name: 'x', price: { amount: '100', currency: 'USD' } }, { name: null }]) {
      const error = expectError(await t.call(key, 'POST', '/v1/products', body), 400, 'VALIDATION');
      expect(error.details?.length).toBeGreaterThan(0);
    }
    const unknown = expectError(await t.call(key, 'POST', '/v1/products', { name: 'x', colour: 'red' }), 400, 'VALIDATION');
    expect(unknown.message).toContain('colour');
    expect(unknown.details).toEqual([{ path: 'body.colour', message: expect.stringContaining('colour') }]);
    const nested = expectError(await t.call(key, 'PATCH', `/v1/products/${productId}`, { price: { amount: 1, currency: 'USD', tax: 1 } }), 400, 'VALIDATION');
    expect(nested.message).toContain('tax');
    expectError(await t.call(key, 'PATCH', `/v1/products/${productId}`, {}), 400, 'VALIDATION');
    expectError(await t.call(key, 'GET', '/v1/products?colour=red'), 400, 'VALIDATION');
  });

  it('answers 415 for a body that is not JSON and 413 for one over the limit', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      expectError(await send('POST', '/v1/products', '{"name":"x"}', type), 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    const big = JSON.stringify({ name: 'x', description: 'y'.repeat(t.ctx.config.bodyLimitBytes) });
    expectError(await send('POST', '/v1/products', big), 413, 'PAYLOAD_TOO_LARGE');
    const events = ok(await t.call(key, 'GET', '/v1/events?type=product.created')).data;
    expect(events).toHaveLength(2);
  });

  it('answers 500 INTERNAL for an unexpected fault without leaking its details', async () => {
    await t.ctx.db.query("ALTER TABLE products ADD CONSTRAINT secret_rule_xyz CHECK (name <> 'boom')");
    try {
      const error = expectError(await t.call(key, 'POST', '/v1/products', { name: 'boom' }), 500, 'INTERNAL');
      expect(error.message).not.toMatch(/secret_rule_xyz|constraint|products|violates/i);
      expect(error.details).toBeUndefined();
    } finally {
      await t.ctx.db.query('ALTER TABLE products DROP CONSTRAINT secret_rule_xyz');
    }
  });

  it('answers 503 UNAVAILABLE when the database cannot be reached', async () => {
    // A real PostgreSQL client pointed at a port where nothing listens.
    const db = await openPostgres({ url: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    const app = await buildApp(createContext(testConfig(), db, randomBytes(32)));
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${newToken('api_key', false)}` } });
      const error = expectError(res, 503, 'UNAVAILABLE');
      expect(error.message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
      // A token with a wrong checksum is refused before any look-up: 401 even with the store down.
      const typo = newToken('api_key', false).replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'));
      const refused = await app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${typo}` } });
      expectError(refused, 401, 'UNAUTHENTICATED');
    } finally {
      await app.close();
      await db.close();
    }
  });
});
