import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from './helpers/app.js';
import { endpointCreator, unlimited } from './helpers/webhook-endpoints.js';

/** An endpoint's life after its creation (test/webhook-endpoints.test.ts): updates, pauses, re-enabling, deletion and test events. */
describe('webhook endpoints', () => {
  let t: TestApp;
  let key: string;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await startTestApp({ clock, config: unlimited });
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t.close());

  const create = endpointCreator(() => t, () => key);
  const deliveriesOf = async (endpointId: string) =>
    (await t.call(key, 'GET', `/v1/webhooks/deliveries?endpointId=${endpointId}`)).json().data as Array<Record<string, unknown>>;
  const newProduct = async () => (await t.call(key, 'POST', '/v1/products', { name: 'Lamp' })).json().id as string;

  it('updates fields and refuses an empty or invalid PATCH', async () => {
    const endpoint = await create();
    clock.advance(1000);
    const res = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
      url: 'https://hooks.example.com/b',
      subscribedEvents: ['product.deleted'],
      description: 'renamed',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ url: 'https://hooks.example.com/b', subscribedEvents: ['product.deleted'], description: 'renamed', active: true });
    expect(res.json().updatedAt).toBe(clock.now().toISOString());
    expect(res.json()).not.toHaveProperty('secret');
    expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { description: null })).json().description).toBeNull();
    expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { propagateTrace: true })).json().propagateTrace).toBe(true);
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().propagateTrace).toBe(true);
    for (const body of [{}, { active: 'false' }, { propagateTrace: null }, { url: 'http://x.example' }, { subscribedEvents: ['nope'] }, { secret: 'whsec_x' }]) {
      const bad = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, body);
      expect(bad.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().url).toBe('https://hooks.example.com/b');
  });

  it('pauses: queued deliveries and later events become disabled rows with no attempt', async () => {
    const endpoint = await create();
    await newProduct();
    expect((await deliveriesOf(endpoint.id)).map((d) => d.status)).toEqual(['pending']);

    const paused = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { active: false });
    expect(paused.json()).toMatchObject({ active: false, disabledReason: 'manual' });
    expect((await deliveriesOf(endpoint.id)).map((d) => d.status)).toEqual(['disabled']);

    clock.advance(1000);
    await newProduct();
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.map((d) => [d.status, d.attempt, d.responseStatus])).toEqual([
      ['disabled', 0, null],
      ['disabled', 0, null],
    ]);
    const detail = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${rows[0].id}`)).json().delivery;
    expect(detail.nextAttemptAt).toBeNull();
  });

  it('re-enables a paused or auto-disabled endpoint and resets its failure count', async () => {
    const endpoint = await create();
    await t.ctx.db.query("UPDATE webhook_endpoints SET active = false, disabled_reason = 'auto', consecutive_failures = 5 WHERE id = $1", [endpoint.id]);
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().disabledReason).toBe('auto');
    // Pausing an auto-disabled endpoint keeps saying why it stopped.
    expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { active: false })).json().disabledReason).toBe('auto');

    const res = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { active: true });
    expect(res.json()).toMatchObject({ active: true, disabledReason: null });
    const [row] = await t.ctx.db.query<{ consecutive_failures: number }>('SELECT consecutive_failures FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(row.consecutive_failures).toBe(0);
    clock.advance(1000);
    await newProduct();
    expect((await deliveriesOf(endpoint.id)).map((d) => [d.status, d.attempt])).toEqual([['pending', 0]]);
  });

  it('deletes: 404 afterwards, queued deliveries disabled, history kept', async () => {
    const endpoint = await create();
    await newProduct();
    const res = await t.call(key, 'DELETE', `/v1/webhooks/endpoints/${endpoint.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: endpoint.id, deleted: true });
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { active: true }],
      ['DELETE', '', undefined],
      ['POST', '/rotate-secret', undefined],
      ['POST', '/send-test-event', undefined],
    ] as const) {
      expect((await t.call(key, method, `/v1/webhooks/endpoints/${endpoint.id}${path}`, body)).statusCode, `${method} ${path}`).toBe(404);
    }
    const list = (await t.call(key, 'GET', '/v1/webhooks/endpoints?limit=100')).json().data;
    expect(list.map((e: { id: string }) => e.id)).not.toContain(endpoint.id);
    expect((await deliveriesOf(endpoint.id)).map((d) => d.status)).toEqual(['disabled']);
    clock.advance(1000);
    await newProduct();
    expect(await deliveriesOf(endpoint.id)).toHaveLength(1);
  });

  it('sends a test event: a pending webhook.ping delivery with its own body', async () => {
    const endpoint = await create({ subscribedEvents: ['product.created'] });
    const res = await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpoint.id}/send-test-event`);
    expect(res.statusCode).toBe(201);
    const { deliveryId, eventId } = res.json();
    expect(deliveryId).toMatch(/^whd_/);
    expect(eventId).toMatch(/^evt_/);
    const delivery = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${deliveryId}`)).json().delivery;
    expect(delivery).toMatchObject({ endpointId: endpoint.id, eventId, eventType: 'webhook.ping', status: 'pending', attempt: 0, subject: null, replayOf: null });
    expect(delivery.requestBody).toEqual({ id: eventId, type: 'webhook.ping', created: clock.now().toISOString() });
    expect(delivery.nextAttemptAt).toBe(clock.now().toISOString());
    const [row] = await t.ctx.db.query<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE id = $1', [deliveryId]);
    expect(row.payload).toBe(`{"id":"${eventId}","type":"webhook.ping","created":"${clock.now().toISOString()}"}`);
    // The ping is synthetic: it is not part of the event log.
    expect((await t.call(key, 'GET', `/v1/events/${eventId}`)).statusCode).toBe(404);

    await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { active: false });
    const inactive = await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpoint.id}/send-test-event`);
    expect(inactive.statusCode).toBe(409);
    expect(inactive.json().error.code).toBe('ENDPOINT_INACTIVE');
    expect(await deliveriesOf(endpoint.id)).toHaveLength(1);
  });
});
