import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyScope, lockNumber } from '../src/http/idempotency/store.js';
import type { TestApp } from './helpers/app.js';
import { eventually } from './helpers/delivery.js';
import { expectError, ok } from './helpers/expect.js';
import { expectReplay, keyedCalls, newKey, startKeyedApp } from './helpers/idempotency.js';
import { snapshot } from './helpers/security.js';

/** Idempotency keys (docs/idempotency.md): every rule, on every POST, on both engines. */
describe('idempotency keys', () => {
  let t: TestApp;
  let apiKey: string;
  let ws: string;
  let endpointId: string;

  beforeAll(async () => {
    ({ t, apiKey, ws, endpointId } = await startKeyedApp());
  });
  afterAll(() => t.close());

  const { post, count, productsNamed } = keyedCalls(() => t, () => apiKey);

  it('replays the first response byte for byte with Idempotent-Replayed: true, and changes and emits nothing', async () => {
    const key = newKey();
    const body = { name: 'Replayed hat', price: { amount: 1299, currency: 'EUR' }, metadata: { b: '2', a: '1' } };
    const first = await post('/v1/products', body, key);
    const product = ok(first, 201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const events = await count('events WHERE subject_id = $1', [product.id]);
    const deliveries = await count('webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.subject_id = $1', [product.id]);
    expect([events, deliveries]).toEqual([1, 1]);

    const before = await snapshot(t.ctx);
    for (let i = 0; i < 3; i++) expectReplay(await post('/v1/products', body, key), first);
    // Not a row of any table changed: no product, no event, no delivery, no stored response.
    expect(await snapshot(t.ctx)).toEqual(before);
    expect(await productsNamed('Replayed hat')).toBe(1);
  });

  it('refuses the key with another body or path, 422 IDEMPOTENCY_MISMATCH, and still replays the first', async () => {
    const key = newKey();
    const first = await post('/v1/products', { name: 'Mismatched' }, key);
    ok(first, 201);
    const before = await snapshot(t.ctx);
    for (const [url, body] of [
      ['/v1/products', { name: 'Mismatched', description: 'another body' }],
      ['/v1/products', { name: 'Other' }],
      // The same operation at the other mount is another path.
      [`/v1/workspaces/${ws}/products`, { name: 'Mismatched' }],
      ['/v1/webhooks/endpoints', { url: 'https://example.com/x', subscribedEvents: ['product.*'] }],
      [`/v1/webhooks/endpoints/${endpointId}/rotate-secret`, undefined],
    ] as const) {
      const error = expectError(await post(url, body, key), 422, 'IDEMPOTENCY_MISMATCH');
      expect(error.message).toContain('another method, path or body');
    }
    expect(await snapshot(t.ctx)).toEqual(before);
    expectReplay(await post('/v1/products', { name: 'Mismatched' }, key), first);
    // Spacing is not part of the body; the order of its fields is.
    const spaced = await t.app.inject({
      method: 'POST',
      url: '/v1/products',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      payload: '{ "name" :  "Mismatched" }',
    });
    expectReplay(spaced, first);
  });

  it('runs one of several concurrent requests with one key: the others are 409 IDEMPOTENCY_IN_PROGRESS or its replay', async () => {
    const key = newKey();
    const body = { name: 'Concurrent', price: { amount: 5, currency: 'USD' } };
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/v1/products', body, key)));
    const created = answers.filter((r) => r.statusCode === 201);
    const original = created.filter((r) => r.headers['idempotent-replayed'] === undefined);
    expect(original).toHaveLength(1);
    for (const replay of created.filter((r) => r !== original[0])) expectReplay(replay, original[0]);
    for (const refused of answers.filter((r) => r.statusCode !== 201)) expectError(refused, 409, 'IDEMPOTENCY_IN_PROGRESS');
    expect(await productsNamed('Concurrent')).toBe(1);
    expectReplay(await post('/v1/products', body, key), original[0]);
  });

  it('answers 409 IDEMPOTENCY_IN_PROGRESS while the first request with the key is still running, and replays it once done', async () => {
    const target = ok(await post('/v1/webhooks/endpoints', { url: 'https://example.com/slow', subscribedEvents: ['product.*'] }, null), 201);
    // Keeps the first request from finishing: the test locks the endpoint row the test ping locks.
    const blocker = await t.ctx.db.begin();
    await blocker.query('SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [target.id]);
    const key = newKey();
    const url = `/v1/webhooks/endpoints/${target.id}/send-test-event`;
    const answers: LightMyRequestResponse[] = [];
    const both = [post(url, undefined, key), post(url, undefined, key)].map((p) => p.then((r) => answers.push(r)));
    try {
      // Whichever took the key first waits; the other is refused meanwhile.
      await eventually(() => answers.length === 1, 10_000);
      expectError(answers[0], 409, 'IDEMPOTENCY_IN_PROGRESS');
    } finally {
      await blocker.commit();
    }
    await Promise.all(both);
    const sent = ok(answers[1], 201);
    expectReplay(await post(url, undefined, key), answers[1]);
    expect(await count('webhook_deliveries WHERE endpoint_id = $1', [target.id])).toBe(1);
    expect(sent.deliveryId).toMatch(/^whd_/);
  });

  it('refuses a key held by another process (its advisory lock) with 409, and runs it once released', async () => {
    const key = newKey();
    const [{ id: keyId }] = await t.ctx.db.query<{ id: string }>('SELECT id FROM api_keys WHERE workspace_id = $1 AND NOT test', [ws]);
    // Another process's request with this key, still running: its transaction holds the key's lock.
    const other = await t.ctx.db.begin();
    await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockNumber(keyScope(ws, keyId), key)]);
    try {
      expectError(await post('/v1/products', { name: 'Held elsewhere' }, key), 409, 'IDEMPOTENCY_IN_PROGRESS');
    } finally {
      await other.rollback();
    }
    ok(await post('/v1/products', { name: 'Held elsewhere' }, key), 201);
    expect(await productsNamed('Held elsewhere')).toBe(1);
  });
});
