import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { NATS, natsStream, uniqueName } from '../helpers/brokers.js';
import { createProduct, deliveriesOf, endpointState, testWorker } from '../helpers/delivery.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { missing } from '../helpers/services.js';

const NATS_URL = NATS.url;

/** A message's headers as one plain object. */
const headersOf = (message: { headers?: { keys(): string[]; get(k: string): string } }) =>
  Object.fromEntries((message.headers?.keys() ?? []).map((k) => [k.toLowerCase(), message.headers!.get(k)]));

describe.skipIf(missing('nats'))('NATS JetStream destination', () => {
  let t: TestApp;
  const key = () => t.demo.workspaces[0].apiKey;
  beforeAll(async () => (t = await startTestApp({ config: { allowPrivateTargets: true, deliveryTimeoutMs: 2000 } })));
  afterAll(() => t?.close());

  const endpoint = async (body: Record<string, unknown>) => {
    const res = await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: NATS_URL, subscribedEvents: ['product.*'], ...body });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const pause = (id: string) => t.call(key(), 'PATCH', `/v1/webhooks/endpoints/${id}`, { active: false });

  it('publishes the stored event to events.<type>, with the webhook headers, verifiable as a webhook', async () => {
    const stream = await natsStream(['events.product.created']);
    try {
      const ep = await endpoint({ headers: { 'x-team': 'payments' } });
      const productId = await createProduct(t, 'Streamed hat');
      expect(await testWorker(t).runDue()).toBe(1);
      const [message] = await stream.read(1);
      const [delivery] = await deliveriesOf(t, ep.id);
      const event = await t.call(key(), 'GET', `/v1/events/${delivery.event_id}`);
      expect(message.subject).toBe('events.product.created');
      expect(Buffer.from(message.data).equals(event.rawPayload)).toBe(true);
      const headers = headersOf(message);
      expect(headers).toMatchObject({ 'nats-msg-id': delivery.id, 'webhook-id': delivery.id, 'webhook-event-type': 'product.created', 'content-type': 'application/json', 'x-team': 'payments' });
      expect(new Webhook(ep.secret).verify(Buffer.from(message.data).toString(), headers)).toMatchObject({ type: 'product.created', subject: { id: productId } });
      expect(delivery).toMatchObject({ status: 'success', attempt: 1, error: null, response_status: null });
      expect(JSON.parse(delivery.response_body!)).toEqual({ stream: stream.name, seq: 1, duplicate: false });
      await pause(ep.id);
    } finally {
      await stream.close();
    }
  });

  it('drops a message sent again with the same webhook-id within the duplicate window', async () => {
    const subject = `${uniqueName('svc.test')}.once`;
    const stream = await natsStream([subject]);
    try {
      const ep = await endpoint({ subject });
      await createProduct(t, 'Once hat');
      expect(await testWorker(t).runDue()).toBe(1);
      const [delivery] = await deliveriesOf(t, ep.id);
      expect(delivery.status).toBe('success');
      // The delivery attempted again as after a lost outcome (a worker stopped before writing it): same webhook-id.
      await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() - interval '1 second', delivered_at = NULL WHERE id = $1", [delivery.id]);
      expect(await testWorker(t).runDue()).toBe(1);
      const [again] = await deliveriesOf(t, ep.id);
      expect(again).toMatchObject({ status: 'success', attempt: 2 });
      expect(JSON.parse(again.response_body!)).toEqual({ stream: stream.name, seq: 1, duplicate: true });
      expect(await stream.count()).toBe(1);

      // A replay is a new delivery with its own webhook-id, sent on purpose: it is stored.
      const replay = await t.call(key(), 'POST', `/v1/webhooks/deliveries/${delivery.id}/replay`);
      expect(replay.statusCode).toBe(201);
      expect(await testWorker(t).runDue()).toBe(1);
      expect(await stream.count()).toBe(2);
      const messages = await stream.read(2);
      expect(messages.map((m) => headersOf(m)['webhook-id'])).toEqual([delivery.id, replay.json().delivery.id]);
      await pause(ep.id);
    } finally {
      await stream.close();
    }
  });

  it('sends pings to the subject, and fails an attempt no stream captures (no responders)', async () => {
    const subject = `${uniqueName('svc.test')}.pings`;
    const stream = await natsStream([subject]);
    try {
      const ep = await endpoint({ subject });
      const ping = (await t.call(key(), 'POST', `/v1/webhooks/endpoints/${ep.id}/send-test-event`)).json();
      const nobody = await endpoint({ subject: `${uniqueName('svc.nobody')}.x`, subscribedEvents: ['order.*'] });
      await t.call(key(), 'POST', `/v1/webhooks/endpoints/${nobody.id}/send-test-event`);
      expect(await testWorker(t).runDue()).toBe(2);
      const [message] = await stream.read(1);
      expect(headersOf(message)).toMatchObject({ 'webhook-id': ping.deliveryId, 'webhook-event-type': 'webhook.ping' });
      expect(JSON.parse(Buffer.from(message.data).toString())).toMatchObject({ id: ping.eventId, type: 'webhook.ping' });
      const [failed] = await deliveriesOf(t, nobody.id);
      expect(failed).toMatchObject({ status: 'pending', attempt: 1 });
      expect(failed.error).toMatch(/^no responders: no JetStream stream captures subject "svc\.nobody-/);
      await pause(ep.id);
      await pause(nobody.id);
    } finally {
      await stream.close();
    }
  });

  it('refuses a broker on a private address unless private targets are allowed, at creation and at connect', async () => {
    const strict = await startTestApp({ config: { allowPrivateTargets: false } });
    try {
      const res = await strict.call(strict.demo.workspaces[0].apiKey, 'POST', '/v1/webhooks/endpoints', { url: NATS_URL, subscribedEvents: ['product.*'] });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toContain('127.0.0.1 is not a public address (loopback)');
      const amqp = await strict.call(strict.demo.workspaces[0].apiKey, 'POST', '/v1/webhooks/endpoints', { url: 'amqp://guest:guest@127.0.0.1:5672/', subscribedEvents: ['product.*'] });
      expect(amqp.statusCode).toBe(400);
      // One that got in anyway (a name re-pointed later) is refused when connecting.
      const { Destinations } = await import('../../src/engine/destinations/destinations.js');
      const { HttpSender } = await import('../../src/engine/destinations/sender.js');
      const sender = new Destinations(new HttpSender({ timeoutMs: 1000, allowPrivateTargets: false }), { timeoutMs: 1000, allowPrivateTargets: false, idleMs: 1000 });
      try {
        const request = { headers: { 'webhook-id': 'whd_x', 'webhook-timestamp': '1', 'content-type': 'application/json' }, body: '{}', eventType: 'product.created' };
        for (const url of [NATS_URL, 'nats://localhost:4222', 'amqp://guest:guest@127.0.0.1:5672/', 'amqp://guest:guest@localhost:5672/']) {
          const result = await sender.send({ url, ...request });
          expect(result.ok, url).toBe(false);
          expect(result.error, url).toMatch(/refused to connect to (127\.0\.0\.1|::1|localhost)/);
        }
      } finally {
        await sender.close();
      }
    } finally {
      await strict.close();
    }
  });
});

