// Destinations: draining N pending deliveries to an HTTP receiver, to RabbitMQ and to NATS JetStream
// in the same service and the same run, each beside a raw client publishing the same signed messages
// with the same acknowledgements at the same concurrency (undici; amqplib on a confirm channel,
// persistent and mandatory; nats.js JetStream publish awaiting each PubAck).
import { randomBytes } from 'node:crypto';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect, headers as natsHeaders } from 'nats';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { sign } from '../dist/engine/delivery/sign.js';
import { channelSql } from '../dist/db/channels.js';
import { DELIVERY_CHANNEL } from '../dist/engine/delivery/handoff.js';
import { rawUndici, seedDeliveries } from './delivery.mjs';
import { cpuSeconds, median, round, sleep, startReceiver } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

const CONCURRENCY = 64;
const AMQP_URL = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672/';
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';

/** The headers a delivery carries, signed as the service signs them. */
function signed(secret, id, body) {
  const timestamp = Math.floor(Date.now() / 1000);
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign([secret], id, timestamp, body), 'webhook-event-type': 'product.created' };
}

/** Runs `work(row)` over the rows with CONCURRENCY in flight; returns deliveries per second. */
async function inFlight(rows, work) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < rows.length) await work(rows[next++]);
    }),
  );
  return rows.length / ((performance.now() - started) / 1000);
}

/** The raw RabbitMQ client: a confirm channel, each message persistent and mandatory, its confirm awaited. */
async function rawAmqp(secret, rows, routingKey) {
  const model = await amqpConnect(AMQP_URL);
  const channel = await model.createConfirmChannel();
  let returned = 0;
  channel.on('return', () => returned++);
  try {
    const rate = await inFlight(rows, (row) =>
      new Promise((resolve, reject) => {
        const headers = signed(secret, `raw-${row.id}`, row.body);
        channel.publish('amq.topic', routingKey, Buffer.from(row.body), { persistent: true, mandatory: true, contentType: 'application/json', messageId: headers['webhook-id'], headers }, (error) =>
          error ? reject(error) : resolve(),
        );
      }),
    );
    if (returned > 0) throw new Error(`${returned} raw messages returned unroutable`);
    return rate;
  } finally {
    await model.close();
  }
}

