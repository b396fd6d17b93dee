import type { LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredKeys } from '../src/http/idempotency/cleanup.js';
import { IDEMPOTENCY_TTL_MS } from '../src/http/idempotency/store.js';
import { startTestApp, userOf, type ManualClock, type TestApp } from './helpers/app.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import { expectError, ok } from './helpers/expect.js';
import { expectReplay, HIGH_LIMITS, keyedCalls, newKey, startKeyedApp } from './helpers/idempotency.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { snapshot } from './helpers/security.js';

/**
 * Idempotency keys (docs/idempotency.md), after the replays and conflicts of test/idempotency.test.ts: no refusal
 * is stored, a key belongs to its workspace and credential for 24 hours, its form, and every POST.
 */
describe('idempotency keys', () => {
  let t: TestApp;
  let clock: ManualClock;
  let apiKey: string;
  let ws: string;

  beforeAll(async () => {
    ({ t, clock, apiKey, ws } = await startKeyedApp());
  });
  afterAll(() => t.close());

  const { post, count, productsNamed, storedKeys } = keyedCalls(() => t, () => apiKey);

  it('stores no refusal (400, 401, 403, 404, 409, 415, 429): the request can be fixed and sent again with its key', async () => {
    const viewer = userOf(t.demo, 'viewer').token;
    const owner = userOf(t.demo, 'owner').token;
    const stored = await storedKeys();
    const key = newKey();
    // 400 from the schema, then 400 from the handler (an unknown currency): neither is kept.
    expectError(await post('/v1/products', { name: 'Fixed', colour: 'red' }, key), 400, 'VALIDATION');
    expectError(await post('/v1/products', { name: 'Fixed', price: { amount: 1, currency: 'XYZ' } }, key), 400, 'VALIDATION');
    // 401 and 415.
    expectError(await post('/v1/products', { name: 'Fixed' }, key, 'svc_sk_' + 'A'.repeat(36)), 401, 'UNAUTHENTICATED');
    const asText = await t.app.inject({
      method: 'POST',
      url: '/v1/products',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'text/plain', 'idempotency-key': key },
      payload: '{"name":"Fixed"}',
    });
    expectError(asText, 415, 'UNSUPPORTED_MEDIA_TYPE');
    // 404 inside the handler, after the key was taken: rolled back with everything else.
    expectError(await post('/v1/webhooks/endpoints/whe_01kdvdna00hbt6qfa3na92fsmh/rotate-secret', undefined, key), 404, 'NOT_FOUND');
    expect(await storedKeys()).toBe(stored);
    ok(await post('/v1/products', { name: 'Fixed' }, key), 201);
    expect(await productsNamed('Fixed')).toBe(1);

    // 403: the Viewer may not write; the same user's key works once it is the owner's request... of another user, so another scope.
    const viewerKey = newKey();
    expectError(await post('/v1/products', { name: 'By role' }, viewerKey, viewer, { 'service-workspace-id': ws }), 403, 'FORBIDDEN');
    expect(await storedKeys()).toBe(stored + 1);

    // 409 ENDPOINT_INACTIVE: a test ping to a paused endpoint, sent again with its key once the endpoint is active.
    const paused = ok(await post('/v1/webhooks/endpoints', { url: 'https://example.com/paused', subscribedEvents: ['product.*'] }, null), 201);
    ok(await t.call(apiKey, 'PATCH', `/v1/webhooks/endpoints/${paused.id}`, { active: false }));
    const pingKey = newKey();
    expectError(await post(`/v1/webhooks/endpoints/${paused.id}/send-test-event`, undefined, pingKey), 409, 'ENDPOINT_INACTIVE');
    expect(await storedKeys()).toBe(stored + 1);
    ok(await t.call(apiKey, 'PATCH', `/v1/webhooks/endpoints/${paused.id}`, { active: true }));
    const ping = ok(await post(`/v1/webhooks/endpoints/${paused.id}/send-test-event`, undefined, pingKey), 201);
    expect(await count('webhook_deliveries WHERE endpoint_id = $1', [paused.id])).toBe(1);

    // 429: a key limited to one request a minute.
    const limited = ok(await post(`/v1/workspaces/${ws}/api-keys`, { name: 'one a minute', rateLimit: 1 }, null, owner), 201).key as string;
    ok(await t.call(limited, 'GET', '/v1/products'));
    const limitedKey = newKey();
    expectError(await post('/v1/products', { name: 'Limited' }, limitedKey, limited), 429, 'RATE_LIMITED');
    expect(await storedKeys()).toBe(stored + 2);
    clock.advance(60_000);
    ok(await post('/v1/products', { name: 'Limited' }, limitedKey, limited), 201);
    expect(ping.deliveryId).toMatch(/^whd_/);
  });

  it('keeps keys apart per workspace and per credential: user for a token, key for an API key', async () => {
    const key = newKey();
    const owner = userOf(t.demo, 'owner').token;
    const [ws0, ws1] = t.demo.workspaces;
    const callers: { token: string; url: string; headers: Record<string, string> }[] = [
      { token: ws0.apiKey, url: '/v1/products', headers: {} },
      { token: ws1.apiKey, url: '/v1/products', headers: {} },
      { token: ws0.testApiKey, url: '/v1/products', headers: {} },
      { token: owner, url: '/v1/products', headers: { 'service-workspace-id': ws0.id } },
      { token: owner, url: '/v1/products', headers: { 'service-workspace-id': ws1.id } },
    ];
    const firsts: LightMyRequestResponse[] = [];
    for (const c of callers) firsts.push(await post(c.url, { name: 'Apart' }, key, c.token, c.headers));
    const ids = firsts.map((r) => ok(r, 201).id as string);
    expect(new Set(ids).size).toBe(callers.length);
    expect(firsts.every((r) => r.headers['idempotent-replayed'] === undefined)).toBe(true);
    // Each replays its own.
    for (const [i, c] of callers.entries()) expectReplay(await post(c.url, { name: 'Apart' }, key, c.token, c.headers), firsts[i]);
    expect(await productsNamed('Apart')).toBe(callers.length);
  });

  it('replays for 24 hours: later the key is new again, and the clean-up deletes what expired', async () => {
    const key = newKey();
    const first = await post('/v1/products', { name: 'Day old' }, key);
    ok(first, 201);
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expectReplay(await post('/v1/products', { name: 'Day old' }, key), first);
    clock.advance(1);
    const again = await post('/v1/products', { name: 'Day old' }, key);
    expect(ok(again, 201).id).not.toBe(first.json().id);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expectReplay(await post('/v1/products', { name: 'Day old' }, key), again);
    expect(await productsNamed('Day old')).toBe(2);

    // Another key, stored now: it expires a day later, when the clean-up removes it and only it.
    const old = newKey();
    ok(await post('/v1/products', { name: 'Cleaned' }, old), 201);
    const all = await storedKeys();
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    const recent = newKey();
    ok(await post('/v1/products', { name: 'Kept' }, recent), 201);
    expect(await deleteExpiredKeys(t.ctx, { batchSize: 2 })).toBe(all);
    expect(await t.ctx.db.query('SELECT key FROM idempotency_keys')).toEqual([{ key: recent }]);
    expect(await deleteExpiredKeys(t.ctx)).toBe(0);
  });

  it('refuses an empty, too long or non-printable key with 400 VALIDATION naming the header, and runs nothing', async () => {
    const before = await snapshot(t.ctx);
    for (const bad of ['', 'k'.repeat(256), 'tab\there', 'bell\u0007', 'del\u007f', 'caf\u00e9', '\u00ff']) {
      const error = expectError(await post('/v1/products', { name: 'Bad key' }, bad), 400, 'VALIDATION');
      expect(error.details?.[0]?.path, JSON.stringify(bad)).toBe('header.idempotency-key');
    }
    expect(await snapshot(t.ctx)).toEqual(before);
    for (const good of ['k'.repeat(255), 'a key with spaces ~!@#$%^&*()', '1']) {
      ok(await post('/v1/products', { name: 'Good key' }, good), 201);
    }
    expect(await productsNamed('Good key')).toBe(3);
  });

  it('makes every POST safe to retry: endpoints, secret rotation, test events, replays and API keys', async () => {
    const owner = userOf(t.demo, 'owner').token;
    const once = async (url: string, body: unknown, status: number, token = apiKey) => {
      const key = newKey();
      const first = await post(url, body, key, token);
      const value = ok(first, status);
      expectReplay(await post(url, body, key, token), first);
      return value;
    };

    const endpoint = await once('/v1/webhooks/endpoints', { url: 'https://example.com/every-post', subscribedEvents: ['product.*'] }, 201);
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(await count('webhook_endpoints WHERE url = $1', ['https://example.com/every-post'])).toBe(1);
    // The stored responses hold the secret sealed, never in clear.
    const sealed = (await t.ctx.db.query<{ r: string }>('SELECT row_to_json(k)::text AS r FROM idempotency_keys k')).map((row) => row.r).join('\n');
    expect(sealed).not.toContain(endpoint.secret);

    const rotated = await once(`/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, undefined, 200);
    // Rotated once: the secret signing now is the one returned, the previous one the creation's.
    const [row] = await t.ctx.db.query<{ secret_enc: string; previous_secret_enc: string }>('SELECT secret_enc, previous_secret_enc FROM webhook_endpoints WHERE id = $1', [
      endpoint.id,
    ]);
    expect([t.ctx.secrets.decrypt(row.secret_enc), t.ctx.secrets.decrypt(row.previous_secret_enc)]).toEqual([rotated.secret, endpoint.secret]);

    const ping = await once(`/v1/webhooks/endpoints/${endpoint.id}/send-test-event`, undefined, 201);
    expect(await count('webhook_deliveries WHERE endpoint_id = $1', [endpoint.id])).toBe(1);

    const replayed = await once(`/v1/webhooks/deliveries/${ping.deliveryId}/replay`, undefined, 201);
    expect(await count('webhook_deliveries WHERE replay_of = $1', [ping.deliveryId])).toBe(1);
    expect(replayed.delivery.id).not.toBe(ping.deliveryId);

    const created = await once(`/v1/workspaces/${ws}/api-keys`, { name: 'retried key' }, 201, owner);
    expect(await count('api_keys WHERE name = $1', ['retried key'])).toBe(1);
    expect((await t.ctx.db.query<{ r: string }>('SELECT response_enc AS r FROM idempotency_keys')).some((r) => r.r.includes(created.key))).toBe(false);
    // The key a retry gets back is the one issued, and it works.
    ok(await t.call(created.key, 'GET', '/v1/products'));
  });
});

/** The first attempt of a keyed write's deliveries goes out after its commit, once. */
describe('idempotency keys and the delivery worker', () => {
  let t: TestApp;
  let receiver: Receiver;
  const cleanup: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    t = await startTestApp({ config: { ...HIGH_LIMITS, allowPrivateTargets: true, pollIntervalMs: 3_600_000 } });
    receiver = await startReceiver();
  });
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('delivers a keyed creation once, handed to the local worker after the commit, and nothing for its replays', async () => {
    const { secret } = await addEndpoint(t, receiver.url);
    const worker = testWorker(t);
    await worker.start();
    cleanup.push(() => worker.stop());
    const key = newKey();
    const call = () => t.call(t.demo.workspaces[0].apiKey, 'POST', '/v1/products', { name: 'Delivered once' }, { 'idempotency-key': key });
    const product = ok(await call(), 201);
    await receiver.waitFor(1, 10_000);
    expect((await call()).headers['idempotent-replayed']).toBe('true');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    const event = new Webhook(secret).verify(received.body, received.flatHeaders) as { type: string; subject: { id: string } };
    expect(event).toMatchObject({ type: 'product.created', subject: { id: product.id } });
    await eventually(async () => (await t.ctx.db.query<{ status: string }>("SELECT status FROM webhook_deliveries WHERE status = 'success'")).length === 1);
  });
});