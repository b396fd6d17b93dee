import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { amqpQueue, NATS, natsStream, RABBITMQ, uniqueName } from '../helpers/brokers.js';
import { addEndpoint, createProduct, deliveriesOf, eventually, testWorker } from '../helpers/delivery.js';
import { startReceiver } from '../helpers/receiver.js';
import { missing } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const CUT_MS = 6_000;

/**
 * RabbitMQ blackholed and NATS refusing connections for a while (TCP proxies in front of the shared
 * brokers), while products are created and delivered to an HTTP endpoint and to both brokers: the
 * HTTP endpoint goes on receiving during the cut, the brokers are not stormed with connections,
 * and once they are back every delivery reaches them, none lost.
 */
describe.skipIf(missing('rabbitmq') || missing('nats'))('brokers cut off beside an HTTP endpoint', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('keeps HTTP deliveries flowing, opens few connections, and delivers everything once the brokers are back', async () => {
    const t = await startTestApp({ config: { allowPrivateTargets: true, deliveryTimeoutMs: 1_000, retryScheduleMs: Array(20).fill(2_000) } });
    cleanup.push(() => t.close());
    const rabbit = new TcpProxy(RABBITMQ.port, RABBITMQ.host);
    const nats = new TcpProxy(NATS.port, NATS.host);
    await Promise.all([rabbit.start(), nats.start()]);
    cleanup.push(async () => void (await Promise.all([rabbit.stop(), nats.stop()])));
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    // A routing key of its own: other tests' queues on the shared amq.topic do not see these messages.
    const routingKey = uniqueName('svc.cut');
    const queue = await amqpQueue(routingKey);
    cleanup.push(() => queue.close());
    const subject = `${uniqueName('svc.test')}.cut`;
    const stream = await natsStream([subject]);
    cleanup.push(() => stream.close());

    const key = t.demo.workspaces[0].apiKey;
    const endpoint = async (body: Record<string, unknown>) => (await t.call(key, 'POST', '/v1/webhooks/endpoints', { subscribedEvents: ['product.created'], ...body })).json().id as string;
    const http = (await addEndpoint(t, receiver.url, ['product.created'])).id;
    const amqp = await endpoint({ url: RABBITMQ.via(rabbit.port), routingKey });
    const jet = await endpoint({ url: NATS.via(nats.port), subject });
    const worker = testWorker(t);
    await worker.start();
    cleanup.push(() => worker.stop());

    // A product every 100 ms throughout.
    let products = 0;
    let creating = true;
    const load = (async () => {
      while (creating) {
        await createProduct(t, `P${products++}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await eventually(async () => queue.messages.length >= 5 && (await stream.count()) >= 5, 15_000);

    rabbit.setMode('blackhole');
    nats.setMode('reset');
    rabbit.resetAttempts();
    nats.resetAttempts();
    const httpBefore = receiver.requests.length;
    const madeBefore = products;
    await new Promise((resolve) => setTimeout(resolve, CUT_MS));
    const httpDuring = receiver.requests.length - httpBefore;
    const madeDuring = products - madeBefore;
    const connections = { rabbit: rabbit.attempts, nats: nats.attempts };
    rabbit.setMode('pass');
    nats.setMode('pass');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    creating = false;
    await load;

    // HTTP went on: what was made during the cut (but the last moments) arrived during it.
    expect(httpDuring).toBeGreaterThanOrEqual(madeDuring - 5);
    // A few connections a second at most, not one per attempt.
    expect(connections.rabbit, 'RabbitMQ connections').toBeLessThanOrEqual(2 * (CUT_MS / 1000));
    expect(connections.nats, 'NATS connections').toBeLessThanOrEqual(2 * (CUT_MS / 1000));
    // Nothing lost: every delivery of every endpoint ends sent, and each broker holds every event. A
    // broker endpoint's lane spread its deliveries over the time its timed-out attempts took, so the
    // backlog goes at that pace, not at once.
    for (const id of [http, amqp, jet]) {
      await eventually(async () => (await deliveriesOf(t, id)).every((row) => row.status === 'success'), 120_000);
      expect(await deliveriesOf(t, id)).toHaveLength(products);
    }
    const published = async () => new Set(queue.messages.map((m) => String(m.properties.messageId)));
    const sent = (await deliveriesOf(t, amqp)).map((row) => row.id);
    await eventually(async () => {
      const ids = await published();
      return sent.every((id) => ids.has(id));
    }, 10_000);
    expect(await stream.count()).toBe(products);
  }, 240_000);
});
