import { randomBytes } from 'node:crypto';
import { connect as amqpConnect, type ConsumeMessage } from 'amqplib';
import { AckPolicy, connect as natsConnect, type JsMsg, type NatsConnection } from 'nats';
import { SERVICES } from './service-list.js';

/** A broker's address from its URL (RABBITMQ_URL, NATS_URL; see services.ts for the defaults). */
function address(url: string, defaultPort: number) {
  const parsed = new URL(url);
  const redacted = new URL(url);
  if (redacted.password) redacted.password = '***';
  return {
    host: parsed.hostname,
    port: Number(parsed.port || defaultPort),
    url,
    /** The URL as the API shows it: its password replaced by `***`. */
    redacted: redacted.toString(),
    /** The same URL through a TcpProxy listening on 127.0.0.1:`port`. */
    via(port: number): string {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
  };
}

/** The shared servers of this machine (never stopped by tests: cut a TcpProxy in front of them instead). */
export const RABBITMQ = address(SERVICES.rabbitmq.where(), 5672);
export const NATS = address(SERVICES.nats.where(), 4222);

export const uniqueName = (prefix: string) => `${prefix}-${randomBytes(6).toString('hex')}`;

/** A queue of its own on the shared RabbitMQ, bound to `exchange` with `bindingKey`; deleted by close(). */
export async function amqpQueue(bindingKey: string, exchange = 'amq.topic', args: Record<string, unknown> = {}) {
  const model = await amqpConnect(RABBITMQ.url);
  const channel = await model.createChannel();
  const name = uniqueName('svc-test');
  await channel.assertQueue(name, { durable: false, autoDelete: false, arguments: args });
  await channel.bindQueue(name, exchange, bindingKey);
  const messages: ConsumeMessage[] = [];
  await channel.consume(name, (message) => message && messages.push(message), { noAck: true });
  return {
    name,
    messages,
    async close() {
      await channel.deleteQueue(name);
      await model.close();
    },
  };
}

/** A JetStream stream of its own on the shared NATS server capturing `subjects`; deleted by close(). */
export async function natsStream(subjects: string[], duplicateWindowMs = 120_000) {
  const nc: NatsConnection = await natsConnect({ servers: `${NATS.host}:${NATS.port}` });
  const jsm = await nc.jetstreamManager();
  const name = uniqueName('svc_test').replace(/-/g, '_');
  await jsm.streams.add({ name, subjects, duplicate_window: duplicateWindowMs * 1_000_000 });
  await jsm.consumers.add(name, { durable_name: 'reader', ack_policy: AckPolicy.None });
  const consumer = await nc.jetstream().consumers.get(name, 'reader');
  return {
    name,
    /** How many messages the stream holds. */
    async count(): Promise<number> {
      return (await jsm.streams.info(name)).state.messages;
    },
    /** The next `n` messages, in order. */
    async read(n: number): Promise<JsMsg[]> {
      const out: JsMsg[] = [];
      const batch = await consumer.fetch({ max_messages: n, expires: 2000 });
      for await (const message of batch) out.push(message);
      return out;
    },
    async close() {
      await jsm.streams.delete(name);
      await nc.close();
    },
  };
}
