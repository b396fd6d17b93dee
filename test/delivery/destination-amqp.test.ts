import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { amqpQueue, RABBITMQ, uniqueName } from '../helpers/brokers.js';
import { createProduct, deliveriesOf, endpointState, testWorker } from '../helpers/delivery.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { missing } from '../helpers/services.js';

const flat = (headers: Record<string, unknown>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));

describe.skipIf(missing('rabbitmq'))('RabbitMQ destination', () => {
  let t: TestApp;
  const key = () => t.demo.workspaces[0].apiKey;
  // The system clock: standardwebhooks refuses timestamps more than 5 minutes from its own.
  beforeAll(async () => (t = await startTestApp({ config: { allowPrivateTargets: true, deliveryTimeoutMs: 2000 } })));
  afterAll(() => t?.close());

  const endpoint = async (body: Record<string, unknown>) => {
    const res = await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: RABBITMQ.url, subscribedEvents: ['product.*'], ...body });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const pause = (id: string) => t.call(key(), 'PATCH', `/v1/webhooks/endpoints/${id}`, { active: false });

  it('publishes the stored event to amq.topic with the event type as routing key, verifiable as a webhook', async () => {
    const queue = await amqpQueue('product.created');
    try {
      const ep = await endpoint({ headers: { 'x-team': 'payments' } });
      expect(ep.url).toBe(RABBITMQ.redacted);
      expect((await t.call(key(), 'GET', `/v1/webhooks/endpoints/${ep.id}`)).body).not.toContain('guest:guest');
      const productId = await createProduct(t, 'Queued hat');
      expect(await testWorker(t).runDue()).toBe(1);
      await expect.poll(() => queue.messages.length).toBe(1);

      const [message] = queue.messages;
      const [delivery] = await deliveriesOf(t, ep.id);
      const event = await t.call(key(), 'GET', `/v1/events/${delivery.event_id}`);
      expect(message.content.equals(event.rawPayload)).toBe(true);
      expect(message.fields).toMatchObject({ exchange: 'amq.topic', routingKey: 'product.created' });
      expect(message.properties).toMatchObject({ contentType: 'application/json', deliveryMode: 2, messageId: delivery.id, type: 'product.created' });
      const headers = flat(message.properties.headers!);
      expect(headers).toMatchObject({ 'webhook-id': delivery.id, 'webhook-event-type': 'product.created', 'content-type': 'application/json', 'x-team': 'payments' });
      expect(new Webhook(ep.secret).verify(message.content.toString(), headers)).toMatchObject({ type: 'product.created', subject: { id: productId } });
      expect(() => new Webhook(ep.secret).verify(message.content.toString().replace(productId, 'prd_other'), headers)).toThrow();
      expect(delivery).toMatchObject({ status: 'success', attempt: 1, error: null, response_status: null });
      expect(JSON.parse(delivery.response_body!)).toEqual({ confirm: 'ack', exchange: 'amq.topic', routingKey: 'product.created' });
      await pause(ep.id);
    } finally {
      await queue.close();
    }
  });

  it('uses the endpoint exchange and routing key, and sends pings and replays the same way', async () => {
    const routingKey = uniqueName('svc.test');
    const queue = await amqpQueue(routingKey, 'amq.direct');
    try {
      const ep = await endpoint({ exchange: 'amq.direct', routingKey });
      const ping = (await t.call(key(), 'POST', `/v1/webhooks/endpoints/${ep.id}/send-test-event`)).json();
      await createProduct(t, 'Routed hat');
      expect(await testWorker(t).runDue()).toBe(2);
      await expect.poll(() => queue.messages.length).toBe(2);
      const types = queue.messages.map((m) => m.properties.type).sort();
      expect(types).toEqual(['product.created', 'webhook.ping']);
      const pinged = queue.messages.find((m) => m.properties.messageId === ping.deliveryId)!;
      expect(JSON.parse(pinged.content.toString())).toMatchObject({ id: ping.eventId, type: 'webhook.ping' });

      const original = (await deliveriesOf(t, ep.id)).find((d) => d.event_type === 'product.created')!;
      const replay = await t.call(key(), 'POST', `/v1/webhooks/deliveries/${original.id}/replay`);
      expect(replay.statusCode).toBe(201);
      expect(await testWorker(t).runDue()).toBe(1);
      await expect.poll(() => queue.messages.length).toBe(3);
      const replayed = queue.messages[2];
      expect(replayed.properties.messageId).toBe(replay.json().delivery.id);
      expect(replayed.content.equals(queue.messages.find((m) => m.properties.messageId === original.id)!.content)).toBe(true);
      expect(new Webhook(ep.secret).verify(replayed.content.toString(), flat(replayed.properties.headers!))).toMatchObject({ type: 'product.created' });
      await pause(ep.id);
    } finally {
      await queue.close();
    }
  });

  it('fails an attempt the broker returns as unroutable, nacks or refuses (no such exchange), and keeps the channel for others', async () => {
    const unroutable = await endpoint({ routingKey: uniqueName('svc.nobody') });
    const missing = await endpoint({ exchange: uniqueName('svc-missing') });
    await createProduct(t, 'Lost hat');
    expect(await testWorker(t).runDue()).toBe(2);
    const [returned] = await deliveriesOf(t, unroutable.id);
    expect(returned).toMatchObject({ status: 'pending', attempt: 1 });
    expect(returned.error).toMatch(/^unroutable: 312 NO_ROUTE, no queue is bound to exchange "amq.topic" for routing key "svc\.nobody-/);
    const [refused] = await deliveriesOf(t, missing.id);
    expect(refused).toMatchObject({ status: 'pending', attempt: 1 });
    expect(refused.error).toMatch(/NOT_FOUND/);
    await pause(unroutable.id);
    await pause(missing.id);

    // A queue that is full and rejects publishes makes the broker nack.
    const fullKey = uniqueName('svc.full');
    const full = await amqpQueue(fullKey, 'amq.topic', { 'x-max-length': 0, 'x-overflow': 'reject-publish' });
    try {
      const nacked = await endpoint({ routingKey: fullKey });
      await createProduct(t, 'Refused hat');
      expect(await testWorker(t).runDue()).toBe(1);
      expect((await deliveriesOf(t, nacked.id))[0]).toMatchObject({ status: 'pending', attempt: 1, error: 'the broker refused the message (nack)' });
      await pause(nacked.id);
    } finally {
      await full.close();
    }

    // The connection still serves other endpoints.
    const queue = await amqpQueue('product.created');
    try {
      const ep = await endpoint({});
      await createProduct(t, 'Found hat');
      expect(await testWorker(t).runDue()).toBe(1);
      await expect.poll(() => queue.messages.length).toBe(1);
      expect((await deliveriesOf(t, ep.id))[0].status).toBe('success');
      await pause(ep.id);
    } finally {
      await queue.close();
    }
  });

  it('refuses route fields that do not belong to the scheme, and a redacted password sent back', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: RABBITMQ.url, subject: 'events.x' }, 'body.subject'],
      [{ url: 'nats://127.0.0.1:4222', exchange: 'amq.topic' }, 'body.exchange'],
      [{ url: 'https://hooks.example.com/x', routingKey: 'a.b' }, 'body.routingKey'],
      [{ url: 'amqp://guest:***@127.0.0.1:5672/' }, 'body.url'],
      [{ url: 'https://user:pw@hooks.example.com/x' }, 'body.url'],
      [{ url: 'nats://127.0.0.1:4222', subject: 'events.*' }, 'body.subject'],
    ];
    for (const [body, path] of cases) {
      const res = await t.call(key(), 'POST', '/v1/webhooks/endpoints', { subscribedEvents: ['product.*'], ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const ep = await endpoint({ exchange: 'amq.direct', routingKey: 'k' });
    const patched = await t.call(key(), 'PATCH', `/v1/webhooks/endpoints/${ep.id}`, { subject: 'events.x' });
    expect(patched.statusCode).toBe(400);
    // Moving to another destination clears the old one's fields.
    const moved = await t.call(key(), 'PATCH', `/v1/webhooks/endpoints/${ep.id}`, { url: 'nats://token-1@127.0.0.1:4222', subject: 'events.moved' });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({ url: 'nats://***@127.0.0.1:4222', exchange: null, routingKey: null, subject: 'events.moved' });
    const [row] = await t.ctx.db.query<{ url_enc: string }>('SELECT url_enc FROM webhook_endpoints WHERE id = $1', [ep.id]);
    expect(t.ctx.secrets.decrypt(row.url_enc)).toBe('nats://token-1@127.0.0.1:4222');
    await pause(ep.id);
  });
});