/** The raw NATS client: a JetStream publish per message, with Nats-Msg-Id, its PubAck awaited. */
async function rawNats(secret, rows, subject) {
  const nc = await natsConnect({ servers: NATS_URL.replace(/^nats:\/\//, '') });
  const js = nc.jetstream();
  try {
    return await inFlight(rows, async (row) => {
      const headers = natsHeaders();
      const id = `raw-${row.id}`;
      for (const [name, value] of Object.entries(signed(secret, id, row.body))) headers.set(name, value);
      await js.publish(subject, Buffer.from(row.body), { msgID: id, headers });
    });
  } finally {
    await nc.close();
  }
}

/** The brokers' side of the run: a queue bound to the routing key, a stream capturing the subject; removed by close(). */
async function brokers() {
  const tag = randomBytes(4).toString('hex');
  const routingKey = `bench.${tag}.product`;
  const subject = `bench.${tag}.product`;
  const model = await amqpConnect(AMQP_URL);
  const channel = await model.createChannel();
  const queue = `svc-bench-${tag}`;
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, 'amq.topic', routingKey);
  const nc = await natsConnect({ servers: NATS_URL.replace(/^nats:\/\//, '') });
  const jsm = await nc.jetstreamManager();
  const stream = `SVC_BENCH_${tag}`;
  await jsm.streams.add({ name: stream, subjects: [subject] });
  return {
    routingKey,
    subject,
    /** Empties the queue and the stream between measurements. */
    purge: async () => {
      await channel.purgeQueue(queue);
      await jsm.streams.purge(stream);
    },
    close: async () => {
      await channel.deleteQueue(queue).catch(() => {});
      await model.close().catch(() => {});
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
    },
  };
}

export async function destinations(target, seeded, { deliveries: count, rounds }) {
  const receiver = await startReceiver();
  const bus = await brokers();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const make = async (fields) => createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, subscribedEvents: ['product.*'], ...fields }, new Date());
  const endpoints = {
    http: await make({ url: receiver.url }),
    amqp: await make({ url: AMQP_URL, route: { routingKey: bus.routingKey } }),
    nats: await make({ url: NATS_URL, route: { subject: bus.subject } }),
  };
  const raw = {
    http: (secret, rows) => rawUndici(receiver.url, secret, rows).then((r) => r.rate),
    amqp: (secret, rows) => rawAmqp(secret, rows, bus.routingKey),
    nats: (secret, rows) => rawNats(secret, rows, bus.subject),
  };
  const service = await startService(target, { SVC_WORKER_CONCURRENCY: String(CONCURRENCY), SVC_POLL_INTERVAL: '1h' });
  const wake = () => seeded.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'bench')`);
  let from = 1;
  /** Seeds `n` deliveries to the endpoint, then times the service draining them, every outcome recorded. */
  const drain = async (kind, n) => {
    await seeded.db.query('TRUNCATE webhook_deliveries');
    const rows = await seedDeliveries(seeded.db, seeded.workspaceId, endpoints[kind].row.id, from, n);
    from += n;
    await seeded.db.query('ANALYZE webhook_deliveries, events');
    await settle(seeded.db);
    return rows;
  };
  const measure = async () => {
    const cpuBefore = cpuSeconds(service.child.pid);
    const started = performance.now();
    await wake();
    while ((await seeded.db.query(`SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT 1`)).length > 0) await sleep(20);
    const seconds = (performance.now() - started) / 1000;
    const [{ ok }] = await seeded.db.query(`SELECT count(*)::int AS ok FROM webhook_deliveries WHERE status = 'success'`);
    return { seconds, ok, cpuUs: ((cpuSeconds(service.child.pid) - cpuBefore) * 1e6) / ok };
  };
  const results = { http: [], amqp: [], nats: [] };
  try {
    for (const kind of ['http', 'amqp', 'nats']) {
      // Warm-up, not counted: connections opened, code paths compiled, on both sides.
      const warm = await drain(kind, Math.min(count, 2000));
      await raw[kind](endpoints[kind].secret, warm);
      await measure();
    }
    for (let i = 0; i < rounds; i++) {
      for (const kind of ['http', 'amqp', 'nats']) {
        await bus.purge();
        await receiver.reset();
        const rows = await drain(kind, count);
        const ceiling = await raw[kind](endpoints[kind].secret, rows);
        await bus.purge();
        const { seconds, ok, cpuUs } = await measure();
        if (ok !== count) throw new Error(`${kind}: ${ok} of ${count} deliveries succeeded`);
        const rate = count / seconds;
        results[kind].push({ rate, ceiling, ratio: rate / ceiling, cpuUs });
      }
    }
  } finally {
    await service.stop();
    await receiver.stop();
    await bus.close();
  }
  const row = (kind, label, baselineName) => {
    const runs = results[kind];
    const ratio = median(runs.map((r) => r.ratio));
    return {
      name: `Delivery to ${label} (${count.toLocaleString('en')} pending deliveries, concurrency ${CONCURRENCY})`,
      value: round(median(runs.map((r) => r.rate)), 0),
      unit: 'deliveries/s',
      baseline: round(median(runs.map((r) => r.ceiling)), 0),
      baselineName,
      extra: `service CPU per delivery ${round(median(runs.map((r) => r.cpuUs)), 0)} µs${runs.length > 1 ? `; ratios by round ${runs.map((r) => round(r.ratio, 3)).join(', ')}` : ''}`,
      ratio: round(ratio, 3),
      target: '(informative)',
      pass: true,
    };
  };
  return {
    ...row('http', 'an HTTP receiver', 'raw undici Pool, same signed bodies'),
    peakRssMb: service.peakRssMb(),
    more: [
      row('amqp', 'RabbitMQ (confirms, persistent)', 'raw amqplib confirm channel, same messages'),
      row('nats', 'NATS JetStream (PubAck)', 'raw nats.js JetStream publish, same messages'),
    ],
  };
}