describe.skipIf(missing('nats'))('NATS destination through an outage', () => {
  let t: TestApp;
  const clock = new ManualClock();
  const proxy = new TcpProxy(NATS.port, NATS.host);
  beforeAll(async () => {
    await proxy.start();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, deliveryTimeoutMs: 1000, retryScheduleMs: [60_000] } });
  });
  afterAll(async () => {
    await t?.close();
    await proxy.stop();
  });

  it('fails attempts while the server is cut off, retries on the schedule, auto-disables, and reconnects when it is back', async () => {
    const subject = `${uniqueName('svc.test')}.outage`;
    const stream = await natsStream([subject]);
    try {
      const key = t.demo.workspaces[0].apiKey;
      const ep = (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: NATS.via(proxy.port), subject, subscribedEvents: ['product.created'] })).json();
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
      for (const row of rows) expect(row.error).toMatch(/connection refused|broker error|timeout/);

      clock.advance(60_000);
      expect(await worker.runDue()).toBe(5);
      rows = await during();
      expect(rows.map((r) => [r.status, r.attempt])).toEqual(Array(5).fill(['failed', 2]));
      expect(await endpointState(t, ep.id)).toMatchObject({ active: false, disabled_reason: 'auto', consecutive_failures: 5 });

      await proxy.start();
      // The sender waits out its back-off after the failed connections before it connects again (connections.ts).
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${ep.id}`, { active: true })).statusCode).toBe(200);
      await createProduct(t, 'After');
      expect(await worker.runDue()).toBe(1);
      expect((await during()).filter((r) => r.status === 'success')).toHaveLength(1);
      expect(await stream.count()).toBe(2);
    } finally {
      await stream.close();
    }
  });
});