describe.skipIf(missing('rabbitmq'))('RabbitMQ destination through an outage', () => {
  let t: TestApp;
  const clock = new ManualClock();
  const proxy = new TcpProxy(RABBITMQ.port, RABBITMQ.host);
  beforeAll(async () => {
    await proxy.start();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, deliveryTimeoutMs: 1000, retryScheduleMs: [60_000] } });
  });
  afterAll(async () => {
    await t?.close();
    await proxy.stop();
  });

  it('fails attempts while the broker is cut off, retries on the schedule, auto-disables, and reconnects when it is back', async () => {
    const queue = await amqpQueue('product.*');
    try {
      const key = t.demo.workspaces[0].apiKey;
      const ep = (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: RABBITMQ.via(proxy.port), subscribedEvents: ['product.created'] })).json();
      const worker = testWorker(t);
      await createProduct(t, 'Before');
      expect(await worker.runDue()).toBe(1);
      const [before] = await deliveriesOf(t, ep.id);
      expect(before.status).toBe('success');
      const during = async () => (await deliveriesOf(t, ep.id)).filter((r) => r.id !== before.id);

      await proxy.stop();
      for (let i = 0; i < 5; i++) await createProduct(t, `During ${i}`);
      expect(await worker.runDue()).toBe(5);
      let rows = await during();
      expect(rows.map((r) => [r.status, r.attempt])).toEqual(Array(5).fill(['pending', 1]));
      for (const row of rows) expect(row.error).toMatch(/connection refused|connection reset by the broker|broker error/);

      clock.advance(60_000);
      expect(await worker.runDue()).toBe(5);
      rows = await during();
      expect(rows.map((r) => [r.status, r.attempt])).toEqual(Array(5).fill(['failed', 2]));
      expect(await endpointState(t, ep.id)).toMatchObject({ active: false, disabled_reason: 'auto', consecutive_failures: 5 });

      // The broker is back: the endpoint, re-enabled, publishes on a new connection.
      await proxy.start();
      // The sender waits out its back-off after the failed connections before it connects again (connections.ts).
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${ep.id}`, { active: true })).statusCode).toBe(200);
      await createProduct(t, 'After');
      expect(await worker.runDue()).toBe(1);
      expect((await during()).filter((r) => r.status === 'success')).toHaveLength(1);
      await expect.poll(() => queue.messages.length).toBe(2);
    } finally {
      await queue.close();
    }
  });

  it('fails an attempt whose confirm does not come in time (a broker that hangs)', async () => {
    const key = t.demo.workspaces[0].apiKey;
    const ep = (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: RABBITMQ.via(proxy.port), subscribedEvents: ['product.created'] })).json();
    const worker = testWorker(t);
    const queue = await amqpQueue('product.created');
    try {
      await createProduct(t, 'Warm');
      await worker.runDue();
      const [warm] = await deliveriesOf(t, ep.id);
      expect(warm.status).toBe('success');
      proxy.hang();
      await createProduct(t, 'Hung');
      await worker.runDue();
      const hung = (await deliveriesOf(t, ep.id)).find((r) => r.id !== warm.id);
      expect(hung).toMatchObject({ status: 'pending', attempt: 1, error: 'timeout: no confirm within 1000 ms' });
    } finally {
      proxy.release();
      await queue.close();
    }
    await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${ep.id}`, { active: false });
  });
});
