import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { addEndpoint, closeAppAndReceiver, deliveriesOf, openAppAndReceiver, testWorker, verifyBySpec } from './helpers/delivery.js';
import { ok } from './helpers/expect.js';
import type { Receiver } from './helpers/receiver.js';

describe('order events delivered to a receiver', () => {
  let t: TestApp;
  let receiver: Receiver;
  // The system clock: the verifier rejects timestamps more than 5 minutes from its own.
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('delivers all six order events to an order.* subscription, each verifiable with standardwebhooks', async () => {
    const key = t.demo.workspaces[0].apiKey;
    const { id: endpointId, secret } = await addEndpoint(t, `${receiver.url}/orders`, ['order.*']);
    const { id: productsOnly } = await addEndpoint(t, `${receiver.url}/products`, ['product.*']);
    const productId = ok(await t.call(key, 'POST', '/v1/products', { name: 'Sent hat', price: { amount: 100, currency: 'EUR' } }), 201).id;
    const one = ok(await t.call(key, 'POST', '/v1/orders', { lineItems: [{ productId, quantity: 1 }] }), 201).id;
    const two = ok(await t.call(key, 'POST', '/v1/orders', { lineItems: [{ productId, quantity: 2 }] }), 201).id;
    ok(await t.call(key, 'PATCH', `/v1/orders/${one}`, { metadata: { gift: 'yes' } }));
    for (const action of ['pay', 'fulfill', 'refund']) ok(await t.call(key, 'POST', `/v1/orders/${one}/${action}`));
    ok(await t.call(key, 'POST', `/v1/orders/${two}/cancel`));

    const worker = testWorker(t);
    while ((await worker.runDue()) > 0);
    const sent = receiver.requests.filter((r) => r.url === '/orders');
    expect(sent.map((r) => JSON.parse(r.body).type).sort()).toEqual(
      ['order.canceled', 'order.created', 'order.created', 'order.fulfilled', 'order.paid', 'order.refunded', 'order.updated'].sort(),
    );
    for (const request of sent) {
      const payload = new Webhook(secret).verify(request.body, request.flatHeaders) as { id: string; subject: { id: string; type: string; url: string } };
      expect(verifyBySpec(secret, request.flatHeaders, request.raw)).toBe(true);
      expect([one, two]).toContain(payload.subject.id);
      expect(payload.subject).toEqual({ id: payload.subject.id, type: 'order', url: `/v1/orders/${payload.subject.id}` });
      const stored = await t.call(key, 'GET', `/v1/events/${payload.id}`);
      expect(request.raw.equals(stored.rawPayload)).toBe(true);
    }
    expect((await deliveriesOf(t, endpointId)).every((d) => d.status === 'success')).toBe(true);
    expect((await deliveriesOf(t, productsOnly)).map((d) => d.event_type)).toEqual(['product.created']);
  });
});
