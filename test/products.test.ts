import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

describe('products', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp();
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t.close());

  it('creates, reads, updates and deletes a product, emitting one event per change', async () => {
    const created = await t.call(key, 'POST', '/v1/products', { name: 'Hat', price: { amount: 1299, currency: 'EUR' }, metadata: { sku: 'H-1' } });
    expect(created.statusCode).toBe(201);
    const product = created.json();
    expect(product).toMatchObject({ name: 'Hat', description: null, price: { amount: 1299, currency: 'EUR' }, active: true, metadata: { sku: 'H-1' } });
    expect(product.id).toMatch(/^prd_/);

    const fetched = await t.call(key, 'GET', `/v1/products/${product.id}`);
    expect(fetched.json()).toEqual(product);

    const updated = await t.call(key, 'PATCH', `/v1/products/${product.id}`, { description: 'Warm', price: null });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ description: 'Warm', price: null, name: 'Hat' });

    const deleted = await t.call(key, 'DELETE', `/v1/products/${product.id}`);
    expect(deleted.json()).toEqual({ id: product.id, deleted: true });
    expect((await t.call(key, 'GET', `/v1/products/${product.id}`)).statusCode).toBe(404);
    expect((await t.call(key, 'PATCH', `/v1/products/${product.id}`, { name: 'x' })).statusCode).toBe(404);
    expect((await t.call(key, 'DELETE', `/v1/products/${product.id}`)).statusCode).toBe(404);

    const events = (await t.call(key, 'GET', `/v1/events?subjectType=product&subjectId=${product.id}`)).json();
    expect(events.data.map((e: { type: string }) => e.type)).toEqual(['product.deleted', 'product.updated', 'product.created']);
    const deletedEvent = events.data[0];
    expect(deletedEvent.subject).toEqual({ id: product.id, type: 'product', url: `/v1/products/${product.id}` });
    const retrieved = await t.call(key, 'GET', `/v1/events/${deletedEvent.id}`);
    expect(retrieved.statusCode).toBe(200);
    expect(retrieved.json()).toEqual(deletedEvent);
  });

  it('refuses bad input with VALIDATION and changes nothing', async () => {
    const before = (await t.call(key, 'GET', '/v1/events')).json().data.length;
    for (const body of [
      {},
      { name: 123 },
      { name: 'x', colour: 'red' },
      { name: 'x', price: { amount: 1.5, currency: 'USD' } },
      { name: 'x', price: { amount: 100, currency: 'XYZ' } },
      { name: 'x', price: { amount: -1, currency: 'USD' } },
      { name: 'x', metadata: { a: 1 } },
      // A line break in a key must not take its value past the check.
      { name: 'x', metadata: { 'a\nb': { nested: 1 } } },
      { name: 'x', metadata: { 'a\nb': 'x'.repeat(501) } },
      { name: 'x', metadata: { ['k'.repeat(41)]: 'v' } },
    ]) {
      const res = await t.call(key, 'POST', '/v1/products', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION');
      expect(res.json().error.requestId).toBe(res.headers['request-id']);
    }
    const unknown = await t.call(key, 'POST', '/v1/products', { name: 'x', colour: 'red' });
    expect(unknown.json().error.message).toContain('colour');
    expect((await t.call(key, 'GET', '/v1/events')).json().data.length).toBe(before);
  });

  it('stores and shows metadata keys and values of any characters', async () => {
    const metadata = { 'line\nbreak': 'a\nb', 'tab\t': '', '"quoted"': '\\', 'emoji 🧪': '日本', ' ': '\u2028' };
    const created = await t.call(key, 'POST', '/v1/products', { name: 'Keys', metadata });
    expect(created.statusCode).toBe(201);
    expect(created.json().metadata).toEqual(metadata);
    expect((await t.call(key, 'GET', `/v1/products/${created.json().id}`)).json().metadata).toEqual(metadata);
    const listed = (await t.call(key, 'GET', '/v1/products?limit=100')).json().data.find((p: { id: string }) => p.id === created.json().id);
    expect(listed.metadata).toEqual(metadata);
  });
});
