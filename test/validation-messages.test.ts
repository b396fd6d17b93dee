import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../src/engine/log/catalog.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

/**
 * Every refusal names its field and says what is allowed. Each row is a bad
 * request and the exact message it gets; none of them changes anything.
 */
describe('validation messages', () => {
  let t: TestApp;
  let key: string;
  let productId: string;
  let endpointId: string;
  let orderId: string;
  const catalog = EVENT_TYPES.join(', ');

  beforeAll(async () => {
    t = await startTestApp();
    key = t.demo.workspaces[0].apiKey;
    productId = ok(await t.call(key, 'POST', '/v1/products', { name: 'Original', price: { amount: 100, currency: 'EUR' } }), 201).id;
    endpointId = ok(await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] }), 201).id;
    orderId = ok(await t.call(key, 'POST', '/v1/orders', { lineItems: [{ productId, quantity: 1 }] }), 201).id;
  });
  afterAll(() => t?.close());

  const table: [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: () => string, body: unknown, message: string][] = [
    // Enums list their values; a union of constants is one enum, not "must be equal to constant" four times.
    ['GET', () => '/v1/webhooks/deliveries?status=bogus', undefined, 'Invalid query: query.status: must be one of: pending, success, failed, disabled.'],
    // Event-type filters take the catalog's types only.
    ['GET', () => '/v1/events?type=product.nope', undefined, `Invalid query: query.type: must be one of: ${catalog}.`],
    ['GET', () => '/v1/webhooks/deliveries?eventType=product', undefined, `Invalid query: query.eventType: must be one of: ${catalog}.`],
    ['GET', () => '/v1/products?limit=0', undefined, 'Invalid query: query.limit: must be at least 1.'],
    ['GET', () => '/v1/products?limit=101', undefined, 'Invalid query: query.limit: must be at most 100.'],
    ['GET', () => '/v1/products?limit=0x10', undefined, 'Invalid query: query.limit: must be a decimal integer.'],
    ['GET', () => '/v1/products?colour=red', undefined, 'Invalid query: query.colour: unknown field "colour".'],
    [
      'GET',
      () => '/v1/webhooks/deliveries?createdGte=yesterday',
      undefined,
      'Invalid query: query.createdGte: must be an ISO 8601 date-time with a time zone, such as 2026-01-31T12:00:00Z.',
    ],
    // A union with null: the branch that took the value's kind answers, without "must be null" or "anyOf".
    ['POST', () => '/v1/products', { name: 'x', price: { amount: 1.5, currency: 'USD' } }, 'Invalid body: body.price.amount: must be an integer.'],
    ['POST', () => '/v1/products', { name: 'x', price: { amount: -1, currency: 'USD' } }, 'Invalid body: body.price.amount: must be at least 0.'],
    ['POST', () => '/v1/products', { name: 'x', price: { amount: 1 } }, 'Invalid body: body.price.currency: "price.currency" is required.'],
    ['POST', () => '/v1/products', { name: 'x', price: { amount: 1, currency: 'USD', tax: 1 } }, 'Invalid body: body.price.tax: unknown field "price.tax".'],
    ['POST', () => '/v1/products', { name: 'x', price: 'free' }, 'Invalid body: body.price: must be an object or null.'],
    ['POST', () => '/v1/products', { name: 'x', price: { amount: 1, currency: 'XYZ' } }, 'Invalid body: body.price.currency: must be an ISO 4217 currency code such as USD, EUR or JPY (upper case).'],
    [
      'POST',
      () => '/v1/webhooks/endpoints',
      { url: 'https://hooks example.com/a', subscribedEvents: ['order.*'] },
      "Invalid body: body.url: must be an absolute URL of the form https://host/path (a broker's: amqp://user:password@host/vhost), without spaces or control characters.",
    ],
    ['POST', () => '/v1/products', { name: 'x', description: 5 }, 'Invalid body: body.description: must be a string or null.'],
    ['POST', () => '/v1/products', { name: 'x', description: 'y'.repeat(2001) }, 'Invalid body: body.description: must be at most 2000 characters long.'],
    ['POST', () => '/v1/products', { name: '' }, 'Invalid body: body.name: must not be empty.'],
    ['POST', () => '/v1/products', { name: 123 }, 'Invalid body: body.name: must be a string.'],
    ['POST', () => '/v1/products', {}, 'Invalid body: body.name: "name" is required.'],
    ['POST', () => '/v1/products', { name: 'x', active: 'yes' }, 'Invalid body: body.active: must be a boolean.'],
    ['POST', () => '/v1/products', { name: 'x', metadata: { color: 1 } }, 'Invalid body: body.metadata.color: must be a string.'],
    ['POST', () => '/v1/products', { name: 'x', metadata: { ['k'.repeat(41)]: 'v' } }, `Invalid body: body.metadata: key "${'k'.repeat(41)}" must be at most 40 characters long.`],
    ['PATCH', () => `/v1/products/${productId}`, {}, 'Invalid body: body: must set at least one field.'],
    ['POST', () => '/v1/webhooks/endpoints', { url: 'https://a.example', subscribedEvents: [] }, 'Invalid body: body.subscribedEvents: must have at least 1 item.'],
    ['POST', () => '/v1/webhooks/endpoints', { url: 'https://a.example', subscribedEvents: 'product.*' }, 'Invalid body: body.subscribedEvents: must be an array.'],
    ['PATCH', () => `/v1/webhooks/endpoints/${endpointId}`, { active: 'no' }, 'Invalid body: body.active: must be a boolean.'],
    // Operations that take no query parameter or no body refuse them as the others refuse an unknown one.
    ['GET', () => `/v1/orders/${orderId}?foo=1`, undefined, 'Invalid query: query.foo: unknown field "foo".'],
    ['GET', () => `/v1/products/${productId}?expand=x`, undefined, 'Invalid query: query.expand: unknown field "expand".'],
    ['GET', () => `/v1/workspaces/${'{workspace}'}/orders/${orderId}?foo=1`, undefined, 'Invalid query: query.foo: unknown field "foo".'],
    ['POST', () => `/v1/orders/${orderId}/pay`, { foo: 1 }, 'Invalid body: body.foo: unknown field "foo".'],
    ['POST', () => `/v1/orders/${orderId}/cancel`, [1], 'Invalid body: body: this operation takes no request body.'],
    ['POST', () => `/v1/webhooks/endpoints/${endpointId}/rotate-secret`, { secret: 'whsec_mine' }, 'Invalid body: body.secret: unknown field "secret".'],
    ['DELETE', () => `/v1/products/${productId}`, { hard: true }, 'Invalid body: body.hard: unknown field "hard".'],
  ];

  it.each(table.map(([method, path, body, message]) => ({ method, path, body, message })))('$method answers "$message"', async ({ method, path, body, message }) => {
    const error = expectError(await t.call(key, method, path().replace('{workspace}', t.demo.workspaces[0].id), body), 400, 'VALIDATION');
    expect(error.message).toBe(message);
    // The details repeat the message's field and sentence, once.
    expect(error.details).toHaveLength(1);
    expect(`${error.details![0].path}: ${error.details![0].message}.`).toBe(message.replace(/^Invalid \w+: /, ''));
  });

  it('changed nothing', async () => {
    expect(ok(await t.call(key, 'GET', '/v1/products')).data).toHaveLength(1);
    expect(ok(await t.call(key, 'GET', `/v1/products/${productId}`))).toMatchObject({ name: 'Original', price: { amount: 100, currency: 'EUR' } });
    expect(ok(await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpointId}`))).toMatchObject({ active: true });
    expect(ok(await t.call(key, 'GET', `/v1/orders/${orderId}`))).toMatchObject({ status: 'pending' });
  });

  it('takes an operation without a body when it is sent none, an empty one or {}', async () => {
    ok(await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpointId}/rotate-secret`));
    ok(await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpointId}/rotate-secret`, {}));
    const empty = await t.app.inject({ method: 'POST', url: `/v1/orders/${orderId}/pay`, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: '' });
    expect(empty.json()).toMatchObject({ status: 'paid' });
  });
});
