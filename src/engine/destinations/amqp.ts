import { performance } from 'node:perf_hooks';
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import { DeadlineError, withDeadline } from '../../lib/deadline.js';
import { guardedLookup } from './ssrf.js';
import type { SendRequest, SendResult, Sender } from './sender.js';
import { Connections } from './connections.js';
import { brokerError, brokerHeaders, refusedLiteral, type BrokerOptions } from './message.js';

/** The exchange published to when the endpoint names none: RabbitMQ's topic exchange, so a queue binds `product.*`. */
export const DEFAULT_EXCHANGE = 'amq.topic';

/** A publish waiting for its confirm; `returned` once the broker sent it back as unroutable. */
interface Pending {
  returned: string | null;
}

/** One connection to a broker, with a confirm channel per exchange (a channel error, e.g. a missing exchange, closes only its own). */
interface Broker {
  model: ChannelModel;
  channels: Map<string, Promise<Channel>>;
}

interface Channel {
  channel: ConfirmChannel;
  /** Publishes in flight by message id (the webhook-id), to match a return to its confirm. */
  pending: Map<string, Pending>;
  /** Why the broker closed the channel, once it has. */
  closedBy: string | null;
}

/**
 * Publishes to RabbitMQ (AMQP 0-9-1) on a confirm channel: persistent and mandatory, so a confirm
 * (ack) is a success, and a nack, a return (no queue bound for the routing key) or no confirm in
 * time a failed attempt. The body is the event's bytes, the webhook headers are message headers.
 */
export class AmqpSender implements Sender {
  private readonly brokers: Connections<Broker>;

  constructor(private readonly options: BrokerOptions) {
    this.brokers = new Connections((url, lost) => this.open(url, lost), (broker) => broker.model.close(), options.idleMs, options.timeoutMs);
  }

  async send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const exchange = req.route?.exchange ?? DEFAULT_EXCHANGE;
    const routingKey = req.route?.routingKey ?? req.eventType ?? '';
    const failure = (error: string, timedOut = false): SendResult => ({ ok: false, status: null, headers: null, body: null, timeMs: elapsed(), error, timedOut });
    const refused = this.options.allowPrivateTargets ? null : refusedLiteral(new URL(req.url).hostname);
    if (refused) return failure(refused);

    let channel: Channel;
    try {
      // A channel that does not open in time (a connection gone silent) fails the attempt like a missing confirm.
      channel = await withDeadline(this.channel(req.url, exchange), this.options.timeoutMs, "the broker's channel");
    } catch (error) {
      return failure(brokerError(error), error instanceof DeadlineError);
    }
    const id = req.headers['webhook-id'];
    const pending: Pending = { returned: null };
    channel.pending.set(id, pending);
    return new Promise<SendResult>((resolve) => {
      const timer = setTimeout(() => done(`timeout: no confirm within ${this.options.timeoutMs} ms`, true), this.options.timeoutMs);
      let settled = false;
      const done = (error: string | null, timedOut = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (channel.pending.get(id) === pending) channel.pending.delete(id);
        if (error !== null) return resolve(failure(error, timedOut));
        const body = JSON.stringify({ confirm: 'ack', exchange, routingKey });
        resolve({ ok: true, status: null, headers: null, body, timeMs: elapsed(), error: null, timedOut: false });
      };
      try {
        channel.channel.publish(
          exchange,
          routingKey,
          Buffer.from(req.body),
          {
            persistent: true,
            mandatory: true,
            contentType: req.headers['content-type'],
            messageId: id,
            timestamp: Number(req.headers['webhook-timestamp']),
            type: req.eventType,
            appId: 'svc',
            headers: brokerHeaders(req),
          },
          (error: unknown) => {
            if (error) return done(channel.closedBy ?? 'the broker refused the message (nack)');
            done(pending.returned);
          },
        );
      } catch (error) {
        done(brokerError(error));
      }
    });
  }

  async close(): Promise<void> {
    await this.brokers.closeAll();
  }

  private async channel(url: string, exchange: string): Promise<Channel> {
    const broker = await this.brokers.get(url);
    let channel = broker.channels.get(exchange);
    if (channel === undefined) {
      const opening = this.openChannel(broker);
      broker.channels.set(exchange, opening);
      const forget = () => {
        if (broker.channels.get(exchange) === opening) broker.channels.delete(exchange);
      };
      // A channel the broker closed is forgotten; the next publish to its exchange opens another.
      opening.then((opened) => opened.channel.on('close', forget), forget);
      channel = opening;
    }
    return channel;
  }

  private async openChannel(broker: Broker): Promise<Channel> {
    const channel = await broker.model.createConfirmChannel();
    const opened: Channel = { channel, pending: new Map(), closedBy: null };
    channel.on('return', (message: Message) => {
      const pending = opened.pending.get(String(message.properties.messageId));
      if (pending) {
        const { replyCode, replyText, exchange: to, routingKey } = message.fields as unknown as { replyCode: number; replyText: string; exchange: string; routingKey: string };
        pending.returned = `unroutable: ${replyCode} ${replyText}, no queue is bound to exchange "${to}" for routing key "${routingKey}"`;
      }
    });
    // A channel error (a missing exchange: 404 NOT_FOUND) closes the channel and fails its publishes,
    // whose callbacks amqplib calls with the error; the next publish opens a new channel.
    channel.on('error', (error: Error) => (opened.closedBy = brokerError(error)));
    return opened;
  }

  private async open(url: string, lost: () => void): Promise<Broker> {
    const socket = { timeout: this.options.timeoutMs, noDelay: true, ...(this.options.allowPrivateTargets ? {} : { lookup: guardedLookup }) };
    // Loaded by the first connection: a service without RabbitMQ destinations never pays for it at start.
    const { connect } = await import('amqplib');
    const model = await connect(url, { ...socket, clientProperties: { connection_name: 'svc-webhooks' } });
    const broker: Broker = { model, channels: new Map() };
    model.on('error', () => undefined);
    model.on('close', lost);
    return broker;
  }
}

